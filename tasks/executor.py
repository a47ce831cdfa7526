"""The audits' :class:`~sdgov.base.executor.Executor` on Prefect: every batch of trials a task run in one process
pool, open for the whole audit stage, so the Prefect UI shows their progress and a failed trial by name.

The workers use the run's own Prefect API: when the flow runs on a temporary server, its address is exported to
them (a worker that found no ``PREFECT_API_URL`` would start a temporary server of its own, ~18 s each).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.base import environment_variable, run_trials

T = TypeVar("T")
VERSION = "1.3.0"  # 1.3: the freed heap handed back after each batch


@task(name="audit-trials", version=VERSION, cache_policy=NO_CACHE)
def audit_trials(fn: Callable[..., Any], calls: list[tuple]) -> list[Any]:
    """A batch of audit trials (decomposability fits, privacy shadow fits or attack classifiers), the heap they
    freed handed back afterwards (:func:`~sdgov.base.executor.run_trials`)."""
    return run_trials(fn, calls)


class PrefectExecutor:
    """Trials in batches of a few (about ``BATCHES_PER_WORKER`` task runs per worker and call): a task run costs a
    few API calls, which one small trial does not outweigh, while a handful per worker still load-balances and
    shows progress in the UI. Task runs are named ``<label>-<first>-<last>`` (the trial indices they cover)."""

    BATCHES_PER_WORKER = 4

    def __init__(self, runner: Any, workers: int) -> None:
        self.runner, self.workers = runner, workers

    def map(self, fn: Callable[..., T], calls: Sequence[tuple], label: str) -> list[T]:
        """Run ``fn(*args)`` for every call as batched task runs and return the results in the order of ``calls``."""
        size = max(1, -(-len(calls) // (self.BATCHES_PER_WORKER * self.workers)))
        batches = [list(calls[i : i + size]) for i in range(0, len(calls), size)]
        futures = [
            self.runner.submit(
                audit_trials.with_options(task_run_name=f"{label}-{i * size}-{i * size + len(batch) - 1}"),
                {"fn": fn, "calls": batch},
            )
            for i, batch in enumerate(batches)
        ]
        return [r for f in futures for r in f.result()]


@contextmanager
def prefect_executors() -> Iterator[Callable[[int], PrefectExecutor]]:
    """``executor_for(workers)`` for the audit stage: one task runner per worker count, opened on first use and
    closed at the end. One worker: task runs in this process (a thread; nothing to spawn, JIT caches warm); more
    (``< 1``: every core): a process pool whose workers reach the run's API."""
    from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner

    with ExitStack() as stack:
        executors: dict[int, PrefectExecutor] = {}

        def executor_for(workers: int) -> PrefectExecutor:
            workers = (os.cpu_count() or 1) if workers < 1 else workers
            if workers not in executors:
                runner: Any
                if workers == 1:
                    runner = stack.enter_context(ThreadPoolTaskRunner(max_workers=1))
                else:
                    stack.enter_context(_run_api_exported())
                    runner = stack.enter_context(ProcessPoolTaskRunner(max_workers=workers))
                executors[workers] = PrefectExecutor(runner, workers)
            return executors[workers]

        yield executor_for


@contextmanager
def _run_api_exported() -> Iterator[None]:
    """``PREFECT_API_URL`` set to the temporary server this process runs on (if it runs on one), then restored."""
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the one temporary server of this process, when the run started one
    if server.server_process is None:
        yield
        return
    with environment_variable("PREFECT_API_URL", server.api_url):
        yield
