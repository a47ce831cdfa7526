"""Stage 5 — utility (controller side): how well the synthetic data answers what the real data answers.

One core call (:func:`sdgov.utility.report.build_report`) on the encoded data the agree stage wrote and the
synthetic records, both read as record sets (exact tables counted out of core, models on a bounded sample: any N);
written as the summary the card shows (``utility.json``) and the full report beside it.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import confidential_records, load_agreement, read_schema, read_spec, synthetic_records
from sdgov.contracts import Agreed, ArtifactRef, Audited, Generated, UtilityReported
from sdgov.tasks.common import stage
from sdgov.utility.report import FAST, build_report, write_report

VERSION = "1.4.0"  # 1.4: a split's parts too; 1.3: the synthetic cells the audit stage encoded


@task(name="utility_report", version=VERSION, cache_policy=NO_CACHE)
def utility_report(agreed: Agreed, generated: Generated, audited: Audited) -> UtilityReported:
    """Build the utility report on samples of the encoded real data and the synthetic data → ``UtilityReported``.

    The synthetic records are the cells the audit stage validated and encoded (``audited.synthetic_codes``,
    hash-verified), not encoded again. Writes the card's summary (``utility.json``) and the full report (JSON and
    HTML) in the run directory."""
    with stage("utility_report", VERSION, agreed.run_dir) as rec:
        agreement = load_agreement(agreed.agreement)
        schema = read_schema(agreed.schema_file)
        attrs, rows, seed = agreement.attributes, FAST.sample_rows, FAST.seed
        codes = audited.synthetic_codes
        with synthetic_records(generated.synthetic, schema, attrs, rows, seed, codes) as synthetic:
            report = build_report(
                confidential_records(agreed.codes, schema, attrs, rows, seed),
                synthetic,
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
                by_part=agreement.split,  # a split synthesis: each part against its own records too
            )
        files = write_report(report, Path(agreed.run_dir))
        rec.inputs = [agreed.agreement, generated.synthetic, *([codes] if codes else []), agreed.codes, agreed.spec]
        rec.outputs = [
            ArtifactRef.of("utility", files.summary),
            ArtifactRef.of("utility_report", files.json),
            ArtifactRef.of("utility_report_html", files.html),
        ]
    summary, full, html = rec.outputs
    return UtilityReported(report=summary, full_report=full, full_report_html=html, record=rec.record())
