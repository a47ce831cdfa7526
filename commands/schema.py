"""``sdgov schema check``: what in a data file the schema does not declare — for the data controller's eyes only.

    sdgov schema check --schema FILE --data FILE [--json]
    sdgov schema check --spec FILE [--data FILE] [--json]

A release refuses data that does not fit its schema, naming the first few bad values. When a real file is first
brought in (e.g. UCI Adult, whose documentation lists categories the file spells differently), the controller
needs the whole list to fix the schema *from the public documentation*: every column's undeclared values with
their row counts, every column the file has that the schema lacks, and every schema column the file lacks.

The list comes from the confidential data, so it is printed on the controller's terminal only: nothing is written
(no file, no registry event, no artifact, nothing on a card), and values must never be copied into the schema
from here unless the public documentation lists them. Exit status 0 when everything is declared, 1 when something
is listed, 2 (one error line) when the files cannot be read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sdgov.base.errors import SpecError
from sdgov.commands._common import Parents, command, emit

SHOWN = 50  # values listed per column in the human output (all of them with --json)


def cmd_schema(args: argparse.Namespace) -> int:
    """List on this terminal what the data file holds that the schema does not declare
    (:func:`sdgov.engines.mismatches.schema_mismatches`): exit 0 nothing, 1 something.

    Nothing is written anywhere. Neither ``--spec`` nor ``--schema`` with ``--data`` is a ``SpecError`` (exit 2)."""
    from sdgov.data.schema import load_schema
    from sdgov.engines.mismatches import schema_mismatches

    if args.spec:
        from sdgov.agreement.load import load_spec

        loaded = load_spec(args.spec)
        schema, data = loaded.schema_, Path(args.data).resolve() if args.data else loaded.data_path
        engine_name = loaded.spec.engine
    elif args.schema and args.data:
        schema, data, engine_name = load_schema(args.schema), Path(args.data), "duckdb"
    else:
        raise SpecError("nothing to check", "sdgov schema check", "give --spec FILE, or --schema FILE and --data FILE")
    found = schema_mismatches(data, schema, engine_name)
    clean = not (found["columns_not_in_schema"] or found["schema_columns_not_in_data"] or found["undeclared_values"])
    lines = [f"{data} against schema {schema.name!r} — for the data controller only: do not copy these values anywhere"]
    if clean:
        lines.append("ok: every column and value is declared")
    if found["columns_not_in_schema"]:
        lines.append(f"columns not in the schema: {found['columns_not_in_schema']}")
    if found["schema_columns_not_in_data"]:
        lines.append(f"schema columns missing from the data: {found['schema_columns_not_in_data']}")
    for col, values in found["undeclared_values"].items():
        shown = ", ".join(
            f"{v['value']!r} ({v['rows']} rows)" if v["value"] else f"(empty) ({v['rows']} rows)"
            for v in values[:SHOWN]
        )
        more = f", … {len(values) - SHOWN} more" if len(values) > SHOWN else ""
        lines.append(f"column {col!r}: {len(values)} undeclared value(s): {shown}{more}")
    if not clean:
        lines.append("fix the schema from the public documentation (or declare missing-value tokens), then check again")
    emit(args, {"ok": clean, **found}, "\n".join(lines))
    return 0 if clean else 1


HELP = "list the values in a data file that the schema does not declare (controller only)"


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``schema check``."""
    s = command(subparsers, parents, "schema", cmd_schema, HELP)
    s.add_argument("action", choices=["check"])
    s.add_argument("--schema", help="the schema file (with --data)")
    s.add_argument("--data", help="the data file (CSV or Parquet); with --spec, overrides its dataset path")
    s.add_argument("--spec", help="a release spec: its schema and dataset")
