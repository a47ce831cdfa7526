"""The release's one overall verdict — pass, pass with N warnings, or fail — by one rule from every check.

Every row of the audit report counts once: a failed blocking check fails the release, a failed warning check is a
warning. An audit section (decomposability, privacy evidence) that reports a verdict of its own counts too, so the
card can never show a green banner above a section that says WARN or FAIL: a section's "warn" with no failed
warning row of its own adds one warning, its "fail" with no failed blocking row fails the release. The card shows
this verdict first, with the warnings listed by name; nothing else on the card states a verdict. A split synthesis's
pre-registered audits also give each part a verdict of its own (:func:`part_verdicts`), for the controller's
evidence report.
"""

from __future__ import annotations

from typing import Any, Literal

from sdgov.audits import registry
from sdgov.audits.protocol import AuditReport
from sdgov.base.model import Frozen


def row_prefix(section: str) -> str | None:
    """The start of the names of the audit rows the check's own section verdict is made of (its ``row_prefix``), so
    they are not counted twice; ``None`` when the section's verdict always counts."""
    return next((a.row_prefix for a in registry.AUDITS if a.name == section), None)


def section_title(section: str) -> str:
    """How the card names a check's section that gives no title of its own: the check's ``title``."""
    return next((a.title for a in registry.AUDITS if a.name == section), section.replace("_", " "))


class Verdict(Frozen):
    result: Literal["pass", "fail"]
    warnings: list[str]  # the names of the checks that warned
    failures: list[str]  # the names of the checks that failed (any one fails the release)

    @property
    def label(self) -> str:
        """``pass``, ``pass with 2 warnings`` or ``fail``: how the card states it."""
        if self.result == "fail":
            return "fail"
        n = len(self.warnings)
        return "pass" if n == 0 else f"pass with {n} warning{'s' if n != 1 else ''}"


def overall_verdict(audit: AuditReport, sections: dict[str, dict[str, Any]] | None = None) -> Verdict:
    """The one verdict of a release from its audit rows and its audit sections' own verdicts."""
    failures = [c.name for c in audit.checks if not c.passed and c.severity == "block"]
    warnings = [c.name for c in audit.checks if not c.passed and c.severity == "warn"]
    if audit.verdict == "fail" and not failures:  # the audit stage's own verdict always counts
        failures.append("audit")
    for name, section in (sections or {}).items():
        level = section.get("verdict")
        prefix = row_prefix(name)
        own = [c for c in audit.checks if prefix and c.name.startswith(prefix)]
        title = section.get("title") or section_title(name)
        if level == "fail" and not any(not c.passed and c.severity == "block" for c in own):
            failures.append(title)
        elif level == "warn" and not any(not c.passed for c in own):
            warnings.append(title)
    return Verdict(result="fail" if failures else "pass", warnings=warnings, failures=failures)


def part_verdicts(audit: AuditReport, sections: dict[str, dict[str, Any]] | None = None) -> dict[str, Verdict]:
    """A split synthesis: each part's verdict by the same rule as :func:`overall_verdict`, from the rows that tested
    that part and each audit section's own verdict for it (empty for a release that is not split). The release's
    verdict is separate and fails if any part fails: every part's rows and section verdicts count in it too."""
    names = list(dict.fromkeys(c.part for c in audit.checks if c.part is not None))
    for section in (sections or {}).values():
        names += [p for p in section.get("parts", {}) if p not in names]
    out: dict[str, Verdict] = {}
    for part in names:
        own = audit.model_copy(update={"checks": [c for c in audit.checks if c.part == part], "verdict": "pass"})
        parts = {name: s["parts"][part] for name, s in (sections or {}).items() if part in s.get("parts", {})}
        out[part] = overall_verdict(own, parts)
    return out
