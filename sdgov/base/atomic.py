"""Atomic file writes: a reader sees the old file or the whole new one, never half of it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sdgov.base.errors import disk_full


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """A full disk (or quota) while writing ``path`` is one :class:`~sdgov.base.errors.DiskFull` line naming it
    (a write or sync names no file of its own); other errors pass."""
    try:
        yield
    except OSError as exc:
        full = disk_full(exc, str(path))
        if full is not None:
            raise full from None
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
