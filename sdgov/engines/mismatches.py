"""``sdgov schema check``: what a data file holds that its schema does not declare — every column's undeclared
values with their row counts, the file's columns the schema lacks and the schema's columns the file lacks. It comes
from the confidential data: for the controller's terminal only, never written anywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sdgov.data.schema import Schema


def schema_mismatches(data: Path, schema: Schema, engine_name: str = "duckdb") -> dict[str, Any]:
    """What ``data`` holds that ``schema`` does not declare, counted by the engine a release uses (``engine_name``):
    ``columns_not_in_schema``, ``schema_columns_not_in_data`` and ``undeclared_values`` (column → each value with
    its rows). A file that cannot be read is one line."""
    from sdgov.engines import engine
    from sdgov.engines.duckdb_engine import source_columns

    names = source_columns(data, schema)
    expected = schema.file_columns
    return {
        "data": str(data),
        "columns_not_in_schema": [n for n in names if n not in expected],
        "schema_columns_not_in_data": [n for n in expected if n not in names],
        "undeclared_values": {
            col: [{"value": v, "rows": n} for v, n in values]
            for col, values in engine(engine_name).undeclared(data, schema).items()
        },
    }
