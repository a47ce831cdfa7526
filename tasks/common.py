"""Shared by the stage modules: timing + provenance record, and a logger that works inside and outside Prefect."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sdgov.base.clock import utcnow
from sdgov.contracts import ArtifactRef, StageRecord


def logger() -> logging.Logger | logging.LoggerAdapter:
    """The Prefect run logger inside a flow or task run; the ``sdgov`` logger outside one (DVC stage commands)."""
    try:
        from prefect import get_run_logger

        return get_run_logger()
    except Exception:  # outside a flow/task run (DVC stage commands)
        return logging.getLogger("sdgov")


class Recorder:
    """Collects a stage's inputs/outputs while it runs, then produces its StageRecord."""

    def __init__(self, stage: str, version: str) -> None:
        self.stage, self.version = stage, version
        self.inputs: list[ArtifactRef] = []
        self.outputs: list[ArtifactRef] = []
        self.params: dict[str, Any] = {}
        self.started = utcnow()
        self._t0 = time.perf_counter()

    def record(self) -> StageRecord:
        """The stage's ``StageRecord``: inputs, outputs and params, finished now, with the seconds since it started."""
        return StageRecord(
            stage=self.stage,
            task_version=self.version,
            started=self.started,
            finished=utcnow(),
            seconds=round(time.perf_counter() - self._t0, 3),
            inputs=self.inputs,
            outputs=self.outputs,
            params=self.params,
        )


@contextmanager
def stage(name: str, version: str) -> Iterator[Recorder]:
    """Log the stage's start and finish, yielding the ``Recorder`` it fills; a stage that raises logs no finish."""
    log = logger()
    log.info("stage %s (v%s) started", name, version)
    rec = Recorder(name, version)
    yield rec
    log.info("stage %s finished in %.1fs", name, time.perf_counter() - rec._t0)
