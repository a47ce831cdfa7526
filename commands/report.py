"""``sdgov report utility``: the full utility report for a synthetic file, outside the release flow.

    sdgov report utility --spec FILE --synthetic FILE [--out DIR] [--json] [--fast] [--no-baselines]

The synthetic file (Parquet or CSV, schema codes as released) must hold exactly the agreed attributes and only
declared categories; anything else is refused with one ``SdgovError`` line and exit status 2. The real data is
the spec's dataset (or ``--data``). ``--json`` prints every measure as JSON on stdout; ``--out`` also writes
``utility_report.json`` and ``utility_report.html`` there.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sdgov.commands._common import Parents, command, emit


def cmd_report(args: argparse.Namespace) -> int:
    """Print (``--json``: every measure) and with ``--out`` write the utility report of ``--synthetic``; exit 0.

    Both record sets are read as the utility stage reads them, at any size: the real data's encoded cells and the
    synthetic file validated and encoded out of core by the embedded engine (exact tables counted in one scan of
    each, models on a bounded sample), never whole in memory. A synthetic file with other attributes or undeclared
    categories is refused (exit 2)."""
    import tempfile

    from sdgov.agreement.load import load_spec
    from sdgov.base.errors import DataError
    from sdgov.base.hashing import sha256_file
    from sdgov.engines.duckdb_engine import DuckDBEngine
    from sdgov.engines.recordset import ParquetRecords
    from sdgov.intake.inputs import validated_data
    from sdgov.utility.report import FAST, ReportSettings, build_report, write_report

    loaded = load_spec(args.spec)
    agreement, schema = loaded.agreement, loaded.schema_
    attrs = agreement.attributes
    synthetic = Path(args.synthetic)
    if not synthetic.is_file():
        raise DataError("synthetic file not found", str(synthetic), "give the path of a released synthetic.parquet")
    if synthetic.suffix.lower() not in (".parquet", ".pq", ".csv"):
        raise DataError(f"unknown file type {synthetic.suffix or '(none)'}", str(synthetic), "give a .parquet or .csv")
    data = Path(args.data).resolve() if args.data else loaded.data_path
    real = validated_data(data, schema, loaded.spec.engine)
    settings = FAST if args.fast else ReportSettings()
    if args.no_baselines:
        from dataclasses import replace

        settings = replace(settings, baselines=False)
    meta = {
        "spec_name": agreement.spec_name,
        "agreement_sha256": agreement.sha256(),
        "synthetic_sha256": sha256_file(synthetic),
        "synthetic_file": str(synthetic.resolve()),
    }
    rows, seed = settings.sample_rows, settings.seed
    with tempfile.TemporaryDirectory(prefix="sdgov-report-") as scratch:  # private, not beside a released file
        cells = Path(scratch) / "synthetic_codes.parquet"
        DuckDBEngine().encode_columns(synthetic, schema, attrs, cells)
        report = build_report(
            ParquetRecords(real.codes_path, schema, attrs, rows, seed),
            ParquetRecords(cells, schema, attrs, rows, seed),
            schema,
            attrs,
            agreement.cliques,
            loaded.spec.tasks,
            meta=meta,
            settings=settings,
        )
    written = write_report(report, args.out) if args.out else None
    files = {"files": [str(written.json), str(written.html)]} if written else {}
    human = report.fitness["statement"] + (f"\n  report: {written.html}\n  json:   {written.json}" if written else "")
    emit(args, {**report.as_json(), **files}, human, indent=1, ensure_ascii=False)
    return 0


HELP = "utility report of a synthetic file against the real data (all measures)"


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``report utility``."""
    r = command(subparsers, parents, "report", cmd_report, HELP, [parents.spec, parents.data])
    r.add_argument("kind", choices=["utility"])
    r.add_argument("--synthetic", required=True, help="synthetic.parquet (or CSV) with the agreed attributes")
    r.add_argument("--out", help="directory for utility_report.json and utility_report.html")
    r.add_argument("--fast", action="store_true", help="smaller SPECKS/permutation settings")
    r.add_argument("--no-baselines", action="store_true", help="skip the independent and bootstrap baselines")
