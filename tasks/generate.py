"""Stage 3 — generate: fit the generator to the noisy marginals, stream synthetic records to Parquet.

Its only input is a :class:`~sdgov.contracts.GenerateInput`: the noisy-marginal artifact, the public schema,
the generator settings, the row count and the public seed. It has no way to name the confidential data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from prefect import task
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext

from sdgov.base.executor import Executor
from sdgov.contracts import Generated, GenerateInput
from sdgov.generators.sampler import CHUNK_ROWS, PART_CHUNKS
from sdgov.synthesis.generate import generate_synthetic
from sdgov.tasks.common import logger, stage
from sdgov.tasks.executor import prefect_executors

PARALLEL_FROM_PARTS = 8  # below this many parts (~34M rows) spawning a process pool costs more than it saves

VERSION = "1.2.0"  # 1.2: with engine dask the parts run on the Dask cluster (1.1: parts as task runs, one file)


@task(name="generate", version=VERSION, cache_policy=NO_CACHE)
def generate(inp: GenerateInput) -> Generated:
    """Fit the generator to the noisy marginals and write the synthetic Parquet file → ``Generated``.

    Its only input is ``GenerateInput``: it never reads the confidential data."""
    with stage("generate", VERSION, inp.out_dir) as rec:
        rec.inputs = [inp.measurements, inp.schema_file]
        with _executor(inp) as executor:
            synthetic, model_info, rows = generate_synthetic(inp, logger().info, executor, _progress_bar())
        rec.outputs = [synthetic, model_info]
        rec.params = {"rows": rows, "seed": inp.seed, "chunk_rows": CHUNK_ROWS}
    return Generated(
        synthetic=synthetic, model_info=model_info, rows=rows, seed=inp.seed, chunk_rows=CHUNK_ROWS, record=rec.record()
    )


@contextmanager
def _executor(inp: GenerateInput) -> Iterator[Executor]:
    """Where the sample's parts run: on the Dask cluster when the release's engine is Dask; else each part is a
    Prefect task run (progress in the UI), in a process pool from :data:`PARALLEL_FROM_PARTS` parts."""
    if inp.engine == "dask":
        from sdgov.engines.dask_executor import cluster_executor

        with cluster_executor() as executor:
            yield executor
        return
    parts = -(-(inp.rows or 0) // (PART_CHUNKS * CHUNK_ROWS))
    with prefect_executors() as executor_for:
        yield executor_for(0 if parts >= PARALLEL_FROM_PARTS else 1)


def _progress_bar() -> Callable[[int, int], None] | None:
    """The sampling's progress bar in the Prefect UI: a progress artifact on this task run, updated as the parts
    finish. None outside a task run (``sdgov stage generate``, what dvc.yaml calls: no server to report to)."""
    if TaskRunContext.get() is None:
        return None
    bar = create_progress_artifact(0.0, key="synthetic-sampling", description="synthetic rows sampled (%)")

    def update(done: int, total: int) -> None:
        # Prefect's async_dispatch types the call as UUID | Coroutine; called from a sync task it is the UUID
        update_progress_artifact(bar, 100.0 * done / max(total, 1))  # type: ignore[arg-type]

    return update
