"""Reading data files and encoding them against the declared schema — and decoding codes back.

Encoding maps each value to its index in the declared category list (or bin), which is what the marginal counts,
the model and the sampler work with; decoding maps indices back to the schema's codes. Every value is read as
text: types are the schema's business, never pandas' guesses; a value outside the declared domain is refused
with the column and the first offending rows, never added to the domain (:mod:`sdgov.data.schema`).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sdgov.base.errors import DataError, shorten
from sdgov.data.schema import MAX_COLUMNS, MAX_HEADER_BYTES, Column, Schema, nfc, repeated


def read_csv_strict(path: str | Path) -> pd.DataFrame:
    """Read every value as text: types are the schema's business, never pandas' guesses."""
    path = Path(path)
    if not path.is_file():
        raise DataError("data file not found", str(path), "check the 'dataset.path' in the spec")
    header = csv_header(path)  # checked before pandas sees the file: a 200k-column header would take gigabytes
    if header:
        csv_shape(path, len(header))  # a ragged row: pandas would pad it, or shift it into the index
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""], engine="c", index_col=False)
    except pd.errors.EmptyDataError:
        raise DataError(
            "the file is empty (no header, no rows)", str(path), "export the data with a header row"
        ) from None
    except UnicodeDecodeError:
        raise DataError(
            f"not UTF-8 text (first bad byte on line {first_non_utf8_line(path)})",
            str(path),
            "export the file as UTF-8 CSV",
        ) from None
    except pd.errors.ParserError as exc:
        first = str(exc).strip().splitlines()[0]
        raise DataError(f"not a readable CSV ({first})", str(path), "export as UTF-8 CSV with one header row") from None
    df.columns = pd.Index(header if len(header) == len(df.columns) else [nfc(str(c)) for c in df.columns])
    return df


def csv_header(path: Path) -> list[str]:
    """The header row, NFC-normalised, within the width cap and without duplicates."""
    with open(path, "rb") as f:
        raw = f.readline(MAX_HEADER_BYTES + 1)
    raw = raw.split(b"\r", 1)[0]  # a file whose lines end in CR alone: readline found no LF
    try:
        first = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(
            "not UTF-8 text (first bad byte on line 1)", str(path), "export the file as UTF-8 CSV"
        ) from None
    if len(raw) > MAX_HEADER_BYTES or first.count(",") >= MAX_COLUMNS:
        raise DataError(
            f"the header row is wider than {MAX_COLUMNS:,} columns or {MAX_HEADER_BYTES // 2**20} MiB",
            str(path),
            "is it the right file? export only the schema's columns",
        )
    try:
        header = [nfc(c) for c in next(csv.reader([first]), [])]
    except csv.Error:
        return []  # pandas reports the malformed file below
    dup = repeated(header)
    if dup:
        raise DataError(
            f"duplicate column header(s) {shorten(repr(dup), 120)}", str(path), "give every column a unique name"
        )
    return header


SHAPE_CHUNK = 16 * 2**20
"""Bytes of the file :func:`csv_shape` looks at in one step (its memory is a few times this, whatever N)."""


@dataclass(frozen=True)
class CsvShape:
    """What :func:`csv_shape` learnt of a CSV: its line break and the first line holding a quoted line break."""

    newline: str  # "\n", "\r\n" or "\r" (the first record's; "\n" for a file of one line)
    quoted_break_line: int  # 0: no field holds a line break


def csv_shape(path: Path, fields: int, header: bool = True) -> CsvShape:
    """Check, in one streaming pass, that every record of the CSV ``path`` has ``fields`` fields (RFC 4180: a
    comma or a line break inside double quotes belongs to its field; blank lines are skipped, as the parsers
    skip them). A ragged record is refused with one line naming its row (and line); the readers would pad a short
    one with empty fields, or drop an extra field that is empty. Line breaks may be LF, CRLF or CR alone."""
    quote, comma, lf, cr = 34, 44, 10, 13
    inside = 0  # 1: the chunk starts inside a quoted field
    commas = content = 0  # of the record in progress (carried over chunk boundaries)
    line = start_line = 1  # the physical line the chunk starts on; the one the record in progress began on
    record = 0  # records seen so far, header included
    newline, quoted_break = "", 0
    with open(path, "rb") as f:
        while chunk := f.read(SHAPE_CHUNK):
            if chunk.endswith(b"\r"):  # keep a CRLF in one chunk
                chunk += f.read(1)
            b = np.frombuffer(chunk, np.uint8)
            cr_at = np.flatnonzero(b == cr)
            after = np.minimum(cr_at + 1, b.size - 1)
            lone_cr = cr_at[(cr_at + 1 >= b.size) | (b[after] != lf)]
            breaks = np.union1d(np.flatnonzero(b == lf), lone_cr)  # where a line ends (CRLF: at its LF)
            comma_at = np.flatnonzero(b == comma)
            quote_at = np.flatnonzero(b == quote)
            if quote_at.size:  # a byte is inside quotes after an odd number of quotes (RFC 4180: "" is two)
                in_break = ((np.searchsorted(quote_at, breaks) + inside) & 1).astype(bool)
                comma_at = comma_at[((np.searchsorted(quote_at, comma_at) + inside) & 1) == 0]
            else:
                in_break = np.full(breaks.size, bool(inside))
                comma_at = comma_at[:0] if inside else comma_at
            if not quoted_break and in_break.any():
                quoted_break = line + int(np.argmax(in_break))
            ends = breaks[~in_break]
            if ends.size:
                if not newline:
                    e = int(ends[0])
                    newline = "\r" if b[e] == cr else ("\r\n" if e > 0 and b[e - 1] == cr else "\n")
                per_commas = np.diff(np.searchsorted(comma_at, ends), prepend=0)
                per_commas[0] += commas
                crlf = (b[ends] == lf) & (ends > 0) & (b[np.maximum(ends - 1, 0)] == cr)
                length = np.diff(ends, prepend=-1) - 1 - crlf
                length[0] += content
                kept = length > 0  # a blank line is skipped, as the parsers skip it
                bad = np.flatnonzero(kept & (per_commas != fields - 1))
                if bad.size:
                    k = int(bad[0])
                    start = start_line if k == 0 else line + int(np.searchsorted(breaks, ends[k - 1])) + 1
                    found = int(per_commas[k]) + 1
                    _ragged(path, record + int(np.count_nonzero(kept[:k])), start, found, fields, header)
                record += int(np.count_nonzero(kept))
                last = int(ends[-1])
                start_line = line + int(np.searchsorted(breaks, last)) + 1
                commas = int(comma_at.size - np.searchsorted(comma_at, last, side="right"))
                content = b.size - last - 1
            else:
                commas += int(comma_at.size)
                content += b.size
            line += int(breaks.size)
            inside = (inside + int(quote_at.size)) & 1
    if content and commas != fields - 1:
        _ragged(path, record, start_line, commas + 1, fields, header)
    return CsvShape(newline=newline or "\n", quoted_break_line=quoted_break)


def _ragged(path: Path, record: int, line: int, found: int, fields: int, header: bool) -> None:
    row = record if header else record + 1  # data rows count from 1, after the header
    what = "the header" if header and record == 0 else f"row {row:,} (line {line:,})"
    raise DataError(
        f"{what} has {found:,} field(s), but the file has {fields:,} column(s)",
        str(path),
        "give every row exactly one field per column (no extra or missing commas; quote a field that holds one)",
    )


def first_non_utf8_line(path: Path) -> int:
    """1-based number of the first line of ``path`` that is not valid UTF-8; 0 when every line is."""
    with open(path, "rb") as f:
        for i, line in enumerate(f, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return i
    return 0


def encode(df: pd.DataFrame, schema: Schema, where: str = "data", columns: list[str] | None = None) -> pd.DataFrame:
    """Validate ``df`` against ``schema`` and return cell indices (int32), columns in schema order.

    ``columns`` restricts the check to those schema columns (synthetic data holds only the modelled ones);
    by default every schema column and identifier must be present, and nothing else.
    Raises one :class:`DataError` naming the first offending column, its bad values and how many rows are hit.
    """
    wanted = check_file_columns(list(df.columns), schema, where, columns)
    if len(df) == 0:
        raise DataError("no data rows", where, "the file has a header but no records")
    problems: list[str] = []
    out = {}
    missing = frozenset(schema.missing_values)
    for col in wanted:
        values = df[col.name]
        codes, problem = _encode_column(values, col, missing)
        if problem:
            problems.append(problem)
        out[col.name] = codes
    for lk in schema.lookup_index():
        if lk.column in df.columns and lk.source in out and not problems:
            derived_codes, problem = _encode_column(df[lk.column], schema.by_name[lk.column])
            wrong = ~np.equal(derived_codes, lk.index[out[lk.source]]) if not problem else np.empty(0)
            if problem or wrong.any():
                problems.append(
                    problem
                    or f"column {lk.column!r}: {int(wrong.sum())} row(s) disagree with the lookup from "
                    f"{lk.source!r} (first at row {int(np.argmax(wrong)) + 1})"
                )
    if problems:
        more = f" (and {len(problems) - 1} more problem(s) in other columns)" if len(problems) > 1 else ""
        raise DataError(problems[0] + more, where, "fix the data, or the schema if the public documentation allows it")
    return pd.DataFrame(out, index=pd.RangeIndex(len(df)))


def check_file_columns(names: list[str], schema: Schema, where: str, columns: list[str] | None = None) -> list[Column]:
    """The schema columns to encode, after checking the file has exactly the columns it must: every schema
    column and identifier (or only ``columns`` when given), optionally the lookup columns (checked against their
    table, never encoded), and nothing else. One :class:`DataError` otherwise."""
    derived = schema.derived  # lookup columns: optional in the data, checked against their table, never encoded
    wanted = [c for c in schema.columns if (columns is None or c.name in columns) and c.name not in derived]
    required = [c.name for c in wanted] + (schema.identifiers if columns is None else [])
    attached = [c for c, src in derived.items() if columns is None or src in columns]
    expected = set(required) | set(attached)
    missing = [c for c in required if c not in names]
    if missing:
        raise DataError(f"missing column(s) {missing}", where, "add them, or fix the names in the schema")
    extra = [c for c in names if c not in expected]
    if extra:
        raise DataError(
            f"column(s) {extra} are not in schema {schema.name!r}",
            where,
            "declare them in the schema (or under 'identifiers' if they are IDs), or drop them from the data",
        )
    return wanted


def _encode_column(values: pd.Series, col: Column, missing: frozenset[str] = frozenset()) -> tuple[np.ndarray, str]:
    """Validate and encode one column. Work is done once per *distinct* value (a column has a few dozen),
    then broadcast to the rows: this keeps encoding at millions of rows per second."""
    inverse, uniques = pd.factorize(values, use_na_sentinel=True)
    rows = np.bincount(inverse[inverse >= 0], minlength=len(uniques))  # rows holding each distinct value
    nulls = int((inverse < 0).sum())
    distinct = [*(str(u) for u in uniques), *([None] if nulls else [])]
    cells, problem = encode_distinct(distinct, np.append(rows, [nulls] if nulls else []).astype(np.int64), col, missing)
    if problem:
        return np.empty(0), problem
    return cells[np.where(inverse < 0, len(uniques), inverse)].astype(np.int32), ""


def encode_distinct(
    values: list[str | None], rows: np.ndarray, col: Column, missing: frozenset[str] = frozenset()
) -> tuple[np.ndarray, str]:
    """The cell index of each *distinct* raw value of a column (``None``: an empty field), given how many rows
    hold it, or the first problem found. The one place a data value becomes a cell: the in-memory encoder and
    the out-of-core engines (:mod:`sdgov.engines`) both call it, so they encode alike.

    A value that is empty or, after trimming, one of the schema's ``missing_values`` tokens is missing: it is
    the column's ``missing_as`` category if declared, else the missing cell of a ``nullable`` column, else refused.
    """
    text = [None if v is None else nfc(v).strip() for v in values]
    null = np.array([t is None or t in missing for t in text], dtype=bool)
    out = np.zeros(len(text), dtype=np.int64)
    if null.any():
        if col.missing_as is not None:
            out[null] = [str(c.code) for c in col.categories].index(str(col.missing_as))  # type: ignore[union-attr]
        elif col.nullable:
            out[null] = col.size - 1
        else:
            what = "empty/NaN" if not missing else "empty/NaN or missing-token"
            return np.empty(0), f"column {col.name!r}: {int(rows[null].sum())} {what} value(s) where none are allowed"
    present = ~null
    if present.any():
        idx, problem = _encode_distinct(
            pd.Series([t for t, n in zip(text, null) if not n], dtype=object), rows[present], col
        )
        if problem:
            return np.empty(0), problem
        out[present] = idx
    return out, ""


def _encode_distinct(text: pd.Series, rows: np.ndarray, col: Column) -> tuple[np.ndarray, str]:
    """Cell index of each distinct value, or the first problem found."""
    if col.kind == "categorical":
        keys = [str(c.code) for c in col.categories]  # type: ignore[union-attr]
        if col.integer_codes:
            bad = ~text.str.fullmatch(r"[+-]?\d+").to_numpy(dtype=bool)
            if bad.any():
                return np.empty(0), _bad(
                    col, text[bad], rows[bad], "non-integer value(s) for integer codes (wrong type)"
                )
            text = text.str.lstrip("+").str.replace(r"^(-?)0+(\d)", r"\1\2", regex=True)
        idx = pd.Index(keys).get_indexer(pd.Index(text))
        unknown = idx < 0
        if unknown.any():
            return np.empty(0), _bad(col, text[unknown], rows[unknown], "value(s) not among the declared categories")
        return idx, ""
    nums = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    by_label = np.full(len(text), -1)
    if col.rule == "label":  # the released file holds bin labels: they read back as their bins
        by_label = pd.Index([nfc(x).strip() for x in col.labels()[: col.size - int(col.nullable)]]).get_indexer(
            pd.Index(text)
        )
    bad = ~np.isfinite(nums) & (by_label < 0)
    if bad.any():
        return np.empty(0), _bad(col, text[bad], rows[bad], "non-numeric value(s) (wrong type)")
    edges = np.asarray(col.bins, dtype=float)
    out_of_range = ((nums < edges[0]) | (nums >= edges[-1])) & (by_label < 0)
    if out_of_range.any():
        top = "∞)" if math.isinf(edges[-1]) else f"{edges[-1]:g}) — bins are left-closed, the top edge is outside"
        return np.empty(0), _bad(
            col, text[out_of_range], rows[out_of_range], f"value(s) outside the declared range [{edges[0]:g}, {top}"
        )
    found = np.searchsorted(edges, np.where(by_label < 0, nums, edges[0]), side="right") - 1
    return np.where(by_label < 0, np.clip(found, 0, len(edges) - 2), by_label), ""


def _bad(col: Column, values: pd.Series, rows: np.ndarray, what: str) -> str:
    order = np.argsort(-rows, kind="stable")
    shown = ", ".join(shorten(repr(v), 40) for v in values.iloc[order[:5]]) + (", …" if len(order) > 5 else "")
    return f"column {col.name!r}: {what}: {shown} in {int(rows.sum())} row(s)"


def decode(codes: dict[str, np.ndarray] | pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Map cell indices back to the schema's codes (integer codes stay integers); a lookup column not given is
    derived from its source by the table."""
    out = {}
    lookups = {lk.column: lk for lk in schema.lookup_index()}
    for col in schema.columns:
        derive = col.name in lookups and col.name not in codes
        idx = (
            lookups[col.name].index[np.asarray(codes[lookups[col.name].source])]
            if derive
            else np.asarray(codes[col.name])
        )
        lookup = col.codes()
        if col.integer_codes and not col.nullable:
            out[col.name] = np.asarray(lookup, dtype=np.int64)[idx]
        elif col.released_numbers:
            out[col.name] = pd.array(np.asarray(lookup, dtype=object)[idx], dtype="Float64")
        else:
            out[col.name] = pd.array(
                np.asarray(lookup, dtype=object)[idx], dtype="string" if not col.integer_codes else "Int64"
            )
    return pd.DataFrame(out)
