"""Where an audit's independent trials run: one small protocol for the decomposability fits and the privacy trials.

An audit hands its trials to an :class:`Executor` as ``fn`` plus one argument tuple per trial and gets the
results back **in order**. Every trial carries its own seed, so where it runs never changes a result. The core
ships :class:`SerialExecutor` and :class:`ProcessExecutor`; the release's audit stage passes a Prefect-backed one
(``tasks/audit.py``: every batch of trials a task run), which is why nothing here imports the orchestrator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Executor(Protocol):
    def map(self, fn: Callable[..., T], calls: Sequence[tuple], label: str) -> list[T]:
        """``[fn(*args) for args in calls]``, wherever it likes; ``label`` names the trials (logs, UI)."""
        ...


class SerialExecutor:
    """Every trial in this process (the default, and the only choice for a generator object that cannot be
    re-imported by its path in a worker)."""

    def map(self, fn: Callable[..., T], calls: Sequence[tuple], label: str) -> list[T]:
        """Each call in turn, in this process; results in the order of ``calls``."""
        return [fn(*args) for args in calls]


class ProcessExecutor:
    """Trials in ``workers`` worker processes (joblib's loky: spawned, never forked — JAX is not fork-safe — and
    kept warm between calls); ``workers < 1`` means every core."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def map(self, fn: Callable[..., T], calls: Sequence[tuple], label: str) -> list[T]:
        """The calls spread over the worker processes, one at a time each; results in the order of ``calls``."""
        from joblib import Parallel, delayed

        n_jobs = -1 if self.workers < 1 else self.workers
        results: list[Any] = Parallel(n_jobs=n_jobs, batch_size=1)(delayed(fn)(*args) for args in calls)
        return results


def executor_for(workers: int) -> Executor:
    """Serial for one worker, else a process pool: what the command line and benchmarks use."""
    return SerialExecutor() if workers == 1 else ProcessExecutor(workers)
