"""Where an audit's independent trials run: one small protocol for the decomposability fits and the privacy trials.

An audit hands its trials to an :class:`Executor` as ``fn`` plus one argument tuple per trial and gets the
results back **in order**. Every trial carries its own seed, so where it runs never changes a result. The core
ships :class:`SerialExecutor` and :class:`ProcessExecutor`; the release's audit stage passes a Prefect-backed one
(``tasks/audit.py``: every batch of trials a task run), which is why nothing here imports the orchestrator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Protocol, TypeVar

T = TypeVar("T")


class Executor(Protocol):
    def map(self, fn: Callable[..., T], calls: Sequence[tuple], label: str) -> list[T]:
        """``[fn(*args) for args in calls]``, wherever it likes; ``label`` names the trials (logs, UI)."""
        ...


def run_trials(fn: Callable[..., T], calls: Sequence[tuple]) -> list[T]:
    """One batch of trials in a worker process, then the heap they freed handed back to the operating system.

    A worker lives for the whole audit stage and sits idle between batches and after its last one, while the
    audit's own process scores what came back. glibc keeps the pages that fits and samples freed (Application 3's
    decomposability fits left ~110 MB of them in each worker), so an idle worker held its high-water mark: at
    census scale the two workers' idle heaps were part of the release's memory peak (issue 37).
    ``malloc_trim(0)`` returns them; where there is no glibc it is skipped."""
    out = [fn(*args) for args in calls]
    _trim_heap()
    return out


def _trim_heap() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` among the process's own symbols, looked up once; None without glibc."""
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None


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
        batches = Parallel(n_jobs=n_jobs, batch_size=1)(delayed(run_trials)(fn, [args]) for args in calls)
        return [r for batch in batches for r in batch]


def executor_for(workers: int) -> Executor:
    """Serial for one worker, else a process pool: what the command line and benchmarks use."""
    return SerialExecutor() if workers == 1 else ProcessExecutor(workers)
