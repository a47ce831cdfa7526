"""The :class:`~sdgov.audits.protocol.AuditContext` of a release candidate, read from the earlier stages' contracts
(every artifact hash-verified as it is read; the confidential data — the codes the agree stage encoded once — only
when a check asks for it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from sdgov.artifacts import SYNTHETIC_CODES_FILE, load_agreement, read_codes, read_measurements, read_schema
from sdgov.audits.protocol import AuditContext
from sdgov.base.executor import Executor
from sdgov.budget.accounting import PrivacyPlan
from sdgov.contracts import Agreed, Generated, Measured


def audit_context(
    agreed: Agreed,
    measured: Measured,
    generated: Generated,
    executor_for: Callable[[int], Executor],
    log: Callable[[str], None],
) -> AuditContext:
    """The audit stage's context from the earlier stages' hand-overs, every artifact hash-verified; the encoded
    confidential data (the agree stage's copy) is read only when a check asks. The synthetic file's cells, validated
    and encoded once by the structural check, are kept in the run directory (:data:`SYNTHETIC_CODES_FILE`)."""
    return AuditContext(
        agreement=load_agreement(agreed.agreement),
        agreement_sha256=agreed.agreement_sha256,
        schema=read_schema(agreed.schema_file),
        measurements=read_measurements(measured.measurements),
        measurements_ref=measured.measurements,
        plan=PrivacyPlan.model_validate_json(measured.privacy_plan.verified().read_bytes()),
        generate_record=generated.record,
        model_info=json.loads(generated.model_info.verified().read_text()),
        synthetic_file=generated.synthetic.verified(),
        requested_rows=generated.rows,
        read_confidential=lambda: read_codes(agreed.codes),  # encoded once by the agree stage
        confidential_file=agreed.codes.verified(),
        synthetic_codes_file=Path(agreed.run_dir) / SYNTHETIC_CODES_FILE,  # kept for the utility and card stages
        executor_for=executor_for,
        log=log,
    )
