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
    """Print (``--json``: every measure) and with ``--out`` write the utility report of ``--synthetic``
    (:func:`sdgov.utility.file_report.report_of_file`); exit 0. A synthetic file with other attributes or undeclared
    categories is refused (exit 2)."""
    from sdgov.agreement.load import load_spec
    from sdgov.utility.file_report import report_of_file
    from sdgov.utility.report import write_report

    loaded = load_spec(args.spec)
    data = Path(args.data).resolve() if args.data else None
    report = report_of_file(loaded, Path(args.synthetic), data, fast=args.fast, baselines=not args.no_baselines)
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
