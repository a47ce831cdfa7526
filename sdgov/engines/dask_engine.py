"""The distributed engine: Dask over the confidential CSV or Parquet, partition by partition on a cluster.

The same work as the embedded engine (:mod:`sdgov.engines.duckdb_engine`), split so that no process holds the
data: the source is cut into partitions (CSV byte ranges of :data:`BLOCK_BYTES`, Parquet row groups of about
:data:`BLOCK_ROWS` records) that the workers read, and only small summaries travel to the client.

1. **scan** (first read): per partition, every column's distinct raw values with their row counts, and the
   distinct (source, lookup column) pairs with their first row. The client adds them up and decides with the
   embedded engine's own code (:func:`sdgov.data.encoding.encode_distinct`, :mod:`sdgov.engines.checks`): same data
   refused with the same line;
2. **encode** (second read): per partition, each raw value → its cell, the records as int32 columns. The client
   writes them to ``codes.parquet`` in partition order (file order kept), one partition at a time; partitions
   encoded ahead of the writer wait on their workers (Dask spills them to disk beyond its memory limit);
3. **fingerprint**: per encoded partition, its records' keys (:func:`sdgov.data.fingerprint.packs`: one int64, else the
   row of cells) counted and cut into key ranges; one task per range adds up the partitions' counts; the client
   feeds the ranges in order to :func:`sdgov.data.fingerprint.fingerprint_of_groups`. Memory per task is the distinct
   records of one range, never N;
4. **marginals**: per row-group chunk of ``codes.parquet``, one ``bincount`` per clique; the int64 tables are
   summed in a tree. Integer sums in any order are exact: the tables equal DuckDB's bit for bit.

CSV is parsed by pandas' C parser as text (as :func:`sdgov.data.encoding.read_csv_strict` does); Parquet values become
text by DuckDB's own ``CAST(… AS VARCHAR)``, run on the worker, so a typed Parquet column is read exactly as the
embedded engine reads it. Dask cuts a CSV at line ends: a quoted field holding a line break is refused, naming its
line (export such files as Parquet); lines may end in LF, CRLF or CR alone.

Where it runs: the scheduler named by ``SDGOV_DASK_SCHEDULER`` (``tcp://host:8786``), else a local cluster of
:data:`LOCAL_WORKERS` worker processes started for the call. On a real cluster the workers must have sdgov
installed and see the data file and the registry root at the same paths as the client (a shared file system:
they read the source, and ``codes.parquet`` in the run directory, themselves). See docs/operators.md.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from operator import getitem
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sdgov.base.errors import DataError, SpecError, shorten
from sdgov.base.settings import DASK_SCHEDULER, load_settings
from sdgov.data.encoding import check_file_columns, encode_distinct, first_non_utf8_line
from sdgov.data.fingerprint import columns as fingerprint_columns
from sdgov.data.fingerprint import fingerprint_of_groups, packs
from sdgov.data.schema import Clique, Schema
from sdgov.engines.base import Encoded, RowFilter
from sdgov.engines.checks import Distinct, checked_shape, lookup_problem, refuse, undeclared_values
from sdgov.engines.duckdb_engine import source_columns

if TYPE_CHECKING:
    from dask.delayed import Delayed
    from distributed import Client

LOCAL_WORKERS = 2  # the local cluster started when no scheduler is configured (one thread each)
BLOCK_BYTES = 32 * 2**20  # CSV bytes per partition (pandas holds about 10x that as text while parsing)
BLOCK_ROWS = 1_000_000  # Parquet records per partition (whole row groups)
KEY_RANGES = 64  # fingerprint key ranges, at most one per partition (the tasks that add up the record counts)


# ------------------------------------------------------------------------------------------- the cluster


@contextmanager
def _client() -> Iterator[Client]:
    """A client of the configured scheduler, or of a local cluster that lives for this call."""
    from distributed import Client, LocalCluster

    address = load_settings().dask_scheduler()
    if not address:
        with (
            LocalCluster(  # its workers' logs would reach the terminal: a refused file is one line, not a traceback
                n_workers=LOCAL_WORKERS,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",  # any free port (None still takes 8787 for its HTTP server, warning if taken)
                silence_logs=logging.CRITICAL,
            ) as cluster,
            Client(cluster, set_as_default=False) as client,
        ):
            yield client
        return
    try:
        client = Client(address, set_as_default=False, timeout="20s")
    except OSError as exc:
        raise SpecError(
            f"cannot reach the Dask scheduler {address!r} ({shorten(str(exc), 100)})",
            DASK_SCHEDULER,
            "start the scheduler, fix the address, or unset it to run on a local cluster",
        ) from None
    with client:
        yield client


# ------------------------------------------------------------------------------------------- reading


def _partitions(source: Path, schema: Schema, names: list[str], lineterminator: str | None = None) -> list[Delayed]:
    """The source as delayed pandas frames of text (``NaN``: an empty field), in file order; ``lineterminator``
    "\\r" for a file whose lines end in CR alone (Dask cuts partitions at it)."""
    import dask.dataframe as dd
    from dask import delayed

    if source.suffix.lower() == ".parquet":
        raw = pq.read_schema(source).names
        return [delayed(_read_parquet_part)(str(source), rgs, raw, names) for rgs in _row_groups(source)]
    frame = dd.read_csv(
        str(source),
        blocksize=BLOCK_BYTES,
        header=0 if schema.header else None,
        names=names,
        index_col=False,
        dtype=str,
        keep_default_na=False,
        na_values=[""],
        encoding="utf-8",
        engine="c",
        lineterminator=lineterminator,
    )
    return list(frame.to_delayed())


def _row_groups(path: Path) -> list[list[int]]:
    """A Parquet file's row groups in runs of about :data:`BLOCK_ROWS` records: one partition each."""
    meta = pq.ParquetFile(path).metadata
    chunks: list[list[int]] = [[]]
    rows = 0
    for i in range(meta.num_row_groups):
        if chunks[-1] and rows >= BLOCK_ROWS:
            chunks.append([])
            rows = 0
        chunks[-1].append(i)
        rows += meta.row_group(i).num_rows
    return chunks


def _read_parquet_part(path: str, row_groups: list[int], raw: list[str], names: list[str]) -> pd.DataFrame:
    """Row groups of a Parquet file as text, by the embedded engine's cast (``CAST(… AS VARCHAR)``)."""
    import duckdb

    table = pq.ParquetFile(path).read_row_groups(row_groups, columns=raw)
    table = table.rename_columns([f"c{i}" for i in range(len(raw))])  # names as the file spells them, any text
    cast = ", ".join(f"CAST(c{i} AS VARCHAR) AS c{i}" for i in range(len(raw)))
    with duckdb.connect(":memory:") as con:
        con.register("part", table)
        text = con.sql(f"SELECT {cast} FROM part").arrow().read_all()
    frame = text.to_pandas(types_mapper={pa.string(): pd.StringDtype(na_value=np.nan)}.get)
    frame.columns = pd.Index(names)
    return frame


def _refusal(exc: BaseException, path: Path) -> DataError:
    """A read error on a worker as the embedded engine's line for a file it cannot read."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if path.suffix.lower() == ".parquet":
        return DataError(
            f"not a readable Parquet file ({shorten(first, 160)})", str(path), "export it again as Parquet"
        )
    bad_line = first_non_utf8_line(path)  # on failure only: a full read
    if bad_line:
        return DataError(
            f"not UTF-8 text (first bad byte on line {bad_line})", str(path), "export the file as UTF-8 CSV"
        )
    return DataError(
        f"not a readable CSV ({shorten(first, 160)})", str(path), "export as UTF-8 CSV with one header row"
    )


READ_ERRORS = (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, pa.ArrowException)


# ------------------------------------------------------------------------------------------- per partition


def _scan(frame: pd.DataFrame, names: list[str], lookups: list[tuple[str, str]]) -> dict[str, Any]:
    """One partition's record count, distinct values per column and distinct lookup pairs (first row, 1-based)."""
    values = {}
    for name in names:
        counts = frame[name].value_counts(dropna=False, sort=False)
        values[name] = ([None if pd.isna(v) else str(v) for v in counts.index], counts.to_numpy(np.int64))
    pairs = []
    for s, c in lookups:
        grouped = (
            pd.DataFrame({"s": frame[s], "c": frame[c], "r": np.arange(1, len(frame) + 1)})
            .groupby(["s", "c"], dropna=False, sort=False)["r"]
            .agg(["size", "min"])
        )
        keys = [tuple(None if pd.isna(x) else str(x) for x in k) for k in grouped.index]
        pairs.append((keys, grouped["size"].to_numpy(np.int64), grouped["min"].to_numpy(np.int64)))
    return {"rows": len(frame), "values": values, "pairs": pairs}


def _encode(frame: pd.DataFrame, plan: list[tuple[str, list[str], np.ndarray]]) -> pd.DataFrame:
    """One partition's records as cells. ``plan``: per column its present raw values and their cells, with the
    empty field's cell last (``get_indexer`` gives -1 for an empty field, which picks it)."""
    return pd.DataFrame(
        {
            name: cells[pd.Index(values, dtype=object).get_indexer(pd.Index(frame[name].astype(object)))]
            for name, values, cells in plan
        }
    )


def _keys(codes: pd.DataFrame, names: list[str], sizes: list[int], width: int, prefix: int, ranges: int) -> list[Any]:
    """One partition's distinct fingerprint keys with their counts, cut into ``ranges`` ranges of ``width`` keys
    (of the packed key, or of the packed leading ``prefix`` columns when a record does not pack)."""
    cells = [codes[n].to_numpy(np.int64) for n in names]
    if prefix == len(names):
        keys = np.ravel_multi_index(tuple(cells), tuple(sizes)) if cells else np.zeros(len(codes), np.int64)
        uniq, counts = np.unique(keys, return_counts=True)
        where = uniq // width
    else:
        uniq, counts = np.unique(np.stack(cells, axis=1), axis=0, return_counts=True)  # rows in lexicographic order
        where = np.ravel_multi_index(tuple(uniq[:, :prefix].T), tuple(sizes[:prefix])) // width
    bounds = np.searchsorted(where, np.arange(ranges + 1))
    return [(uniq[a:b], counts[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _merge(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """One key range over all partitions: distinct keys in ascending order, each with its total count."""
    keys = np.concatenate([k for k, _ in pieces])
    counts = np.concatenate([n for _, n in pieces]).astype(np.int64)
    uniq, inverse = np.unique(keys, axis=0 if keys.ndim > 1 else None, return_inverse=True)
    total = np.zeros(len(uniq), np.int64)
    np.add.at(total, inverse.reshape(-1), counts)
    return uniq, total


def _count(
    path: str,
    row_groups: list[int],
    cliques: list[Clique],
    shapes: list[tuple[int, ...]],
    records: RowFilter | None = None,
) -> list[np.ndarray]:
    """Row groups of ``codes.parquet``: every clique's flat int64 contingency table (of ``records`` only)."""
    attrs = list(dict.fromkeys([a for c in cliques for a in c] + ([records[0]] if records else [])))
    table = pq.ParquetFile(path).read_row_groups(row_groups, columns=attrs)
    cells = {a: table.column(a).to_numpy().astype(np.int64) for a in attrs}
    if records is not None:
        keep = np.isin(cells[records[0]], records[1])
        cells = {a: v[keep] for a, v in cells.items()}
    n = len(next(iter(cells.values())))
    out = []
    for clique, shape in zip(cliques, shapes):
        flat = np.ravel_multi_index(tuple(cells[a] for a in clique), shape) if clique else np.zeros(n, int)
        out.append(np.bincount(flat, minlength=math.prod(shape)).astype(np.int64))
    return out


def _add(*parts: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(np.sum(tables, axis=0, dtype=np.int64)) for tables in zip(*parts)]


def _tree_sum(parts: list[Delayed]) -> Delayed:
    from dask import delayed

    while len(parts) > 1:
        parts = [delayed(_add)(*parts[i : i + 8]) for i in range(0, len(parts), 8)]
    return parts[0]


# ------------------------------------------------------------------------------------------- the engine


class DaskEngine:
    """Dask, distributed: each process holds a partition or a summary, never the data."""

    name = "dask"

    def _scan_all(
        self, client: Client, source: Path, schema: Schema, names: list[str], lookups: list[tuple[str, str]]
    ) -> tuple[list[Delayed], list[dict[str, Any]]]:
        from dask import delayed

        file_names = source_columns(source, schema)
        shape = checked_shape(source, schema, file_names)  # a ragged row: refused with its row number
        if shape is not None and shape.quoted_break_line:
            raise DataError(
                f"line {shape.quoted_break_line:,} holds a line break inside a quoted field, which the Dask engine "
                "cannot read (it cuts the file into partitions at line ends)",
                str(source),
                "convert the file to Parquet, or read it with the embedded engine (engine: duckdb)",
            )
        try:
            parts = _partitions(
                source, schema, file_names, "\r" if shape is not None and shape.newline == "\r" else None
            )
            summaries = client.gather(client.compute([delayed(_scan)(p, names, lookups) for p in parts]))
        except READ_ERRORS as exc:
            raise _refusal(exc, source) from None
        return parts, summaries

    @staticmethod
    def _distinct(names: list[str], summaries: list[dict[str, Any]]) -> Distinct:
        out: Distinct = {}
        for name in names:
            totals: dict[str | None, int] = {}
            for s in summaries:
                for v, n in zip(*s["values"][name]):
                    totals[v] = totals.get(v, 0) + int(n)
            out[name] = (list(totals), np.array(list(totals.values()), dtype=np.int64))
        return out

    def encode(self, source: Path, schema: Schema, out: Path) -> Encoded:
        """As :meth:`Engine.encode`, on the Dask cluster: one scan for the distinct values, then the partitions encoded
        in parallel and written in file order; any problem refused as one DataError."""
        from dask import delayed

        where = str(source)
        file_names = source_columns(source, schema)
        columns = check_file_columns(file_names, schema, where)
        names = [c.name for c in columns]
        lookups = [lk for lk in schema.lookup_index() if lk.column in file_names]
        missing = frozenset(schema.missing_values)
        with _client() as client:
            parts, summaries = self._scan_all(client, source, schema, names, [(lk.source, lk.column) for lk in lookups])
            rows = sum(s["rows"] for s in summaries)
            if rows == 0:
                raise DataError("no data rows", where, "the file has a header but no records")
            distinct = self._distinct(names, summaries)
            problems: list[str] = []
            plan: list[tuple[str, list[str], np.ndarray]] = []
            for col in columns:
                values, counts = distinct[col.name]
                cells, problem = encode_distinct(values, counts, col, missing)
                if problem:
                    problems.append(problem)
                    continue
                present = [(v, int(c)) for v, c in zip(values, cells) if v is not None]
                null_cell = next((int(c) for v, c in zip(values, cells) if v is None), 0)
                plan.append(
                    (col.name, [v for v, _ in present], np.array([c for _, c in present] + [null_cell], np.int32))
                )
            if not problems:
                problems += self._lookup_problems(lookups, schema, summaries, missing)
            refuse(problems, where)

            sorted_names = fingerprint_columns(schema)
            sizes = [schema.by_name[n].size for n in sorted_names]
            prefix = len(sorted_names) if packs(schema) else _packable_prefix(sizes)
            n_ranges = min(KEY_RANGES, len(parts))
            width = max(1, -(-math.prod(sizes[:prefix]) // n_ranges))
            encoded = [delayed(_encode)(p, plan) for p in parts]
            keyed = [delayed(_keys)(e, sorted_names, sizes, width, prefix, n_ranges) for e in encoded]
            ranges = [delayed(_merge)([delayed(getitem)(k, r) for k in keyed]) for r in range(n_ranges)]
            futures = client.compute(encoded + ranges)
            tmp = out.with_name(f".{out.name}.tmp")
            try:
                writer: pq.ParquetWriter | None = None
                for future in futures[: len(encoded)]:  # in partition order: file order kept
                    table = pa.Table.from_pandas(future.result(), preserve_index=False)
                    future.release()
                    writer = writer or pq.ParquetWriter(tmp, table.schema, compression="zstd")
                    writer.write_table(table)
                if writer is not None:
                    writer.close()
                fp = fingerprint_of_groups(schema, rows, (f.result() for f in futures[len(encoded) :]))
                tmp.replace(out)
            except READ_ERRORS as exc:
                raise _refusal(exc, source) from None
            finally:
                tmp.unlink(missing_ok=True)
        return Encoded(path=out, rows=rows, fingerprint=fp)

    @staticmethod
    def _lookup_problems(
        lookups: list[Any], schema: Schema, summaries: list[dict[str, Any]], missing: frozenset[str]
    ) -> list[str]:
        out = []
        for j, lk in enumerate(lookups):
            totals: dict[tuple[str | None, ...], list[int]] = {}
            offset = 0
            for s in summaries:
                keys, counts, firsts = s["pairs"][j]
                for key, n, first in zip(keys, counts, firsts):
                    seen = totals.setdefault(key, [0, int(first) + offset])
                    seen[0] += int(n)
                offset += s["rows"]
            pairs = ([k[0] for k in totals], [k[1] for k in totals])
            stats = np.array(list(totals.values()), dtype=np.int64).reshape(-1, 2)
            problem = lookup_problem(lk, schema, pairs, stats[:, 0], stats[:, 1], missing)
            if problem:
                out.append(problem)
        return out

    def marginals(
        self, codes: Path, schema: Schema, cliques: list[Clique], records: RowFilter | None = None
    ) -> dict[Clique, np.ndarray]:
        """As :meth:`Engine.marginals`, summed over the file's row groups on the Dask cluster; a clique listed twice is
        counted once."""
        from dask import delayed

        unique = list(dict.fromkeys(cliques))
        shapes = [schema.shape(c) for c in unique]
        with _client() as client:
            total = _tree_sum([delayed(_count)(str(codes), rgs, unique, shapes, records) for rgs in _row_groups(codes)])
            flat = client.compute(total).result()
        tables = {c: t.reshape(s) for c, t, s in zip(unique, flat, shapes)}
        return {c: tables[c] for c in cliques}

    def undeclared(self, source: Path, schema: Schema) -> dict[str, list[tuple[str, int]]]:
        """As :meth:`Engine.undeclared`, from one scan of ``source`` on the Dask cluster."""
        file_names = source_columns(source, schema)
        columns = [c for c in schema.columns if c.name in file_names]
        names = [c.name for c in columns]
        with _client() as client:
            _, summaries = self._scan_all(client, source, schema, names, [])
        return undeclared_values(columns, self._distinct(names, summaries), frozenset(schema.missing_values))


def _packable_prefix(sizes: list[int]) -> int:
    """How many leading columns pack into one int64 (at least one: a column has far fewer than 2^63 cells)."""
    k = 1
    while k < len(sizes) and math.prod(sizes[: k + 1]) < 2**63:
        k += 1
    return k
