#!/usr/bin/env python
"""The embedded engine (DuckDB) against the distributed one (Dask on a local cluster), stage by stage (issue 15).

    nice -n 19 python benchmarks/bench_engines_cluster.py --rows 200000 \\
        --json benchmarks/results/engines-cluster-2026-11-23.json

A census-like file of ``--rows`` records (:mod:`benchmarks.census_like`: the ONS extract expanded by perturbation,
no real record copied) is written as CSV and as Parquet under /tmp. For each format, each engine runs what a
release runs: ``encode`` (read + validate + encode to ``codes.parquet`` + fingerprint) and ``marginals`` (App 3's
21 two-way marginals from the encoded copy). Dask runs on a ``LocalCluster`` of ``--workers`` worker processes
(one thread each) started and warmed up once (timed apart: workers import sdgov); DuckDB uses its default, a
thread per core. The script **asserts** that both engines give the same record count, the same fingerprint
and bit-identical int64 marginals.

Per stage it records wall seconds and CPU seconds (this process and every child process, so the Dask workers
count too; on a shared machine CPU seconds are the figure to compare). ``--partition-mb`` / ``--partition-rows``
set Dask's partition sizes so a small N is still cut into several partitions. Needs
../shared/data/census2011_teaching_50k.csv.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
SPEC = REPO / "examples" / "census2011" / "app3.yaml"


def _cpu() -> float:
    """CPU seconds of this process and all its live descendants (the Dask nannies and workers)."""
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += sum(child.cpu_times()[:2])
    return total


def _timed(fn: Any) -> tuple[Any, dict[str, float]]:
    wall, cpu = time.perf_counter(), _cpu()
    result = fn()
    return result, {"wall_s": round(time.perf_counter() - wall, 3), "cpu_s": round(_cpu() - cpu, 3)}


def run(rows: int, workers: int, partition_mb: int, partition_rows: int, keep: Path | None) -> dict[str, Any]:
    import census_like
    from distributed import Client, LocalCluster

    from sdgov.agreement.load import load_spec
    from sdgov.base.settings import DASK_SCHEDULER
    from sdgov.engines import dask_engine, engine

    loaded = load_spec(SPEC)
    schema, cliques = loaded.schema_, loaded.agreement.cliques
    dask_engine.BLOCK_BYTES = partition_mb * 2**20
    dask_engine.BLOCK_ROWS = partition_rows
    work = keep or Path(tempfile.mkdtemp(prefix="bench-engines-", dir="/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    csv, whole = work / "census.csv", work / "census-one-group.parquet"
    _, gen = _timed(lambda: census_like.write(rows, 15, csv, whole))
    parquet = work / "census.parquet"  # row groups of partition_rows, so Dask can cut it
    with pq.ParquetWriter(parquet, pq.read_schema(whole), compression="zstd") as writer:
        for batch in pq.ParquetFile(whole).iter_batches(batch_size=partition_rows):
            writer.write_batch(batch)
    whole.unlink()
    out: dict[str, Any] = {"generate": gen, "files": {"csv": csv.stat().st_size, "parquet": parquet.stat().st_size}}

    def start_cluster() -> LocalCluster:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
        with Client(cluster) as client:  # warm-up: every worker imports the engine (not a per-release cost)
            client.run(importlib.import_module, "sdgov.engines.dask_engine")
        return cluster

    cluster, start = _timed(start_cluster)
    out["dask_cluster_start"] = start
    os.environ[DASK_SCHEDULER] = cluster.scheduler_address
    try:
        for fmt, source in (("csv", csv), ("parquet", parquet)):
            results = {}
            for name in ("duckdb", "dask"):
                eng, codes = engine(name), work / f"codes-{name}-{fmt}.parquet"
                enc, t_enc = _timed(partial(eng.encode, source, schema, codes))
                tables, t_marg = _timed(partial(eng.marginals, codes, schema, cliques))
                results[name] = (enc, tables)
                out[f"{fmt}/{name}"] = {"encode": t_enc, "marginals": t_marg, "rows": enc.rows}
                print(f"{fmt:8s} {name:7s} encode {t_enc}  marginals {t_marg}", file=sys.stderr, flush=True)
            (a, ta), (b, tb) = results["duckdb"], results["dask"]
            assert (a.rows, a.fingerprint) == (b.rows, b.fingerprint), f"{fmt}: the engines disagree"
            assert all(ta[c].dtype == tb[c].dtype == np.int64 and np.array_equal(ta[c], tb[c]) for c in cliques)
            out[f"{fmt}/equal"] = {"rows": a.rows, "fingerprint": a.fingerprint, "marginals_equal": len(cliques)}
            out[f"{fmt}/dask_over_duckdb_cpu"] = {
                stage: round(out[f"{fmt}/dask"][stage]["cpu_s"] / max(out[f"{fmt}/duckdb"][stage]["cpu_s"], 1e-9), 2)
                for stage in ("encode", "marginals")
            }
    finally:
        cluster.close()
        if keep is None:
            for p in work.iterdir():
                p.unlink()
            work.rmdir()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--partition-mb", type=int, default=4, help="Dask CSV partition size (MiB)")
    ap.add_argument("--partition-rows", type=int, default=50_000, help="Dask Parquet partition size (records)")
    ap.add_argument("--keep", type=Path, help="write the files here and keep them")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    load = os.getloadavg()
    res = run(args.rows, args.workers, args.partition_mb, args.partition_rows, args.keep)
    out = {
        "command": " ".join(["python", *sys.argv]),
        "rows": args.rows,
        "workers": args.workers,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "loadavg_start": [round(x, 2) for x in load],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        **res,
    }
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
