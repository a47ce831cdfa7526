"""Stage 5 — utility summary (controller side): error of every Φ marginal and of all 1- and 2-way tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.contracts import Agreed, ArtifactRef, Generated, UtilityReported
from sdgov.errors import RegistryError
from sdgov.hashing import sha256_file, write_json
from sdgov.metrics import utility_summary
from sdgov.schema import Schema, encode, load_encoded, load_schema
from sdgov.spec import Agreement
from sdgov.tasks.common import stage
from sdgov.tasks.measure import load_agreement

VERSION = "1.0.0"


def compute_utility(
    agreement: Agreement, schema: Schema, data_path: str, data_sha256: str, synthetic: ArtifactRef, out: Path
) -> ArtifactRef:
    """The utility summary; shared by the task and the ``sdgov stage utility`` command used by DVC."""
    if sha256_file(data_path) != data_sha256:
        raise RegistryError("the confidential data changed since it was measured", data_path, "re-run the release")
    real = load_encoded(data_path, schema)
    synth = encode(pd.read_parquet(synthetic.verified()), schema, where=synthetic.path, columns=agreement.attributes)
    summary = utility_summary(real, synth, schema, agreement.attributes, [tuple(c) for c in agreement.cliques])
    write_json(out, summary.model_dump(mode="json"))
    return ArtifactRef.of("utility", out)


def compute_full_report(
    agreement: Agreement, schema: Schema, spec_file: str | Path, data_path: str, synthetic: ArtifactRef, out_dir: Path
) -> tuple[ArtifactRef, ArtifactRef]:
    """The full utility report (sdgov.utility): generic measures, the spec's declared tasks, baselines, plots.

    Written beside the summary as ``utility_report.json`` and ``utility_report.html``; the summary file and its
    contract are unchanged.
    """
    from sdgov.errors import SpecError
    from sdgov.loading import load_model_file
    from sdgov.spec import ReleaseSpec
    from sdgov.utility.report import FAST, build_report, write_report

    spec = load_model_file(ReleaseSpec, Path(spec_file), SpecError, "release spec")
    real = load_encoded(data_path, schema)
    synth = encode(pd.read_parquet(synthetic.verified()), schema, where=synthetic.path, columns=agreement.attributes)
    meta = {
        "spec_name": agreement.spec_name,
        "agreement_sha256": agreement.sha256(),
        "synthetic_sha256": synthetic.sha256,
    }
    report = build_report(
        real,
        synth,
        schema,
        agreement.attributes,
        [tuple(c) for c in agreement.cliques],
        spec.tasks,
        meta=meta,
        settings=FAST,
    )  # FAST: 20 SPECKS seeds on smaller samples, keeps the flow quick
    j, h = write_report(report, out_dir)
    return ArtifactRef.of("utility_report", j), ArtifactRef.of("utility_report_html", h)


@task(name="utility_report", version=VERSION, cache_policy=NO_CACHE)
def utility_report(agreed: Agreed, generated: Generated) -> UtilityReported:
    with stage("utility_report", VERSION) as rec:
        ref = compute_utility(
            load_agreement(agreed.agreement),
            load_schema(agreed.schema_file.verified()),
            agreed.data.path,
            agreed.data.sha256,
            generated.synthetic,
            Path(agreed.run_dir) / "utility.json",
        )
        full, full_html = compute_full_report(
            load_agreement(agreed.agreement),
            load_schema(agreed.schema_file.verified()),
            agreed.spec.verified(),
            agreed.data.path,
            generated.synthetic,
            Path(agreed.run_dir),
        )
        rec.inputs = [agreed.agreement, generated.synthetic, agreed.data.as_artifact(), agreed.spec]
        rec.outputs = [ref, full, full_html]
    return UtilityReported(report=ref, full_report=full, full_report_html=full_html, record=rec.record())
