"""The one clock every record is stamped with: UTC, to the second, ISO 8601 with a ``Z``.

It lives at the bottom of the house because the hash-chained log, checkpoints, the controller's files and the
stage records all stamp times; none of them should depend on the stage contracts to do so.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["utcnow"]


def utcnow() -> str:
    """Now, in UTC, as ``2026-11-25T21:51:19Z`` (seconds; the form every log line and record uses)."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
