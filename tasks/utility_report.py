"""Stage 5 — utility (controller side): how well the synthetic data answers what the real data answers.

One core call (:func:`sdgov.utility.report.build_report`) on the encoded data the agree stage wrote and the
synthetic records; written as the summary the card shows (``utility.json``) and the full report beside it.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import load_agreement, read_codes, read_schema, read_spec, read_synthetic
from sdgov.contracts import Agreed, ArtifactRef, Generated, UtilityReported
from sdgov.tasks.common import stage
from sdgov.utility.report import FAST, build_report, write_report

VERSION = "1.1.0"  # 1.1: reads the encoded data artifact (codes.parquet) once instead of parsing the CSV twice


@task(name="utility_report", version=VERSION, cache_policy=NO_CACHE)
def utility_report(agreed: Agreed, generated: Generated) -> UtilityReported:
    with stage("utility_report", VERSION) as rec:
        agreement = load_agreement(agreed.agreement)
        schema = read_schema(agreed.schema_file)
        report = build_report(
            read_codes(agreed.codes),
            read_synthetic(generated.synthetic, schema, agreement.attributes),
            schema,
            agreement.attributes,
            agreement.cliques,
            read_spec(agreed.spec).tasks,
            meta={
                "spec_name": agreement.spec_name,
                "agreement_sha256": agreed.agreement_sha256,
                "synthetic_sha256": generated.synthetic.sha256,
            },
            settings=FAST,  # 20 SPECKS seeds on smaller samples: keeps the flow quick
        )
        files = write_report(report, Path(agreed.run_dir))
        rec.inputs = [agreed.agreement, generated.synthetic, agreed.codes, agreed.spec]
        rec.outputs = [
            ArtifactRef.of("utility", files.summary),
            ArtifactRef.of("utility_report", files.json),
            ArtifactRef.of("utility_report_html", files.html),
        ]
    summary, full, html = rec.outputs
    return UtilityReported(report=summary, full_report=full, full_report_html=html, record=rec.record())
