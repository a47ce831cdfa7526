"""Release audit: the checks that can be made today that the generator used nothing outside Φ.

These are structural and provenance checks (what the generator was handed, what it fitted, what it wrote).
The black-box decomposability test (:mod:`sdgov.audits.decomposability.test`) and the privacy-risk evidence
(:mod:`sdgov.audits.privacy`) join as further checks through :func:`with_checks` when the spec pre-registers them; when
it does not, the report says plainly that they were not run. A failed blocking check blocks the release.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from sdgov.contracts import ArtifactRef, StageRecord
from sdgov.measure import MeasurementSet
from sdgov.spec import Agreement


class Check(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    passed: bool
    detail: str
    severity: Literal["block", "warn"] = "block"


class AuditReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    verdict: Literal["pass", "fail"]
    checks: list[Check]
    not_run: list[str]


DECOMPOSABILITY_NOT_RUN = (
    "Black-box decomposability test (Houssiau et al. 2022): not run — the spec does not "
    "pre-register it (add an 'audit:' section)."
)
PRIVACY_NOT_RUN = (
    "Privacy-risk evidence (membership/attribute inference, empirical ε lower bound, record checks): "
    "not run — the spec does not pre-register it (add a 'privacy_risk:' section)."
)
NOT_YET_RUN = [DECOMPOSABILITY_NOT_RUN, PRIVACY_NOT_RUN]


def with_checks(report: AuditReport, checks: list[Check], ran: str) -> AuditReport:
    """``report`` plus ``checks`` from a test that ran (``ran`` is its not-run note, now dropped); verdict
    recomputed."""
    merged = list(report.checks) + list(checks)
    blocked = any(not c.passed and c.severity == "block" for c in merged)
    return AuditReport(
        verdict="fail" if blocked else "pass", checks=merged, not_run=[s for s in report.not_run if s != ran]
    )


def run_checks(
    agreement: Agreement,
    agreement_sha256: str,
    mset: MeasurementSet,
    measurements: ArtifactRef,
    generate_record: StageRecord,
    fitted_cliques: list[tuple[str, ...]],
    synthetic_rows: int,
    requested_rows: int,
    schema_error: str | None,
) -> AuditReport:
    phi = {tuple(c) for c in agreement.cliques}
    measured = {tuple(m.clique) for m in mset.measurements}
    checks = [
        Check(
            name="measurements are exactly Φ",
            passed=measured == phi and mset.agreement_sha256 == agreement_sha256,
            detail=f"{len(measured)} measured marginal(s) vs {len(phi)} agreed; measurement made for agreement "
            f"{mset.agreement_sha256[:12]}…",
        ),
        Check(
            name="generator saw only the noisy marginals",
            passed={r.name for r in generate_record.inputs} == {"measurements", "schema"}
            and any(r.sha256 == measurements.sha256 for r in generate_record.inputs),
            detail="generate-stage inputs: "
            + ", ".join(f"{r.name} ({r.sha256[:12]}…)" for r in generate_record.inputs),
        ),
        Check(
            name="model fitted only agreed marginals",
            passed={tuple(c) for c in fitted_cliques} <= phi,
            detail="fitted: " + "; ".join(" × ".join(c) for c in fitted_cliques),
        ),
        Check(
            name="synthetic data fits the declared schema",
            passed=schema_error is None,
            detail=schema_error or "every value is a declared category",
        ),
        Check(
            name="row count as agreed",
            passed=synthetic_rows == requested_rows,
            detail=f"{synthetic_rows:,} rows written, {requested_rows:,} requested",
        ),
        Check(
            name="noise was added",
            passed=mset.noise != "none",
            severity="warn",
            detail="NO NOISE: the statistics were declared public and measured exactly"
            if mset.noise == "none"
            else "discrete Gaussian noise on every marginal",
        ),
    ]
    blocked = any(not c.passed and c.severity == "block" for c in checks)
    return AuditReport(verdict="fail" if blocked else "pass", checks=checks, not_run=NOT_YET_RUN)
