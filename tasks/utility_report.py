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
from sdgov.schema import encode, load_encoded, load_schema
from tasks.common import stage
from tasks.measure import load_agreement

VERSION = "1.0.0"


def compute_utility(agreement_ref: ArtifactRef, schema_ref: ArtifactRef, data_path: str, data_sha256: str,
                    synthetic: ArtifactRef, out: Path) -> ArtifactRef:
    agreement = load_agreement(agreement_ref)
    schema = load_schema(schema_ref.verified())
    if sha256_file(data_path) != data_sha256:
        raise RegistryError("the confidential data changed since it was measured", data_path, "re-run the release")
    real = load_encoded(data_path, schema)
    synth = encode(pd.read_parquet(synthetic.verified()), schema, where=synthetic.path, columns=agreement.attributes)
    summary = utility_summary(real, synth, schema, agreement.attributes, [tuple(c) for c in agreement.cliques])
    write_json(out, summary.model_dump(mode="json"))
    return ArtifactRef.of("utility", out)


@task(name="utility_report", version=VERSION, cache_policy=NO_CACHE)
def utility_report(agreed: Agreed, generated: Generated) -> UtilityReported:
    with stage("utility_report", VERSION) as rec:
        ref = compute_utility(agreed.agreement, agreed.schema_file, agreed.data.path, agreed.data.sha256,
                              generated.synthetic, Path(agreed.run_dir) / "utility.json")
        rec.inputs = [agreed.agreement, generated.synthetic,
                      agreed.data.as_artifact()]
        rec.outputs = [ref]
    return UtilityReported(report=ref, record=rec.record())
