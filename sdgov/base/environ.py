"""One environment variable set for the length of a block and restored after it, however the block ends."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def environment_variable(name: str, value: str) -> Iterator[None]:
    """``os.environ[name] = value`` inside the block (what child processes started there inherit); afterwards the
    previous value, or no variable when there was none."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old
