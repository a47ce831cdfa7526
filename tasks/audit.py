"""Stage 4 — audit (controller side): did the generator use only Φ, and what privacy risk remains?

Runs the checks of :data:`sdgov.audits.registry.AUDITS` (structural checks always; the decomposability test and
the privacy-risk evidence when the spec pre-registers them; they alone read the confidential data; for a split
synthesis, once per part: :mod:`sdgov.audits.parts`). Their trials run as Prefect task runs
(``tasks/executor.py``), or on the Dask cluster when the release's engine is Dask (the same bits). A failed
blocking check blocks the release.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import read_spec
from sdgov.audits.context import audit_context
from sdgov.audits.protocol import AuditContext
from sdgov.audits.run import run_audits
from sdgov.base.executor import Executor
from sdgov.base.hashing import write_json
from sdgov.contracts import Agreed, ArtifactRef, Audited, Generated, Measured
from sdgov.engines import cluster_trials
from sdgov.tasks.common import logger, stage
from sdgov.tasks.executor import prefect_executors

VERSION = "1.6.0"  # 1.6: trials on the Dask cluster when the engine is Dask; 1.5: a split's audits per part


@task(name="audit", version=VERSION, cache_policy=NO_CACHE)
def audit(agreed: Agreed, measured: Measured, generated: Generated) -> Audited:
    """Run the agreed audits on the synthetic data → ``Audited``: the verdict, the report and each evidence file.

    The confidential data is recorded as an input only when an audit read it; a failed blocking check blocks release."""
    with stage("audit", VERSION, agreed.run_dir) as rec, _trial_executors(agreed) as executor_for:
        context = audit_context(agreed, measured, generated, executor_for, logger().info)
        report, evidence = run_audits(context)
        run_dir = Path(agreed.run_dir)
        refs = {name: _written(run_dir, name, e) for name, e in evidence.items()}
        report_ref = _written(run_dir, "audit", report.model_dump(mode="json"))
        codes = _synthetic_codes(context)
        data = [agreed.data.as_artifact(), agreed.codes] if context.confidential_was_read else []
        rec.inputs = [agreed.agreement, measured.measurements, generated.synthetic, generated.model_info, *data]
        rec.outputs = [report_ref, *refs.values(), *([codes] if codes else [])]
        rec.params = {"verdict": report.verdict}
    return Audited(report=report_ref, verdict=report.verdict, record=rec.record(), evidence=refs, synthetic_codes=codes)


@contextmanager
def _trial_executors(agreed: Agreed) -> Iterator[Callable[[int], Executor]]:
    """Where the audits' trials run: the Dask cluster when the release's engine is Dask (as the sample's parts do),
    else Prefect task runs, in a process pool for more than one worker (``tasks/executor.py``)."""
    with cluster_trials(read_spec(agreed.spec).engine) as cluster:
        if cluster is not None:
            yield lambda workers: cluster
            return
        with prefect_executors() as executor_for:
            yield executor_for


def _synthetic_codes(context: AuditContext) -> ArtifactRef | None:
    """The synthetic file's cells as the structural check encoded them (checked now if no check did), for the
    utility and card stages; None when the file does not fit the schema."""
    path = context.synthetic_codes_file
    if context.synthetic_problem() is not None or path is None or not path.is_file():
        return None
    return ArtifactRef.of("synthetic_codes", path)


def _written(run_dir: Path, name: str, obj: object) -> ArtifactRef:
    write_json(run_dir / f"{name}.json", obj)
    return ArtifactRef.of(name, run_dir / f"{name}.json")
