"""The structural and provenance checks that the generator used nothing outside Φ (what it was handed, what it
fitted, what it wrote). They always run, need no settings and never read the confidential data."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import pyarrow.parquet as pq
from pydantic import BaseModel

from sdgov.audits.protocol import AuditContext, AuditOutcome, Check, CheckGenerator
from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.agreement.spec import Agreement


class NoSettings(Frozen):
    """The structural checks have nothing to pre-register: they always run."""


class StructuralChecks:
    name: ClassVar[str] = "structural"
    section: ClassVar[str | None] = None
    settings_model: ClassVar[type[BaseModel]] = NoSettings
    not_run: ClassVar[str] = ""
    title: ClassVar[str] = "structural"
    row_prefix: ClassVar[str | None] = None

    def generators(self, settings: NoSettings, agreement: Agreement) -> list[CheckGenerator]:
        """None: the structural checks fit no generator."""
        return []  # it fits nothing

    def run(self, context: AuditContext, settings: NoSettings) -> AuditOutcome:
        """The structural rows of :func:`structural_checks`; no evidence section."""
        return AuditOutcome(checks=structural_checks(context))


def structural_checks(context: AuditContext) -> list[Check]:
    """The structural report rows: measurements exactly Φ (per part) for this agreement, generator handed only the noisy
    marginals and schema, fitted only Φ, output fits the schema, row count as requested, noise added (warn). Reads no
    confidential data."""
    agreement, mset, generate_record = context.agreement, context.measurements, context.generate_record
    agreement_sha256, measurements = context.agreement_sha256, context.measurements_ref
    fitted_cliques = [tuple(c) for c in context.model_info.get("fitted_marginals", [])]
    synthetic_rows, requested_rows = pq.ParquetFile(context.synthetic_file).metadata.num_rows, context.requested_rows
    schema_error = context.synthetic_problem()  # validated and encoded once per release (AuditContext)
    phi = {tuple(c) for c in agreement.cliques}
    split = agreement.split
    agreed = (  # (part, marginal): a split's parts each measure their own Φ on their own records
        {(None, tuple(c)) for c in agreement.cliques}
        if split is None
        else {(p.name, tuple(c)) for p in split.parts for c in p.cliques}
    )
    measured = {(m.part, tuple(m.clique)) for m in mset.measurements}
    checks = [
        Check(
            name="measurements are exactly Φ",
            passed=measured == agreed and mset.agreement_sha256 == agreement_sha256,
            detail=f"{len(measured)} measured marginal(s) vs {len(agreed)} agreed; measurement made for agreement "
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
    return checks
