"""Encoded records as the controller-side statistics read them: exact tables of every record, and a bounded sample.

The utility report and the card compare many tables of the real and the synthetic records, and fit a few models
(propensity scores, the analyst's task models). At census scale (55M records) neither record set fits in memory as
a DataFrame, and neither needs to:

- every **table** is an exact count over all the records; on disk the embedded engine counts every table asked for
  in one grouped scan (:meth:`RecordSet.prefetch`), out of core;
- every **model** is fitted on :meth:`RecordSet.sample`: all the records when there are at most ``sample_rows``
  of them, else a uniform sample of ``sample_rows`` records without replacement, drawn from a public seed and read
  one row group at a time (memory flat in N). The models subsample to a few thousand records anyway.

:class:`FrameRecords` (in memory) and :class:`ParquetRecords` (an encoded Parquet file: the run's ``codes.parquet``,
or the synthetic file encoded by :meth:`~sdgov.engines.duckdb_engine.DuckDBEngine.encode_columns`) give the same
tables, bit for bit, and the same sample whenever every record fits in it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sdgov.base.seeds import stream
from sdgov.data.schema import Clique, Schema
from sdgov.data.tables import contingency_table
from sdgov.engines.base import RowFilter

SAMPLE_ROWS = 200_000  # records the models see at most, per record set
_SAMPLE_STREAM = 404  # sdgov.base.seeds key of the sample's draw

_Key = tuple[Clique, tuple[str, tuple[int, ...]] | None]


def _key(clique: Sequence[str], records: RowFilter | None) -> _Key:
    return tuple(clique), None if records is None else (records[0], tuple(records[1]))


class RecordSet(ABC):
    """Encoded records (cell indices of the schema's columns): their count, exact tables, a bounded sample."""

    def __init__(self, schema: Schema, rows: int) -> None:
        self.schema = schema
        self.rows = rows
        self._tables: dict[_Key, np.ndarray] = {}

    def prefetch(self, cliques: Iterable[Sequence[str]], records: RowFilter | None = None) -> None:
        """Count every table of ``cliques`` not counted yet (of the records ``records`` selects, when given) at
        once: one scan of the file for all of them."""
        todo = list(dict.fromkeys(tuple(c) for c in cliques if _key(c, records) not in self._tables))
        if todo:
            for clique, table in self._count(todo, records).items():
                self._tables[_key(clique, records)] = table

    def table(self, clique: Sequence[str], records: RowFilter | None = None) -> np.ndarray:
        """The exact int64 table of ``clique`` (axes in its order) over every record, or those ``records`` selects."""
        self.prefetch([clique], records)
        return self._tables[_key(clique, records)]

    @abstractmethod
    def _count(self, cliques: list[Clique], records: RowFilter | None) -> dict[Clique, np.ndarray]: ...

    @abstractmethod
    def sample(self) -> pd.DataFrame:
        """The records the models are fitted on: all of them, or a uniform sample (always the same one)."""


class FrameRecords(RecordSet):
    """Records in memory (tests, examples, benchmarks, and the baselines the report builds)."""

    def __init__(self, frame: pd.DataFrame, schema: Schema) -> None:
        super().__init__(schema, len(frame))
        self.frame = frame

    def _count(self, cliques: list[Clique], records: RowFilter | None) -> dict[Clique, np.ndarray]:
        frame = self.frame
        if records is not None:
            frame = frame[np.isin(frame[records[0]].to_numpy(), records[1])]
        return {c: contingency_table(frame, c, self.schema.shape(c)).astype(np.int64) for c in cliques}

    def sample(self) -> pd.DataFrame:
        """Every record: the frame itself (not a copy)."""
        return self.frame


class ParquetRecords(RecordSet):
    """Records in an encoded Parquet file, counted by the embedded engine and sampled row group by row group."""

    def __init__(
        self, path: Path, schema: Schema, columns: list[str], sample_rows: int = SAMPLE_ROWS, seed: int = 0
    ) -> None:
        super().__init__(schema, pq.ParquetFile(path).metadata.num_rows)
        self.path, self.columns, self.sample_rows, self.seed = Path(path), list(columns), sample_rows, seed
        self._sample: pd.DataFrame | None = None

    def _count(self, cliques: list[Clique], records: RowFilter | None) -> dict[Clique, np.ndarray]:
        from sdgov.engines.duckdb_engine import DuckDBEngine

        return DuckDBEngine().marginals(self.path, self.schema, cliques, records)

    def sample(self) -> pd.DataFrame:
        """At most ``sample_rows`` records of the file, drawn from ``seed`` by :func:`read_sample`; read once, then
        kept."""
        if self._sample is None:
            self._sample = read_sample(self.path, self.columns, self.sample_rows, self.seed)
        return self._sample


def sample_positions(total: int, rows: int, seed: int) -> np.ndarray:
    """The positions (sorted) of the ``rows`` records of ``total`` that a sample from ``seed`` holds: uniform,
    without replacement. One rule for records in a file (:func:`read_sample`) and in memory (:func:`sample_frame`)."""
    return np.sort(stream(seed, _SAMPLE_STREAM).choice(total, rows, replace=False))


def sample_frame(frame: pd.DataFrame, rows: int, seed: int) -> pd.DataFrame:
    """``frame`` itself when it has at most ``rows`` records, else the same sample :func:`read_sample` reads."""
    if len(frame) <= rows:
        return frame
    return frame.iloc[sample_positions(len(frame), rows, seed)].reset_index(drop=True)


def read_sample(path: Path, columns: list[str], rows: int, seed: int) -> pd.DataFrame:
    """``columns`` of every record of ``path`` when it holds at most ``rows``; else of ``rows`` records drawn
    uniformly without replacement (from the public ``seed``), in file order, reading one row group at a time.

    Arrow's allocator keeps the pages of the row groups it decoded; they are handed back to the system afterwards
    (a 1M-record sample of a 55M-record file left ~400 MB resident that nothing used)."""
    pf = pq.ParquetFile(path)
    total = pf.metadata.num_rows
    if total <= rows:
        return pf.read(columns=columns).to_pandas()
    wanted = sample_positions(total, rows, seed)
    pieces, start = [], 0
    for g in range(pf.num_row_groups):
        size = pf.metadata.row_group(g).num_rows
        lo, hi = np.searchsorted(wanted, [start, start + size])
        if hi > lo:
            pieces.append(pf.read_row_group(g, columns=columns).take(pa.array(wanted[lo:hi] - start)))
        start += size
    frame = pa.concat_tables(pieces).to_pandas()
    del pieces
    pa.default_memory_pool().release_unused()
    return frame


def records_of(data: pd.DataFrame | RecordSet, schema: Schema) -> RecordSet:
    """``data`` as a record set (a DataFrame of encoded records is held in memory)."""
    return data if isinstance(data, RecordSet) else FrameRecords(data, schema)
