"""Reading a released synthetic file back as cell indices: the one reader, for the CLI's ``report utility`` and
any stage that needs the synthetic records in memory (at scale, :func:`sdgov.artifacts.synthetic_records`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sdgov.base.errors import DataError
from sdgov.data.encoding import encode, read_csv_strict
from sdgov.data.schema import Schema


def read_synthetic(path: str | Path, schema: Schema, attributes: list[str]) -> pd.DataFrame:
    """Read and encode a released synthetic file (Parquet or CSV, schema codes as released); refuses (DataError)
    a missing or unreadable file, another file type, and a file that does not match the schema."""
    p = Path(path)
    if not p.is_file():
        raise DataError("synthetic file not found", str(p), "give the path of a released synthetic.parquet or CSV")
    if p.suffix.lower() in (".parquet", ".pq"):
        try:
            df = pd.read_parquet(p)
        except Exception as exc:  # pyarrow raises many types for a non-Parquet file
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DataError(
                f"not a readable Parquet file ({first})", str(p), "give the released synthetic.parquet"
            ) from None
        df = df.astype(dict.fromkeys(df.columns, "string")) if len(df.columns) else df
    elif p.suffix.lower() == ".csv":
        df = read_csv_strict(p)
    else:
        raise DataError(f"unknown file type {p.suffix or '(none)'}", str(p), "give a .parquet or .csv file")
    return encode(df, schema, where=str(p), columns=attributes)
