"""Atomic file writes: a reader sees the old file or the whole new one, never half of it."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sdgov.base.errors import SdgovError

FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class NoSpace(SdgovError):
    """A write that found its file system full: one line naming the file, never a traceback."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(
            "no space left on the device (nothing half-written is kept)",
            str(path),
            "free space on that file system, then run again",
        )


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """A full disk (or quota) while writing ``path`` is :class:`NoSpace` naming it; other errors pass."""
    try:
        yield
    except OSError as exc:
        if exc.errno in FULL:
            raise NoSpace(path) from None
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a synced temporary file in the same directory and a rename (parents made as
    needed); the temporary file is removed on failure, a full disk is one line naming ``path``."""
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8, atomically (:func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode())
