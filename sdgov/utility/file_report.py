"""``sdgov report utility``: the full utility report of a synthetic file against the real data, outside a release.

Both record sets are read as the utility stage reads them, at any size: the real data's cells and the synthetic
file validated and encoded out of core by the engine (exact tables counted in one scan of each, models on a bounded
sample), never whole in memory, in a private scratch folder that is removed afterwards.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from sdgov.agreement.load import LoadedSpec
from sdgov.base.errors import DataError
from sdgov.base.hashing import sha256_file
from sdgov.utility.report import FAST, ReportSettings, UtilityReport, build_report


def report_of_file(
    loaded: LoadedSpec, synthetic: Path, data: Path | None = None, fast: bool = False, baselines: bool = True
) -> UtilityReport:
    """The utility report of ``synthetic`` (Parquet or CSV, schema codes as released) against the spec's real data
    (``data``: another file); ``fast``: smaller SPECKS/permutation settings; ``baselines``: the independent and
    bootstrap baselines too. A missing file, another file type, other attributes or undeclared categories are one
    line."""
    from sdgov.engines import engine
    from sdgov.engines.duckdb_engine import DuckDBEngine
    from sdgov.engines.recordset import ParquetRecords

    agreement, schema = loaded.agreement, loaded.schema_
    attrs = agreement.attributes
    if not synthetic.is_file():
        raise DataError("synthetic file not found", str(synthetic), "give the path of a released synthetic.parquet")
    if synthetic.suffix.lower() not in (".parquet", ".pq", ".csv"):
        raise DataError(f"unknown file type {synthetic.suffix or '(none)'}", str(synthetic), "give a .parquet or .csv")
    settings = FAST if fast else ReportSettings()
    if not baselines:
        settings = replace(settings, baselines=False)
    meta = {
        "spec_name": agreement.spec_name,
        "agreement_sha256": agreement.sha256(),
        "synthetic_sha256": sha256_file(synthetic),
        "synthetic_file": str(synthetic.resolve()),
    }
    rows, seed = settings.sample_rows, settings.seed
    with tempfile.TemporaryDirectory(prefix="sdgov-report-") as scratch:  # private, not beside a released file
        real = engine(loaded.spec.engine).encode(data or loaded.data_path, schema, Path(scratch) / "codes.parquet")
        cells = Path(scratch) / "synthetic_codes.parquet"
        DuckDBEngine().encode_columns(synthetic, schema, attrs, cells)
        return build_report(
            ParquetRecords(real.path, schema, attrs, rows, seed),
            ParquetRecords(cells, schema, attrs, rows, seed),
            schema,
            attrs,
            agreement.cliques,
            loaded.spec.tasks,
            meta=meta,
            settings=settings,
        )
