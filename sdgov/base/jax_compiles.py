"""Count the programs JAX compiles while some code runs: how the audits prove they compile once, not once per fit.

Every call of a jitted function whose shapes this process has not yet seen goes through XLA's backend compiler (or
loads the program from the persistent cache, :mod:`sdgov.base.jaxsetup`); JAX reports each such compile as a
``/jax/core/compile/backend_compile_duration`` event, named after the function. A call that reuses a program this
process already holds reports nothing. So a fit that reports no event compiled nothing: its program was traced and
compiled once, by an earlier fit of the same junction tree, and called again with the new measurements' values as
arguments.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@contextmanager
def compilations() -> Iterator[Counter[str]]:
    """Count backend compilations inside the ``with`` block, by function name (``jit(name)``)."""
    from jax import monitoring

    seen: Counter[str] = Counter()

    def listen(event: str, duration_secs: float, **kwargs: str | int) -> None:
        if event == BACKEND_COMPILE:
            seen[str(kwargs.get("fun_name", "?"))] += 1

    monitoring.register_event_duration_secs_listener(listen)
    try:
        yield seen
    finally:
        monitoring.unregister_event_duration_listener(listen)
