"""Stage 3 — generate: fit the generator to the noisy marginals, stream synthetic records to Parquet.

Its only input is a :class:`~sdgov.contracts.GenerateInput`: the noisy-marginal artifact, the public schema,
the generator settings, the row count and the public seed. It has no way to name the confidential data.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import read_measurements, read_schema
from sdgov.contracts import ArtifactRef, Generated, GenerateInput
from sdgov.generators.registry import generator
from sdgov.hashing import write_json
from sdgov.sampler import CHUNK_ROWS, sample_to_parquet
from sdgov.tasks.common import logger, stage

VERSION = "1.0.0"


@task(name="generate", version=VERSION, cache_policy=NO_CACHE)
def generate(inp: GenerateInput) -> Generated:
    log = logger()
    with stage("generate", VERSION) as rec:
        mset = read_measurements(inp.measurements)
        schema = read_schema(inp.schema_file)
        rec.inputs = [inp.measurements, inp.schema_file]
        model = generator(inp.generator.name).fit(mset, inp.generator)
        rows = inp.rows if inp.rows is not None else max(1, round(mset.noisy_total()))
        out = Path(inp.out_dir)
        step = max(1, rows // CHUNK_ROWS // 10) * CHUNK_ROWS

        def progress(done: int, total: int) -> None:
            if done % step == 0 or done == total:
                log.info("sampled %d / %d rows (%.0f%%)", done, total, 100 * done / total)

        sample_to_parquet(model, schema, rows, inp.seed, out / "synthetic.parquet", progress=progress)
        write_json(
            out / "model_info.json",
            {
                "generator": inp.generator.name,
                "implementation": generator(inp.generator.name).implementation(),
                "parameters": inp.generator.model_dump(),
                **model.fit_info,
            },
        )
        rec.outputs = [
            ArtifactRef.of("synthetic", out / "synthetic.parquet"),
            ArtifactRef.of("model_info", out / "model_info.json"),
        ]
        rec.params = {"rows": rows, "seed": inp.seed, "chunk_rows": CHUNK_ROWS}
    return Generated(
        synthetic=rec.outputs[0],
        model_info=rec.outputs[1],
        rows=rows,
        seed=inp.seed,
        chunk_rows=CHUNK_ROWS,
        record=rec.record(),
    )
