"""The privacy-risk evidence as a check of the release's audit stage (pre-registered in ``privacy_risk:``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel

from sdgov.agreement.sections.privacy_risk import PrivacyRiskSettings
from sdgov.audits.privacy.report import privacy_section
from sdgov.audits.privacy.run import PrivacyAuditResult, agreement_audit_run
from sdgov.audits.protocol import AuditContext, AuditOutcome, Check, CheckGenerator

if TYPE_CHECKING:
    from sdgov.agreement.spec import Agreement

ROW_PREFIX = "privacy: "


class PrivacyRiskAudit:
    name: ClassVar[str] = "privacy_risk"
    section: ClassVar[str | None] = "privacy_risk"
    settings_model: ClassVar[type[BaseModel]] = PrivacyRiskSettings
    not_run: ClassVar[str] = (
        "Privacy-risk evidence (membership/attribute inference, empirical ε lower bound, record checks): "
        "not run — the spec does not pre-register it (add a 'privacy_risk:' section)."
    )
    title: ClassVar[str] = "privacy evidence"
    row_prefix: ClassVar[str | None] = ROW_PREFIX

    def generators(self, settings: PrivacyRiskSettings, agreement: Agreement) -> list[CheckGenerator]:
        """The audited generator as the spec names it (``privacy_risk.generator``)."""
        return [CheckGenerator("privacy_risk.generator", settings.generator, dict(settings.generator_params or {}))]

    def run(self, context: AuditContext, settings: PrivacyRiskSettings) -> AuditOutcome:
        """The privacy-risk audit of the agreement on the confidential sample, its trials on ``n_jobs`` workers and its
        progress logged: the report rows, the result and the card section."""

        def progress(done: int, total: int, what: str) -> None:
            if done == total or done % max(1, total // 10) == 0:
                context.log(f"privacy audit — {what}: {done} / {total}")

        risk = agreement_audit_run(
            context.agreement,
            context.schema,
            context.confidential_sample(
                settings.settings.population_rows, settings.settings.seed, list(context.agreement.attributes)
            ),
            context.plan,
            settings.generator,
            settings.settings,
            settings.policy,
            settings.generator_params,
            progress=progress,
            executor=context.executor_for(settings.settings.n_jobs),
        ).run()
        context.log(
            f"privacy evidence: {risk.verdict} (ε_lower {risk.epsilon_lower}, min PG {risk.min_privacy_gain}, "
            f"{risk.seconds:.1f} s)"
        )
        return AuditOutcome(
            checks=audit_checks(risk), result=json.loads(risk.model_dump_json()), section=privacy_section(risk)
        )


def audit_checks(result: PrivacyAuditResult) -> list[Check]:
    """The policy checks as report rows (fail blocks, warn warns)."""
    return [
        Check(
            name=f"{ROW_PREFIX}{c.name}",
            passed=c.level == "pass",
            detail=c.detail,
            severity="block" if c.level == "fail" else "warn",
        )
        for c in result.checks
    ]
