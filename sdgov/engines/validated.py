"""The confidential file as the first stage checked it: where it is, its content hash and identity, its record
count, and its records as cell indices (what the engine encoded). The agree stage's input check makes it
(:func:`sdgov.intake.inputs.validated_data`) and the run's artifacts are written from it (:mod:`sdgov.artifacts`),
so it lives here, below both.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class ValidatedData:
    """The confidential file as checked: where it is, its content hash, and its records as cell indices
    (a Parquet file; :attr:`codes` loads it into memory for the stages that need the records themselves)."""

    path: Path
    sha256: str
    schema_sha256: str
    codes_path: Path
    rows: int
    fingerprint: str  # the content's identity, independent of file encoding, column and row order

    @cached_property
    def codes(self) -> pd.DataFrame:
        """The records as int32 cell indices, one column per attribute: ``codes_path`` read on first use, then kept."""
        return pd.read_parquet(self.codes_path)
