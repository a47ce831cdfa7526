#!/usr/bin/env python
"""Census scale (issue 15): measurement out of core with the embedded engine, and sampling with flat memory.

    python benchmarks/census_like.py --rows 55000000 --csv /tmp/c55m.csv --parquet /tmp/c55m.parquet
    python benchmarks/census_like.py --rows 5000000 --csv /tmp/c5m.csv --parquet /tmp/c5m.parquet
    nice -n 10 python benchmarks/bench_scale.py measure --file /tmp/c55m.parquet --file /tmp/c55m.csv \\
        --pandas /tmp/c5m.csv --json benchmarks/results/scale-measure-2026-11-23.json
    nice -n 10 python benchmarks/bench_scale.py sample --rows 5000000 --rows 55000000 --json OUT

``measure``: for each file, in a fresh subprocess (peak = its ``ru_maxrss``), App 3's 21 two-way marginals
(``examples/census2011/app3.yaml``) counted by :mod:`sdgov.engines` — (a) ``scan``: one ``GROUPING SETS`` scan of
the source itself, the measurement alone; (b) ``release``: what a release does, validate + encode to Parquet +
fingerprint (:meth:`Engine.encode`) and then the 21 marginals from the encoded copy (:meth:`Engine.marginals`).
``--pandas`` runs the in-memory reference on a file pandas can hold (``read_csv_strict`` + ``encode`` +
``marginal_counts``, with the same fingerprint), and the engine on the same file, so the ratio is measured in
one run. ``sample``: a PGM fitted to App 3 (σ = 10) on the census extract, then ``sample_to_parquet`` of each row
count in a fresh subprocess; peak = ``ru_maxrss`` after sampling minus after the fit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SPEC = REPO / "examples" / "census2011" / "app3.yaml"
EXTRACT = Path("/work/shared/data/census2011_teaching_50k.csv")


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def worker_measure(mode: str, path: str) -> dict[str, object]:
    from sdgov.engines import engine
    from sdgov.engines.duckdb_engine import _connection, _ident, _source
    from sdgov.spec import load_spec

    loaded = load_spec(SPEC)
    schema, cliques = loaded.schema_, loaded.agreement.cliques
    from sdgov.fingerprint import fingerprint
    from sdgov.measure import marginal_counts
    from sdgov.schema import encode, read_csv_strict

    src = Path(path)
    out: dict[str, object] = {"mode": mode, "file": path, "bytes": src.stat().st_size}
    with tempfile.TemporaryDirectory(prefix="bench-scale-", dir="/tmp") as tmp:
        t0 = time.perf_counter()
        if mode == "scan":
            relation, _ = _source(src, schema)
            cols = ", ".join(_ident(a) for a in loaded.agreement.attributes)
            sets = ", ".join("(" + ", ".join(_ident(a) for a in c) + ")" for c in cliques)
            with _connection(Path(tmp) / "x") as con:
                groups = con.sql(
                    f"SELECT {cols}, GROUPING_ID({cols}), count(*) FROM {relation} GROUP BY GROUPING SETS ({sets})"
                ).fetchall()
            out["seconds"] = time.perf_counter() - t0
            out["cells"] = len(groups)
        elif mode == "release":
            enc = engine().encode(src, schema, Path(tmp) / "codes.parquet")
            t1 = time.perf_counter()
            tables2 = engine().marginals(enc.path, schema, cliques)
            t2 = time.perf_counter()
            out.update(
                rows=enc.rows,
                encode_fingerprint_s=t1 - t0,
                marginals_s=t2 - t1,
                seconds=t2 - t0,
                codes_bytes=enc.path.stat().st_size,
                fingerprint=enc.fingerprint,
                cells=sum(t.size for t in tables2.values()),
            )
        else:  # pandas: the in-memory reference
            codes = encode(read_csv_strict(src), schema, where=path)
            fp = fingerprint(codes, schema)
            t1 = time.perf_counter()
            tables3 = {c: marginal_counts(codes, schema, c) for c in cliques}
            t2 = time.perf_counter()
            out.update(
                rows=len(codes),
                encode_fingerprint_s=t1 - t0,
                marginals_s=t2 - t1,
                seconds=t2 - t0,
                fingerprint=fp,
                cells=sum(t.size for t in tables3.values()),
            )
    out["peak_rss_bytes"] = _peak()
    return out


def worker_sample(rows: int, model_path: str) -> dict[str, object]:
    import pickle

    from sdgov.sampler import sample_to_parquet
    from sdgov.spec import load_spec

    model = pickle.loads(Path(model_path).read_bytes())
    schema = load_spec(SPEC).schema_
    with tempfile.TemporaryDirectory(prefix="bench-sample-", dir="/tmp") as tmp:
        sample_to_parquet(model, schema, 20_000, 1, Path(tmp) / "warm.parquet")  # untimed warm-up
        base = _peak()
        t0 = time.perf_counter()
        done = sample_to_parquet(model, schema, rows, 2011, Path(tmp) / "synthetic.parquet")
        seconds = time.perf_counter() - t0
        size = (Path(tmp) / "synthetic.parquet").stat().st_size
    peak = _peak()
    return {
        "rows": done,
        "seconds": seconds,
        "rows_per_s": done / seconds,
        "parquet_bytes": size,
        "peak_rss_bytes": peak,
        "baseline_rss_bytes": base,
        "peak_increase_bytes": peak - base,
    }


def _sub(*args: str) -> dict[str, object]:
    res = subprocess.run(
        [sys.executable, __file__, "worker", *args], capture_output=True, text=True, check=False, cwd=REPO
    )
    if res.returncode:
        raise SystemExit(f"worker {args} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["measure", "sample", "worker"])
    ap.add_argument("--file", action="append", default=[])
    ap.add_argument("--pandas")
    ap.add_argument("--rows", action="append", type=int, default=[])
    ap.add_argument("--json")
    ap.add_argument("rest", nargs="*")
    args = ap.parse_args()
    if args.what == "worker":
        kind, *rest = args.rest
        res = worker_measure(*rest) if kind == "measure" else worker_sample(int(rest[0]), rest[1])
        print(json.dumps(res))
        return
    import duckdb

    out: dict[str, object] = {
        "command": " ".join(["python", *sys.argv]),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "spec": str(SPEC.relative_to(REPO)),
        "load_start": os.getloadavg(),
        "results": [],
    }
    results: list[dict[str, object]] = out["results"]  # type: ignore[assignment]
    if args.what == "measure":
        if args.pandas:
            ref = _sub("measure", "pandas", args.pandas)
            eng = _sub("measure", "release", args.pandas)
            assert ref["fingerprint"] == eng["fingerprint"], "engine and pandas disagree"
            ref["engine_speedup"] = float(ref["seconds"]) / float(eng["seconds"])  # type: ignore[arg-type]
            ref["engine_peak_ratio"] = float(eng["peak_rss_bytes"]) / float(ref["peak_rss_bytes"])  # type: ignore[arg-type]
            results += [ref, eng]
            print(ref, eng, sep="\n", flush=True)
        for f in args.file:
            for mode in ("scan", "release"):
                res = _sub("measure", mode, f)
                print(res, flush=True)
                results.append(res)
    else:
        import pickle

        from sdgov.engines import load_encoded
        from sdgov.generators.pgm_mbi import fit_pgm
        from sdgov.measure import measure
        from sdgov.privacy import plan_privacy
        from sdgov.spec import load_spec

        loaded = load_spec(SPEC)
        ag = loaded.agreement
        codes = load_encoded(EXTRACT, loaded.schema_)
        plan = plan_privacy(ag.privacy, ag.cliques, len(codes))
        mset = measure(codes, loaded.schema_, ag, plan, "bench")
        model = fit_pgm(mset, ag.generator.model_copy(update={"iterations": 300}))
        with tempfile.TemporaryDirectory(prefix="bench-model-") as tmp:
            mp = Path(tmp) / "model.pkl"
            mp.write_bytes(pickle.dumps(model))
            for rows in args.rows:
                res = _sub("sample", str(rows), str(mp))
                print(res, flush=True)
                results.append(res)
        if len(results) >= 2:
            first, last = results[0], results[-1]
            out["peak_rss_ratio_largest_vs_smallest"] = float(last["peak_rss_bytes"]) / float(first["peak_rss_bytes"])  # type: ignore[arg-type]
            small = float(first["peak_increase_bytes"])  # type: ignore[arg-type]
            # an increase of 0 at both sizes: sampling never rose above the loaded model's high-water mark
            out["peak_increase_ratio_largest_vs_smallest"] = (
                float(last["peak_increase_bytes"]) / small if small else None
            )  # type: ignore[arg-type]
    out["load_end"] = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
