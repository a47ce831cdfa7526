"""A run refused inside the flow is one line: Prefect's records of an sdgov refusal are dropped, a bug's are kept."""

from __future__ import annotations

import logging
import sys

from sdgov.base.errors import BudgetError
from sdgov.flows.plumbing.refusals import QuietRefusals, quiet_refusals


def _record(msg: str, exc: BaseException | None = None) -> logging.LogRecord:
    info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord("prefect.task_runs", logging.ERROR, __file__, 1, msg, None, info)


def test_refusals_are_dropped_and_bugs_are_kept() -> None:
    f = QuietRefusals()
    refusal = BudgetError("over the lifetime budget", "budgets.yaml", "raise it")
    assert not f.filter(_record("Encountered exception during execution: %r", refusal))
    assert not f.filter(_record("Finished in state Failed('Task run encountered an exception BudgetError: over')"))
    assert not f.filter(_record("Finished in state Failed('Flow run encountered an exception: SpecError: x')"))
    assert f.filter(_record("Encountered exception during execution", ZeroDivisionError("a bug")))
    assert f.filter(_record("Finished in state Failed('Task run encountered an exception ValueError: a bug')"))
    assert f.filter(_record("stage measure (v1.2.0) started"))


def test_installed_on_prefects_run_loggers(capsys) -> None:
    quiet_refusals()
    quiet_refusals()  # idempotent
    log = logging.getLogger("prefect.task_runs")
    assert sum(isinstance(f, QuietRefusals) for f in log.filters) == 1
    handler = logging.StreamHandler(sys.stderr)
    log.addHandler(handler)
    try:
        try:
            raise BudgetError("over the lifetime budget")
        except BudgetError:
            log.exception("Encountered exception during execution")
    finally:
        log.removeHandler(handler)
    assert "Traceback" not in capsys.readouterr().err
