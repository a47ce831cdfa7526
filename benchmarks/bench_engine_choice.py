#!/usr/bin/env python
"""DuckDB or Polars streaming for out-of-core measurement (issue 15 item 1): the choice, by measurement.

    python benchmarks/bench_engine_choice.py --csv /tmp/c5m.csv --parquet /tmp/c5m.parquet --json OUT

The workload is what the measure stage does for App 3 (``examples/census2011/app3.yaml``): the grouped counts of
its 21 two-way marginals over 7 attributes, over a census-like file (``benchmarks/census_like.py``), as CSV (every
value read as text, as validation needs) and as Parquet. Each (engine, format) runs in a fresh subprocess, twice
(best time kept); peak memory is that subprocess's ``ru_maxrss``. Both engines get the same 2 threads. DuckDB runs
all 21 marginals as one ``GROUPING SETS`` query (one scan); Polars runs 21 lazy ``group_by`` queries through
``collect_all(engine="streaming")`` (it shares the scan where its optimiser can).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ATTRS = ["Health", "Hours worked per week", "Age", "Marital Status", "Occupation", "Industry", "Region"]
PAIRS = list(itertools.combinations(ATTRS, 2))
THREADS = 2


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def run_duckdb(path: str) -> int:
    import duckdb

    con = duckdb.connect(config={"threads": THREADS, "memory_limit": "1GB", "preserve_insertion_order": False})
    src = f"read_csv('{path}', header=true, all_varchar=true)" if path.endswith(".csv") else f"read_parquet('{path}')"
    cols = ", ".join(q(a) for a in ATTRS)
    sets = ", ".join("(" + ", ".join(q(a) for a in p) + ")" for p in PAIRS)
    rows = con.sql(f"SELECT {cols}, GROUPING_ID({cols}) AS g, count(*) AS n FROM {src} GROUP BY GROUPING SETS ({sets})")
    return len(rows.fetchall())


def run_polars(path: str) -> int:
    os.environ["POLARS_MAX_THREADS"] = str(THREADS)
    import polars as pl

    lf = pl.scan_csv(path, infer_schema=False) if path.endswith(".csv") else pl.scan_parquet(path)
    frames = pl.collect_all([lf.group_by(list(p)).len() for p in PAIRS], engine="streaming")
    return sum(len(f) for f in frames)


def worker(engine: str, path: str) -> None:
    t0 = time.perf_counter()
    cells = (run_duckdb if engine == "duckdb" else run_polars)(path)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "peak_rss_bytes": peak, "cells": cells}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--parquet", required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--worker", nargs=2)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    out: dict[str, object] = {
        "command": " ".join(["python", *sys.argv]),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "rows": args.rows,
        "marginals": len(PAIRS),
        "threads": THREADS,
        "load_start": os.getloadavg(),
        "results": [],
    }
    import duckdb
    import polars

    out["versions"] = {"duckdb": duckdb.__version__, "polars": polars.__version__}
    for fmt, path in (("parquet", args.parquet), ("csv", args.csv)):
        for engine in ("duckdb", "polars"):
            runs = []
            for _ in range(args.repeats):
                res = subprocess.run(
                    [sys.executable, __file__, "--csv", "-", "--parquet", "-", "--rows", "0", "--worker", engine, path],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
            best = min(runs, key=lambda r: r["seconds"])
            row = {
                "engine": engine,
                "format": fmt,
                **best,
                "peak_rss_max_bytes": max(r["peak_rss_bytes"] for r in runs),
            }
            print(row, flush=True)
            out["results"].append(row)  # type: ignore[union-attr]
    out["load_end"] = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
