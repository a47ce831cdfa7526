"""The engine interface: validate and encode the input once, then every count the release needs from the encoded copy.

An engine turns the confidential file (CSV or Parquet) into the run's encoded copy — a Parquet file of cell
indices, one int32 column per schema column, hashed like every other artifact — and computes the dataset's
content fingerprint (:mod:`sdgov.data.fingerprint`) from it. Every later count (the Φ marginals, all at once) reads
that copy, never the original file. Whatever the engine, the exact counts and the fingerprint are the same bits:
``tests/unit/engines/test_engines.py`` checks the embedded engine against the in-memory reference, and
``tests/unit/engines/test_dask_engine.py`` the distributed engine against the embedded one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from sdgov.data.schema import Clique, Schema


@dataclass(frozen=True)
class Encoded:
    """What encoding wrote: the Parquet of cell indices, its record count and the content fingerprint."""

    path: Path
    rows: int
    fingerprint: str


RowFilter = tuple[str, list[int]]
"""The records whose column (the name) holds one of the cell indices: a part of a split synthesis."""


class Engine(Protocol):
    name: str

    def encode(self, source: Path, schema: Schema, out: Path) -> Encoded:
        """Read ``source`` (CSV or Parquet) once, refuse it with one :class:`~sdgov.base.errors.DataError` if it does
        not fit ``schema``, write its cell indices to ``out`` and fingerprint them. Memory is bounded whatever N."""
        ...

    def marginals(
        self, codes: Path, schema: Schema, cliques: list[Clique], records: RowFilter | None = None
    ) -> dict[Clique, np.ndarray]:
        """The exact int64 contingency table of every clique (axes in clique order), in one scan of ``codes`` —
        of the records ``records`` selects only, when given (a part of a split synthesis)."""
        ...

    def undeclared(self, source: Path, schema: Schema) -> dict[str, list[tuple[str, int]]]:
        """Per column, the values in ``source`` that the schema does not declare, with their row counts
        (for ``sdgov schema check``; shown to the controller only)."""
        ...
