"""Stage 3 — generate: fit the generator to the noisy marginals, stream synthetic records to Parquet.

Its only input is a :class:`~sdgov.contracts.GenerateInput`: the noisy-marginal artifact, the public schema,
the generator settings, the row count and the public seed. It has no way to name the confidential data.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.contracts import Generated, GenerateInput
from sdgov.generation import generate_synthetic
from sdgov.sampler import CHUNK_ROWS
from sdgov.tasks.common import logger, stage

VERSION = "1.0.0"


@task(name="generate", version=VERSION, cache_policy=NO_CACHE)
def generate(inp: GenerateInput) -> Generated:
    with stage("generate", VERSION) as rec:
        rec.inputs = [inp.measurements, inp.schema_file]
        synthetic, model_info, rows = generate_synthetic(inp, logger().info)
        rec.outputs = [synthetic, model_info]
        rec.params = {"rows": rows, "seed": inp.seed, "chunk_rows": CHUNK_ROWS}
    return Generated(
        synthetic=synthetic, model_info=model_info, rows=rows, seed=inp.seed, chunk_rows=CHUNK_ROWS, record=rec.record()
    )
