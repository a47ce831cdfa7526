"""Run the registered audit checks on one release candidate: the report, and each check's evidence."""

from __future__ import annotations

from typing import Any

from sdgov.audits import registry
from sdgov.audits.protocol import AuditCheck, AuditContext, AuditReport, Check, settings_of


def run_audits(
    context: AuditContext, audits: tuple[AuditCheck, ...] | None = None
) -> tuple[AuditReport, dict[str, dict[str, Any]]]:
    """Every check the agreement pre-registers (or that always runs), in order → the report (a failed blocking check
    fails it; the checks not pre-registered are named in ``not_run``) and ``{name: {"result", "section"}}``.
    ``audits``: the registry's :data:`~sdgov.audits.registry.AUDITS` unless given."""
    if audits is None:
        audits = registry.AUDITS
    checks: list[Check] = []
    not_run: list[str] = []
    confidential: list[str] = []
    evidence: dict[str, dict[str, Any]] = {}
    for audit in audits:
        settings = settings_of(audit, context.agreement)
        if settings is None:
            not_run.append(audit.not_run)
            continue
        outcome = audit.run(context, settings)
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
