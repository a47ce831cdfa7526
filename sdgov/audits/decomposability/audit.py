"""The decomposability test as a check of the release's audit stage (pre-registered in the spec's ``audit:``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel

from sdgov.agreement.sections.decomposability import DecomposabilitySettings
from sdgov.audits.decomposability.procedure import DecomposabilityResult, run_decomposability
from sdgov.audits.decomposability.report import decomposability_section
from sdgov.audits.generator_protocol import NotTestable
from sdgov.audits.generators import honest_variant
from sdgov.audits.protocol import AuditContext, AuditOutcome, Check, CheckGenerator

if TYPE_CHECKING:
    from sdgov.agreement.spec import Agreement

TEST_ROW = "decomposability test (black-box, Houssiau et al. 2022)"


class DecomposabilityAudit:
    name: ClassVar[str] = "decomposability"
    section: ClassVar[str | None] = "audit"
    settings_model: ClassVar[type[BaseModel]] = DecomposabilitySettings
    not_run: ClassVar[str] = (
        "Black-box decomposability test (Houssiau et al. 2022): not run — the spec does not "
        "pre-register it (add an 'audit:' section)."
    )
    title: ClassVar[str] = "decomposability"
    row_prefix: ClassVar[str | None] = None  # its section's own verdict always counts (see sdgov.reporting.verdict)

    def generators(self, settings: DecomposabilitySettings, agreement: Agreement) -> list[CheckGenerator]:
        """The generator under test and the positive control, as the spec names them."""
        return [
            CheckGenerator("audit.generator", settings.generator, dict(settings.generator_params)),
            CheckGenerator("audit.positive_control", settings.positive_control, dict(settings.control_params)),
        ]

    def run(self, context: AuditContext, settings: DecomposabilitySettings) -> AuditOutcome:
        """The pre-registered decomposability test on the confidential sample, of the spec's generator or else the
        release's own honest variant at its iterations: the report rows, the result and the card section."""
        agreement, schema = context.agreement, context.schema
        generator = settings.generator or honest_variant(agreement.generator.name)
        if not settings.generator and not settings.generator_params:  # the release's own iterations
            settings = settings.model_copy(update={"generator_params": {"iterations": agreement.generator.iterations}})
        fits = 4 * settings.K * (2 if settings.positive_control else 1)
        context.log(f"decomposability test: {fits} fits of {generator}…")
        domain = schema.domain(agreement.attributes)
        labels = {c: schema.by_name[c].labels() for c in agreement.attributes}
        codes = context.confidential_sample(settings.population_rows, settings.seed, list(agreement.attributes))
        cliques = [tuple(c) for c in agreement.cliques]
        # the fits are independent: every core; memoised fits in this process (one task run per batch either way)
        executor, in_process = context.executor_for(0), context.executor_for(1)
        try:
            result = run_decomposability(
                codes, cliques, domain, generator, settings, labels, executor=executor, in_process=in_process
            )
        except NotTestable as exc:  # e.g. a split part whose Φ fixes its whole table: a warning, not a verdict
            context.log(f"decomposability test: not testable — {exc.what}")
            return AuditOutcome(checks=[not_testable_check(exc)])
        context.log(f"decomposability test: {result.verdict} (p = {result.p_value:.3g}, {result.seconds:.1f} s)")
        return AuditOutcome(
            checks=audit_checks(result),
            result=result.model_dump(mode="json"),
            section=decomposability_section(result),
        )


def not_testable_check(exc: NotTestable) -> Check:
    """The row of a test the data and Φ left nothing to test in: shown as a warning (neither pass nor fail), so that
    a split synthesis's other parts keep their verdicts (the command line says "not testable" likewise)."""
    return Check(
        name=TEST_ROW,
        passed=False,
        severity="warn",
        detail=f"not testable: {exc.what}" + (f" ({exc.fix})" if exc.fix else ""),
    )


def audit_checks(result: DecomposabilityResult) -> list[Check]:
    """The test as report rows: a blocking check, plus a warning when the positive control was not caught."""
    checks = [
        Check(
            name=TEST_ROW,
            passed=result.verdict == "pass",
            detail=f"{result.generator}: p = {result.p_value:.3g} at α = {result.alpha}, K = {result.K}, "
            f"{result.rows:,} rows per fit, effect size {result.effect_size:.2f}, {result.seconds:.1f} s",
        )
    ]
    if result.control is not None:
        c = result.control
        checks.append(
            Check(
                name="positive control caught",
                passed=c.caught,
                severity="warn",
                detail=f"{c.generator}: p = {c.p_value:.3g}" + ("" if c.caught else " — the test may be underpowered"),
            )
        )
    return checks
