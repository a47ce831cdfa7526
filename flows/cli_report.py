"""``sdgov report utility``: the full utility report for a synthetic file, outside the release flow.

    sdgov report utility --spec FILE --synthetic FILE [--out DIR] [--json] [--fast] [--no-baselines]

The synthetic file (Parquet or CSV, schema codes as released) must hold exactly the agreed attributes and only
declared categories; anything else is refused with one ``SdgovError`` line and exit status 2. The real data is
the spec's dataset (or ``--data``). ``--json`` prints every measure as JSON on stdout; ``--out`` also writes
``utility_report.json`` and ``utility_report.html`` there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from sdgov.base.errors import DataError

if TYPE_CHECKING:
    import pandas as pd


def read_synthetic(path: str | Path, schema, attributes: list[str]) -> pd.DataFrame:
    """Read and encode a released synthetic file; refuses (DataError) a file that does not match the schema."""
    import pandas as pd

    from sdgov.data.schema import encode, read_csv_strict

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


def cmd_report(args: argparse.Namespace) -> int:
    from sdgov.agreement.load import load_spec
    from sdgov.base.hashing import sha256_file
    from sdgov.intake.inputs import validated_data
    from sdgov.utility.report import FAST, ReportSettings, build_report, write_report

    loaded = load_spec(args.spec)
    agreement = loaded.agreement
    synth = read_synthetic(args.synthetic, loaded.schema_, agreement.attributes)
    data = Path(args.data).resolve() if getattr(args, "data", None) else loaded.data_path
    real = validated_data(data, loaded.schema_, loaded.spec.engine).codes
    settings = FAST if args.fast else ReportSettings()
    if args.no_baselines:
        from dataclasses import replace

        settings = replace(settings, baselines=False)
    meta = {
        "spec_name": agreement.spec_name,
        "agreement_sha256": agreement.sha256(),
        "synthetic_sha256": sha256_file(args.synthetic),
        "synthetic_file": str(Path(args.synthetic).resolve()),
    }
    report = build_report(
        real,
        synth,
        loaded.schema_,
        agreement.attributes,
        agreement.cliques,
        loaded.spec.tasks,
        meta=meta,
        settings=settings,
    )
    written = write_report(report, args.out) if args.out else None
    if args.json:
        files = {"files": [str(written.json), str(written.html)]} if written else {}
        print(json.dumps({**report.as_json(), **files}, indent=1, ensure_ascii=False))
    else:
        print(report.fitness["statement"])
        if written:
            print(f"  report: {written.html}\n  json:   {written.json}")
    return 0


def add_parser(add) -> None:
    """Register ``report`` with the CLI's ``add(name, fn, help)`` helper (see flows/cli.py)."""
    r = add("report", cmd_report, "utility report of a synthetic file against the real data (all measures)")
    r.add_argument("kind", choices=["utility"])
    r.add_argument("--spec", required=True)
    r.add_argument("--synthetic", required=True, help="synthetic.parquet (or CSV) with the agreed attributes")
    r.add_argument("--data", help="override the spec's dataset path")
    r.add_argument("--out", help="directory for utility_report.json and utility_report.html")
    r.add_argument("--fast", action="store_true", help="smaller SPECKS/permutation settings")
    r.add_argument("--no-baselines", action="store_true", help="skip the independent and bootstrap baselines")
