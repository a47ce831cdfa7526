"""Shared by the stage modules: timing + provenance record, and a logger that works inside and outside Prefect."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sdgov.base.errors import disk_full
from sdgov.contracts import Recorder


def logger() -> logging.Logger | logging.LoggerAdapter:
    """The Prefect run logger inside a flow or task run; the ``sdgov`` logger outside one (DVC stage commands)."""
    try:
        from prefect import get_run_logger

        return get_run_logger()
    except Exception:  # outside a flow/task run (DVC stage commands)
        return logging.getLogger("sdgov")


@contextmanager
def stage(name: str, version: str, where: str = "") -> Iterator[Recorder]:
    """Log the stage's start and finish, yielding the ``Recorder`` it fills; a stage that raises logs no finish. A
    full disk is one :class:`~sdgov.base.errors.DiskFull` line naming the file (or ``where``, the stage's folder,
    when the writer does not say), never a traceback."""
    log = logger()
    log.info("stage %s (v%s) started", name, version)
    rec = Recorder(name, version)
    try:
        yield rec
    except Exception as exc:
        full = disk_full(exc, where)
        if full is None:
            raise
        raise full from None
    log.info("stage %s finished in %.1fs", name, rec.elapsed)
