"""A refused run is one line: Prefect's tracebacks for an sdgov refusal raised inside a flow are dropped."""

from __future__ import annotations

import logging
import re


class QuietRefusals(logging.Filter):
    """Drop Prefect's log records about a run that sdgov *refused* (an :class:`SdgovError` raised in a task or
    the flow: a concurrent run over budget, a changed dataset): the CLI prints that refusal as its one
    ``sdgov: error:`` line, and Prefect's ~70 lines of traceback for it would read like a crash. Bugs (any
    other exception) keep their tracebacks."""

    _FAILED = re.compile(r"encountered an exception:? (\w+)")

    def filter(self, record: logging.LogRecord) -> bool:
        """False for a record about an sdgov refusal (an ``SdgovError`` attached, or named in Prefect's 'encountered an
        exception' line); every other record passes."""
        from sdgov.base.errors import SdgovError

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, SdgovError):
            return False
        m = self._FAILED.search(record.getMessage())
        return not (m and m.group(1) in _refusal_names(SdgovError))


def _refusal_names(cls: type[Exception]) -> set[str]:
    names = {cls.__name__}
    for sub in cls.__subclasses__():
        names |= _refusal_names(sub)
    return names


def quiet_refusals() -> None:
    """Install :class:`QuietRefusals` on the loggers Prefect reports task and flow failures with."""
    for name in ("prefect.task_runs", "prefect.flow_runs", "prefect.task_engine", "prefect.flow_engine"):
        log = logging.getLogger(name)
        if not any(isinstance(f, QuietRefusals) for f in log.filters):
            log.addFilter(QuietRefusals())
