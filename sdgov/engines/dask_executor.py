"""The synthetic sample's parts, and the audits' trials, on the Dask cluster when the release's engine is Dask.

The generate stage writes a large sample as independent parts (:func:`sdgov.generators.sampler.write_part`: each
depends on
the model, the seed and its chunk numbers only, so where it runs cannot change a byte). With ``engine: dask`` the
parts go to the same cluster the engine counts on — ``SDGOV_DASK_SCHEDULER``, or a local cluster of 2 worker
processes for the call (:mod:`sdgov.engines.dask_engine`) — instead of the stage's own process pool. On a real
cluster the workers write the parts into the run directory, so it must be on a filesystem they all mount; the
generate stage then streams them into the one released file, as it does for the process pool. The audits' trials
(every shadow fit and attack classifier of the privacy-risk audit, every decomposability fit) go to the same cluster
(:func:`cluster_trials`): each carries its own seed, so a trial's bits do not depend on the worker that ran it, and
the audit's result is the serial run's (``tests/unit/audits/test_privacy_dask.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from sdgov.engines.dask_engine import _client

if TYPE_CHECKING:
    from distributed import Client

T = TypeVar("T")


class DaskExecutor:
    """An :class:`~sdgov.base.executor.Executor` on a Dask client: one task per call, results in call order.
    ``workers`` is the cluster's thread count, so the sampler hands it that many parts at a time (memory: one
    part per worker)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.workers = max(1, sum(client.nthreads().values()))

    def map(self, fn: Callable[..., T], calls: Sequence[tuple], label: str) -> list[T]:
        """One Dask task per call (a unique key each: never taken from a cache), gathered in the order of ``calls``."""
        futures = [
            self.client.submit(_call, fn, args, key=f"{label}-{i}-{_token()}", pure=False)
            for i, args in enumerate(calls)
        ]
        results: list[T] = self.client.gather(futures)
        return results


def _call(fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    return fn(*args)


def _token() -> str:
    import uuid

    return uuid.uuid4().hex[:8]


@contextmanager
def cluster_executor() -> Iterator[DaskExecutor]:
    """A :class:`DaskExecutor` on the configured cluster (or a local one), for the length of the block."""
    with _client() as client:
        yield DaskExecutor(client)


@contextmanager
def cluster_trials(engine: str) -> Iterator[DaskExecutor | None]:
    """Where a release's independent trials run: on the Dask cluster when its engine is Dask (the audits' fits and
    attack classifiers, like the sample's parts: every trial carries its own seed, so the cluster gives the serial
    run's bits), else None — the caller's own executor."""
    if engine != "dask":
        yield None
        return
    with cluster_executor() as executor:
        yield executor
