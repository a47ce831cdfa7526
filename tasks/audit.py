"""Stage 4 — audit (controller side): did the generator use only Φ? A failed audit blocks the release."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.audit import run_checks
from sdgov.contracts import Agreed, ArtifactRef, Audited, Generated, Measured
from sdgov.errors import DataError
from sdgov.hashing import write_json
from sdgov.schema import encode, load_schema
from tasks.common import stage
from tasks.measure import load_agreement, read_measurements

VERSION = "1.0.0"


@task(name="audit", version=VERSION, cache_policy=NO_CACHE)
def audit(agreed: Agreed, measured: Measured, generated: Generated) -> Audited:
    with stage("audit", VERSION) as rec:
        agreement = load_agreement(agreed.agreement)
        mset = read_measurements(measured.measurements)
        schema = load_schema(agreed.schema_file.verified())
        info = json.loads(generated.model_info.verified().read_text())
        synth = pd.read_parquet(generated.synthetic.verified())
        try:
            encode(synth, schema, where="synthetic.parquet", columns=agreement.attributes)
            schema_error = None
        except DataError as exc:
            schema_error = exc.one_line()
        report = run_checks(agreement, agreed.agreement_sha256, mset, measured.measurements, generated.record,
                            [tuple(c) for c in info.get("fitted_marginals", [])], len(synth), generated.rows, schema_error)
        decomposability_out = None
        if agreement.audit is not None and agreement.audit.enabled:  # pre-registered in the spec; off by default
            from sdgov.decomposability_report import decomposability_section, merge_into_report, run_release_audit

            result = run_release_audit(agreement, agreed.data.path, schema)
            report = merge_into_report(report, result)
            decomposability_out = Path(agreed.run_dir) / "decomposability.json"
            write_json(decomposability_out, {"result": result.model_dump(mode="json"),
                                             "section": decomposability_section(result)})
        out = Path(agreed.run_dir) / "audit.json"
        write_json(out, report.model_dump(mode="json"))
        rec.inputs = [agreed.agreement, measured.measurements, generated.synthetic, generated.model_info]
        rec.outputs = [ArtifactRef.of("audit", out)]
        if decomposability_out is not None:
            rec.outputs.append(ArtifactRef.of("decomposability", decomposability_out))
        rec.params = {"verdict": report.verdict}
    return Audited(report=rec.outputs[0], verdict=report.verdict, record=rec.record())
