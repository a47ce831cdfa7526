"""The embedded engine: DuckDB over the confidential CSV or Parquet, out of core.

Encoding takes two scans of the source and none of it is held in memory:

1. every column's distinct values with their row counts, in one ``GROUPING SETS`` scan; each distinct value
   is checked and given its cell by :func:`sdgov.data.encoding.encode_distinct` — the very function the in-memory
   encoder uses, so both accept, refuse and encode alike, with the same one-line errors;
2. the records as cells (each column cast to an ``ENUM`` of its distinct values, whose position indexes a list
   of cells), written as zstd Parquet in file order.

The fingerprint is then one ``GROUP BY … ORDER BY`` of the packed cells (bounded, spilling beyond the memory
limit), streamed into :func:`sdgov.data.fingerprint.fingerprint_of_groups`; the marginals are one ``GROUPING SETS``
scan of the encoded copy. DuckDB's memory is capped (:data:`MEMORY_LIMIT`); it spills to a scratch directory
beside the file it writes or reads (a release's private 0700 scratch directory or its run directory, never a
shared one) and removes it.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow.parquet as pq

from sdgov.base.errors import DataError, shorten
from sdgov.data.encoding import check_file_columns, csv_header, encode_distinct, first_non_utf8_line
from sdgov.data.fingerprint import columns, fingerprint_of_groups, packs
from sdgov.data.schema import Clique, Column, Schema, nfc
from sdgov.engines.base import Encoded, RowFilter
from sdgov.engines.checks import checked_shape, lookup_problem, refuse, undeclared_values

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

MEMORY_LIMIT = "1GB"  # DuckDB's own cap; the process peak stays under 2 GB at any N
BATCH_ROWS = 1_000_000


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@contextmanager
def _connection(near: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    import duckdb  # here, not at the top: a file refused by its header costs no DuckDB import (~0.5 s)

    scratch = near.parent / f".{near.name}.duckdb-tmp"
    con = duckdb.connect(
        ":memory:",
        config={"memory_limit": MEMORY_LIMIT, "temp_directory": str(scratch), "preserve_insertion_order": True},
    )
    try:
        yield con
    finally:
        con.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _source(path: Path, schema: Schema) -> tuple[str, list[str]]:
    """The SQL relation reading ``path`` as text columns, and the file's column names (NFC)."""
    if not path.is_file():
        raise DataError("data file not found", str(path), "check the 'dataset.path' in the spec")
    if path.suffix.lower() == ".parquet":
        try:
            raw = pq.read_schema(path).names
        except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
            raise DataError(
                f"not a readable Parquet file ({shorten(str(exc), 100)})", str(path), "export it again as Parquet"
            ) from None
        names = [nfc(n) for n in raw]
        cols = ", ".join(f"CAST({_ident(r)} AS VARCHAR) AS {_ident(n)}" for r, n in zip(raw, names))
        return f"(SELECT {cols} FROM read_parquet({_text(str(path))}))", names
    if schema.header:
        names = csv_header(path)
        if not names or names == [""]:
            raise DataError("the file is empty (no header, no rows)", str(path), "export the data with a header row")
    else:
        names = schema.file_columns
        if path.stat().st_size == 0:
            raise DataError("the file is empty (no rows)", str(path), "export the data")
    columns = "{" + ", ".join(f"{_text(n)}: 'VARCHAR'" for n in names) + "}"
    return (  # no null_padding: a short row is refused (csv_shape names it), and quoted line breaks are read
        f"read_csv({_text(str(path))}, columns={columns}, header={str(schema.header).lower()}, delim=',', "
        "quote='\"', escape='\"', auto_detect=false, strict_mode=true, nullstr='', encoding='utf-8')",
        names,
    )


def source_columns(path: Path, schema: Schema) -> list[str]:
    """The data file's column names (NFC): its header, its Parquet schema, or the schema's for a header-less CSV."""
    return _source(path, schema)[1]


def _scan(con: duckdb.DuckDBPyConnection, sql: str, path: Path) -> pa.Table:
    """A query over the data file ``path``, whole; DuckDB's read errors become the file's one-line refusal."""
    import duckdb

    try:
        return con.sql(sql).arrow().read_all()
    except duckdb.Error as exc:
        raise _refusal(exc, path) from None


def _refusal(exc: duckdb.Error, path: Path) -> DataError:
    """A DuckDB read error as the one line sdgov gives for a file it cannot read (an error in sdgov's own SQL
    is a bug, not the file's fault: it is raised as it is)."""
    import duckdb

    if isinstance(exc, (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException)):
        raise exc
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    bad_line = first_non_utf8_line(path) if path.suffix.lower() != ".parquet" else 0  # on failure only: a full read
    if bad_line:
        return DataError(
            f"not UTF-8 text (first bad byte on line {bad_line})", str(path), "export the file as UTF-8 CSV"
        )
    if path.suffix.lower() == ".parquet":
        return DataError(
            f"not a readable Parquet file ({shorten(first, 160)})", str(path), "export it again as Parquet"
        )
    return DataError(
        f"not a readable CSV ({shorten(first, 160)})", str(path), "export as UTF-8 CSV with one header row"
    )


def _distinct(
    con: duckdb.DuckDBPyConnection, source: str, columns: list[Column], path: Path
) -> tuple[int, dict[str, tuple[list[str | None], np.ndarray]]]:
    """Record count, and each column's distinct raw values (``None``: empty) with their row counts: one
    ``GROUPING SETS`` scan per 60 columns (``GROUPING_ID`` has a bit per column)."""

    out: dict[str, tuple[list[str | None], np.ndarray]] = {}
    for start in range(0, len(columns), 60):
        batch = [c.name for c in columns[start : start + 60]]
        names = ", ".join(_ident(n) for n in batch)
        sets = ", ".join(f"({_ident(n)})" for n in batch)
        table = _scan(
            con,
            f"SELECT {names}, GROUPING_ID({names}) AS g, count(*) AS n FROM {source} GROUP BY GROUPING SETS ({sets})",
            path,
        )
        gid = table.column("g").to_numpy()
        counts = table.column("n").to_numpy().astype(np.int64)
        for j, name in enumerate(batch):
            hit = np.flatnonzero(gid == (1 << len(batch)) - 1 - (1 << (len(batch) - 1 - j)))
            values = table.column(name).take(hit).to_pylist()
            out[name] = (values, counts[hit])
    return int(out[columns[0].name][1].sum()), out


def _lookup_problems(
    con: duckdb.DuckDBPyConnection, src: str, schema: Schema, names: list[str], missing: frozenset[str], path: Path
) -> list[str]:
    """A lookup column present in the file must agree, row by row, with its public table applied to its source:
    one scan of the distinct (source, column) pairs, each with its count and first row."""

    out: list[str] = []
    for lk in schema.lookup_index():
        if lk.column not in names:
            continue
        a, b = _ident(lk.source), _ident(lk.column)
        pairs = _scan(
            con,
            f"SELECT s, c, count(*) AS n, min(r) AS first FROM (SELECT {a} AS s, {b} AS c, "
            f"row_number() OVER () AS r FROM {src}) GROUP BY s, c",
            path,
        )
        problem = lookup_problem(
            lk,
            schema,
            (pairs.column("s").to_pylist(), pairs.column("c").to_pylist()),
            pairs.column("n").to_numpy().astype(np.int64),
            pairs.column("first").to_numpy(),
            missing,
        )
        if problem:
            out.append(problem)
    return out


_Checked = tuple[Path, str, list[str], list[Column]]


def _checked_source(source: Path, schema: Schema, only: list[str] | None) -> _Checked:
    """The source, its SQL relation, its column names and the schema columns to encode (every one, or ``only``),
    after the header check."""
    src, names = _source(source, schema)
    wanted = check_file_columns(names, schema, str(source), only)
    checked_shape(source, schema, names)  # a ragged row: refused with its row number
    return source, src, names, wanted


class DuckDBEngine:
    """DuckDB, embedded: memory bounded by :data:`MEMORY_LIMIT` whatever the number of records."""

    name = "duckdb"

    def encode(self, source: Path, schema: Schema, out: Path) -> Encoded:
        """As :meth:`Engine.encode`: the header checked before DuckDB is imported, then the cells written to ``out`` and
        fingerprinted over one connection."""
        checked = _checked_source(source, schema, None)  # before DuckDB is imported: a bad header costs nothing
        with _connection(out) as con:
            rows = self._write_cells(con, checked, schema, out)
            fp = self._fingerprint(con, out, schema, rows)
        return Encoded(path=out, rows=rows, fingerprint=fp)

    def encode_columns(self, source: Path, schema: Schema, columns: list[str], out: Path) -> int:
        """Validate and encode only ``columns`` of ``source`` (a released synthetic file holds the modelled
        columns, and the lookups attached to them) to ``out``; return the record count. The same checks and
        cells as :meth:`encode`, out of core, without the fingerprint (the file is hashed as an artifact)."""
        checked = _checked_source(source, schema, columns)
        with _connection(out) as con:
            return self._write_cells(con, checked, schema, out)

    def _write_cells(self, con: duckdb.DuckDBPyConnection, checked: _Checked, schema: Schema, out: Path) -> int:
        """Check every value of the source against the schema and write its cells to ``out``."""
        source, src, names, columns = checked
        where = str(source)
        missing = frozenset(schema.missing_values)
        import duckdb

        rows, distinct = _distinct(con, src, columns, source)
        if rows == 0:
            raise DataError("no data rows", where, "the file has a header but no records")
        problems: list[str] = []
        exprs: list[str] = []
        for i, col in enumerate(columns):
            values, counts = distinct[col.name]
            cells, problem = encode_distinct(values, counts, col, missing)
            if problem:
                problems.append(problem)
                continue
            exprs.append(self._cells_sql(con, i, col, values, cells))
        if not problems:
            problems += _lookup_problems(con, src, schema, names, missing, source)
        refuse(problems, where)
        tmp = out.with_name(f".{out.name}.tmp")
        try:
            con.execute(
                f"COPY (SELECT {', '.join(exprs)} FROM {src}) TO {_text(str(tmp))} (FORMAT parquet, COMPRESSION zstd)"
            )
            tmp.replace(out)
        except duckdb.Error as exc:
            raise _refusal(exc, source) from None
        finally:
            tmp.unlink(missing_ok=True)
        return rows

    @staticmethod
    def _cells_sql(
        con: duckdb.DuckDBPyConnection, i: int, col: Column, values: list[str | None], cells: np.ndarray
    ) -> str:
        """SQL for one column's cells: the raw text cast to an ENUM of its distinct values, whose position
        picks the cell from a list (no join, file order kept)."""
        present = [(v, int(c)) for v, c in zip(values, cells) if v is not None]
        null_cell = next((int(c) for v, c in zip(values, cells) if v is None), 0)
        if not present:
            return f"CAST({null_cell} AS INTEGER) AS {_ident(col.name)}"
        con.execute(f"CREATE TYPE sdgov_e{i} AS ENUM ({', '.join(_text(v) for v, _ in present)})")
        lookup = "[" + ", ".join(str(c) for _, c in present) + "]"
        return (
            f"CAST(coalesce({lookup}[enum_code(CAST({_ident(col.name)} AS sdgov_e{i})) + 1], {null_cell}) "
            f"AS INTEGER) AS {_ident(col.name)}"
        )

    @staticmethod
    def _fingerprint(con: duckdb.DuckDBPyConnection, codes: Path, schema: Schema, rows: int) -> str:
        names = columns(schema)
        src = f"read_parquet({_text(str(codes))})"
        if packs(schema):
            sizes = [schema.by_name[n].size for n in names]
            strides = [math.prod(sizes[j + 1 :]) for j in range(len(sizes))]
            key = " + ".join(f"CAST({_ident(n)} AS BIGINT) * {s}" for n, s in zip(names, strides))
            reader = con.sql(f"SELECT {key} AS k, count(*) AS n FROM {src} GROUP BY k ORDER BY k").to_arrow_reader(
                BATCH_ROWS
            )
            groups = ((b.column(0).to_numpy(), b.column(1).to_numpy()) for b in reader)
        else:
            cols = ", ".join(_ident(n) for n in names)
            reader = con.sql(f"SELECT {cols}, count(*) AS n FROM {src} GROUP BY ALL ORDER BY {cols}").to_arrow_reader(
                BATCH_ROWS
            )
            groups = (
                (np.stack([b.column(j).to_numpy() for j in range(len(names))], axis=1), b.column(len(names)).to_numpy())
                for b in reader
            )
        return fingerprint_of_groups(schema, rows, groups)

    def marginals(
        self, codes: Path, schema: Schema, cliques: list[Clique], records: RowFilter | None = None
    ) -> dict[Clique, np.ndarray]:
        """As :meth:`Engine.marginals`: one ``GROUPING SETS`` query per 32 distinct cliques, each table's axes then put
        in its clique's order."""
        where = "" if records is None else f" WHERE {_ident(records[0])} IN ({', '.join(map(str, records[1]))})"
        attrs = list(dict.fromkeys(a for c in cliques for a in c))
        sets = list(dict.fromkeys(frozenset(c) for c in cliques))
        tables: dict[frozenset[str], tuple[tuple[str, ...], np.ndarray]] = {}
        with _connection(codes) as con:
            for start in range(0, len(sets), 32):  # GROUPING_ID is a bit per attribute: keep batches modest
                batch = sets[start : start + 32]
                used = [a for a in attrs if any(a in s for s in batch)]
                tables.update(self._grouping_sets(con, codes, schema, used, batch, where))
        out: dict[Clique, np.ndarray] = {}
        for clique in cliques:
            order, table = tables[frozenset(clique)]
            out[clique] = np.transpose(table, [order.index(a) for a in clique]) if order != clique else table
        return out

    @staticmethod
    def _grouping_sets(
        con: duckdb.DuckDBPyConnection,
        codes: Path,
        schema: Schema,
        attrs: list[str],
        sets: list[frozenset[str]],
        where: str = "",
    ) -> dict[frozenset[str], tuple[tuple[str, ...], np.ndarray]]:
        cols = ", ".join(_ident(a) for a in attrs)
        spec = ", ".join("(" + ", ".join(_ident(a) for a in attrs if a in s) + ")" for s in sets)
        result = (
            con.sql(
                f"SELECT {cols}, GROUPING_ID({cols}) AS g, count(*) AS n "
                f"FROM read_parquet({_text(str(codes))}){where} GROUP BY GROUPING SETS ({spec})"
            )
            .arrow()
            .read_all()
        )
        gid = result.column("g").to_numpy()
        counts = result.column("n").to_numpy().astype(np.int64)
        m = len(attrs)
        out = {}
        for s in sets:
            order = tuple(a for a in attrs if a in s)
            want = sum(1 << (m - 1 - j) for j, a in enumerate(attrs) if a not in s)
            hit = gid == want
            shape = schema.shape(order)
            idx = tuple(result.column(a).to_numpy()[hit].astype(np.int64) for a in order)
            flat = np.ravel_multi_index(idx, shape) if order else np.zeros(int(hit.sum()), np.int64)
            table = np.zeros(math.prod(shape), dtype=np.int64)
            np.add.at(table, flat, counts[hit])
            out[s] = (order, table.reshape(shape))
        return out

    def undeclared(self, source: Path, schema: Schema) -> dict[str, list[tuple[str, int]]]:
        """As :meth:`Engine.undeclared`, from the distinct values of ``source``'s declared columns (``GROUPING SETS``
        scans)."""
        src, names = _source(source, schema)
        columns = [c for c in schema.columns if c.name in names]
        checked_shape(source, schema, names)
        with _connection(source) as con:
            _, distinct = _distinct(con, src, columns, source)
        return undeclared_values(columns, distinct, frozenset(schema.missing_values))
