"""Content hashes: sha256 of files and of canonical JSON.

Canonical JSON (sorted keys, no whitespace, UTF-8) makes the hash of a pydantic model independent of field
order and formatting, so an agreement hashes the same wherever it is computed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

_CHUNK = 1 << 20


def canonical_json(obj: Any) -> bytes:
    """``obj`` as canonical JSON bytes (sorted keys, no whitespace, UTF-8); NaN and infinity are refused
    (ValueError)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_json(obj: Any) -> str:
    """Hex SHA-256 of ``obj``'s canonical JSON: the same for the same data, whatever its key order or formatting."""
    return sha256_bytes(canonical_json(obj))


def _file_digest(path: Path, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks (constant memory at any size)."""
    return _file_digest(Path(path), "sha256")


def md5_file(path: str | Path) -> str:
    """DVC 3's content hash of a single file (what ``dvc.lock`` records as ``md5``)."""
    return _file_digest(Path(path), "md5")


def write_json(path: str | Path, obj: Any) -> str:
    """Write pretty, key-sorted JSON atomically; return its sha256."""
    from sdgov.base.atomic import atomic_write_bytes

    data = (json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()
    atomic_write_bytes(Path(path), data)
    return sha256_bytes(data)
