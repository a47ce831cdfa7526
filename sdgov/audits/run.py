"""Run the registered audit checks on one release candidate: the report, and each check's evidence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdgov.audits import registry
from sdgov.audits.parts import combine_parts, part_contexts
from sdgov.audits.protocol import AuditCheck, AuditContext, AuditOutcome, AuditReport, Check, settings_of


def run_audits(
    context: AuditContext, audits: tuple[AuditCheck, ...] | None = None
) -> tuple[AuditReport, dict[str, dict[str, Any]]]:
    """Every check the agreement pre-registers (or that always runs), in order → the report (a failed blocking check
    fails it; the checks not pre-registered are named in ``not_run``) and ``{name: {"result", "section"}}``; a split
    synthesis's pre-registered checks run per part (:func:`run_check`).
    ``audits``: the registry's :data:`~sdgov.audits.registry.AUDITS` unless given."""
    if audits is None:
        audits = registry.AUDITS
    checks: list[Check] = []
    not_run: list[str] = []
    confidential: list[str] = []
    evidence: dict[str, dict[str, Any]] = {}
    with part_contexts(context) as parts:
        for audit in audits:
            settings = settings_of(audit, context.agreement)
            if settings is None:
                not_run.append(audit.not_run)
                continue
            outcome = run_check(audit, context, settings, parts)
            checks += outcome.checks
            if audit.section is not None:  # pre-registered: it reads the confidential data
                confidential += [c.name for c in outcome.checks]
            if outcome.section is not None:
                evidence[audit.name] = {"result": outcome.result, "section": outcome.section}
    blocked = any(not c.passed and c.severity == "block" for c in checks)
    report = AuditReport(
        verdict="fail" if blocked else "pass", checks=checks, not_run=not_run, confidential=confidential
    )
    return report, evidence


def run_check(
    audit: AuditCheck, context: AuditContext, settings: Any, parts: Callable[[], dict[str, AuditContext]]
) -> AuditOutcome:
    """One check's outcome. A pre-registered check of a split synthesis runs once per part, on that part's model,
    plan and records (``parts``: their contexts, :func:`sdgov.audits.parts.part_contexts`), its outcomes combined;
    a check that always runs (the structural checks) tests the released file as a whole."""
    split = context.agreement.split
    if split is None or audit.section is None:
        return audit.run(context, settings)
    return combine_parts(split.attribute, {name: audit.run(part, settings) for name, part in parts().items()})
