"""What every engine decides the same way once it has counted: refusals, lookup agreement, undeclared values.

An engine's job is to count (distinct values per column, distinct (source, lookup) pairs); turning those counts
into a verdict is engine-independent, so it lives here and each engine calls it — the embedded and the
distributed engine then refuse the same data with the same line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sdgov.base.errors import DataError
from sdgov.data.encoding import CsvShape, csv_shape, encode_distinct
from sdgov.data.schema import Column, Schema
from sdgov.data.structures import LookupIndex


def checked_shape(source: Path, schema: Schema, names: list[str]) -> CsvShape | None:
    """A CSV source's shape (:func:`sdgov.data.encoding.csv_shape`), a ragged row refused in one line; None for
    Parquet. Every engine calls it before reading a record, so all refuse the same file with the same line."""
    if source.suffix.lower() == ".parquet":
        return None
    return csv_shape(source, len(names), schema.header)


Distinct = dict[str, tuple[list[str | None], np.ndarray]]
"""Per column, its distinct raw values (``None``: an empty field) and the row count of each."""


def refuse(problems: list[str], where: str) -> None:
    """One :class:`DataError` for the first problem found (saying how many more there are), or nothing."""
    if problems:
        more = f" (and {len(problems) - 1} more problem(s) in other columns)" if len(problems) > 1 else ""
        raise DataError(problems[0] + more, where, "fix the data, or the schema if the public documentation allows it")


def lookup_problem(
    lk: LookupIndex,
    schema: Schema,
    pairs: tuple[list[str | None], list[str | None]],
    counts: np.ndarray,
    firsts: np.ndarray,
    missing: frozenset[str],
) -> str:
    """The distinct (source, lookup column) raw pairs of a file, each with its row count and first row (1-based),
    checked against the public table: the first problem, or ``""``."""
    sides = []
    for values, name in zip(pairs, (lk.source, lk.column)):
        cells, problem = encode_distinct(values, counts, schema.by_name[name], missing)
        if problem:
            return problem
        sides.append(cells)
    wrong = sides[1] != lk.index[sides[0]]
    if not wrong.any():
        return ""
    return (
        f"column {lk.column!r}: {int(counts[wrong].sum())} row(s) disagree with the lookup from "
        f"{lk.source!r} (first at row {int(firsts[wrong].min())})"
    )


def undeclared_values(
    columns: list[Column], distinct: Distinct, missing: frozenset[str]
) -> dict[str, list[tuple[str, int]]]:
    """Per column, the values the schema does not declare with their row counts, most frequent first."""
    out: dict[str, list[tuple[str, int]]] = {}
    for col in columns:
        values, counts = distinct[col.name]
        if not encode_distinct(values, counts, col, missing)[1]:
            continue  # the whole column fits: nothing to list
        bad = [
            ("" if v is None else v, int(n))
            for v, n in zip(values, counts)
            if encode_distinct([v], np.array([n]), col, missing)[1]
        ]
        out[col.name] = sorted(bad, key=lambda vn: -vn[1])
    return out
