"""The :class:`~sdgov.audits.protocol.AuditContext` of a release candidate, read from the earlier stages' contracts
(every artifact hash-verified as it is read; the confidential data only when a check asks for it)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd

from sdgov.audits.executor import Executor
from sdgov.audits.protocol import AuditContext
from sdgov.contracts import Agreed, Generated, Measured
from sdgov.measure import MeasurementSet
from sdgov.privacy import PrivacyPlan
from sdgov.schema import load_encoded, load_schema
from sdgov.spec import Agreement


def audit_context(
    agreed: Agreed,
    measured: Measured,
    generated: Generated,
    executor_for: Callable[[int], Executor],
    log: Callable[[str], None],
) -> AuditContext:
    schema = load_schema(agreed.schema_file.verified())
    return AuditContext(
        agreement=Agreement.model_validate(json.loads(agreed.agreement.verified().read_text())["agreement"]),
        agreement_sha256=agreed.agreement_sha256,
        schema=schema,
        measurements=MeasurementSet.model_validate_json(measured.measurements.verified().read_bytes()),
        measurements_ref=measured.measurements,
        plan=PrivacyPlan.model_validate_json(measured.privacy_plan.verified().read_bytes()),
        generate_record=generated.record,
        model_info=json.loads(generated.model_info.verified().read_text()),
        synthetic=pd.read_parquet(generated.synthetic.verified()),
        requested_rows=generated.rows,
        read_confidential=lambda: load_encoded(agreed.data.as_artifact().verified(), schema),
        executor_for=executor_for,
        log=log,
    )
