#!/usr/bin/env python
"""Pipeline benchmark: measurement throughput, PGM fit time, and sampling speed / peak memory vs mbi.

    python benchmarks/bench_pipeline.py [--quick] [--json FILE] [--workdir DIR]

Measures, in one run, on the ONS 2011 census teaching file and the App 3 agreement
(``examples/census2011/app3.yaml``: 21 two-way marginals over 7 attributes, σ = 10):

1. **Measurement throughput** (rows/s) at 50k, 500k and 5M rows (the census rows replicated in memory):
   ``sdgov.data.encoding.encode`` of the text DataFrame (all schema columns, as the measure stage does), and
   ``sdgov.measurement.marginals.measure_agreement`` (exact marginal counts + OpenDP discrete Gaussian noise),
   separately and
   together.
2. **Model fit time** of ``sdgov.generators.pgm_mbi.fit_pgm`` for App 3: *cold* (first fit in a fresh process,
   JAX JIT included) and *warm* (second fit in the same process).
3. **Sampling** rows/s and peak memory at 1M and 10M rows: ours (``sample_to_parquet`` to a /tmp file, and
   ``iter_chunks`` alone, no decoding or writing) vs mbi's ``MarkovRandomField.synthetic_data(rows)`` on the
   *same* fitted model (the mbi model is captured from the warm ``fit_pgm`` call, so both sample the very
   same potentials). Each configuration runs in its own fresh subprocess (this script with the hidden
   ``--worker`` flag); it loads the pickled models, does a small untimed warm-up draw (so mbi's JAX message
   passing is compiled and neither side pays one-time import/JIT costs in the timing), then records
   ``ru_maxrss`` as the baseline, samples, and reports ``ru_maxrss`` after minus the baseline: the
   high-water-mark increase caused by sampling. mbi draws from the global ``np.random``, which is seeded.
4. **Ratios**: our rows/s ÷ mbi's at each size (target ≥ 4×) and peak-memory increase at the largest size ÷
   at the smallest (target ≈ 1, i.e. flat), ours and mbi's.

No data is written into the repository: the replicated data lives in memory, and the measurement set,
pickled models and Parquet files go to a temporary directory under /tmp (removed at the end).
``--quick`` uses smaller sizes (a smoke test, under ~2 minutes); the full run takes several minutes.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "examples" / "census2011" / "app3.yaml"
DATA = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"

FULL = {"measure_rows": [50_000, 500_000, 5_000_000], "sample_rows": [1_000_000, 10_000_000]}
QUICK = {"measure_rows": [50_000, 200_000], "sample_rows": [200_000, 1_000_000], "iterations": 50}
SEED = 2011
WARMUP_ROWS = 20_000
METHODS = ("ours_parquet", "ours_iter", "mbi")
METHOD_LABEL = {
    "ours_parquet": "ours: sample_to_parquet",
    "ours_iter": "ours: iter_chunks (no write)",
    "mbi": "mbi: synthetic_data",
}


# ----------------------------------------------------------------------------------------------- helpers


def maxrss_mb() -> float:
    """High-water mark of this process's resident set, MB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def reset_hwm() -> bool:
    """Reset this process's VmHWM (peak RSS) to its current RSS (Linux >= 4.0); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def vm_hwm_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def load_avg() -> str:
    try:
        out = subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
        return out or " ".join(f"{x:.2f}" for x in os.getloadavg())
    except Exception:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())


def fmt_n(n: int) -> str:
    for unit, div in (("M", 1_000_000), ("k", 1_000)):
        if n >= div and n % (div // 10) == 0:
            v = n / div
            return f"{v:g}{unit}"
    return str(n)


def fmt_rate(r: float | None) -> str:
    if r is None:
        return "—"
    if r >= 1e6:
        return f"{r / 1e6:.2f} M/s"
    if r >= 1e3:
        return f"{r / 1e3:.1f} k/s"
    return f"{r:.0f} /s"


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = lambda r: "  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(r, widths)))
    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *map(line, rows)])


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------- 1. measurement


def bench_measurement(sizes: list[int], workdir: Path) -> tuple[list[dict], Path]:
    import pandas as pd

    from sdgov.agreement.load import load_spec
    from sdgov.budget.accounting import plan_privacy
    from sdgov.data.encoding import encode, read_csv_strict
    from sdgov.measurement.marginals import measure_agreement

    loaded = load_spec(SPEC)
    schema, agreement = loaded.schema_, loaded.agreement
    base = read_csv_strict(DATA)
    results = []
    mset_path = workdir / "measurements.json"
    for n in sizes:
        reps = -(-n // len(base))
        df = base if reps == 1 else pd.concat([base] * reps, ignore_index=True)
        df = df.iloc[:n].reset_index(drop=True) if len(df) != n else df
        plan = plan_privacy(agreement.privacy, agreement.cliques)  # not timed
        repeats = 3 if n <= 500_000 else 1
        t_enc, t_meas = [], []
        for _ in range(repeats):
            gc.collect()
            t0 = time.perf_counter()
            codes = encode(df, schema, where="benchmark")
            t1 = time.perf_counter()
            mset = measure_agreement(codes, schema, agreement, plan, dataset_fingerprint="benchmark")
            t2 = time.perf_counter()
            t_enc.append(t1 - t0)
            t_meas.append(t2 - t1)
            if n == sizes[0] and not mset_path.exists():
                mset_path.write_text(mset.model_dump_json())  # the 50k (real N) measurement set feeds the fit
            del codes
        enc, mea = min(t_enc), min(t_meas)
        results.append(
            {
                "rows": n,
                "repeats": repeats,
                "encode_s": enc,
                "measure_s": mea,
                "total_s": enc + mea,
                "encode_rows_per_s": n / enc,
                "measure_rows_per_s": n / mea,
                "total_rows_per_s": n / (enc + mea),
                "marginals": len(mset.measurements),
                "cells": sum(len(m.noisy_counts) for m in mset.measurements),
            }
        )
        log(f"measure {fmt_n(n)}: encode {enc:.2f}s, measure {mea:.3f}s")
        del df
        gc.collect()
    return results, mset_path


# --------------------------------------------------------------------------------------------- workers


def worker_fit(args: argparse.Namespace) -> dict:
    """Fresh process: cold fit_pgm (with JIT), then warm fit_pgm capturing mbi's model; pickle both."""
    t_imp = time.perf_counter()
    import numpy as np

    import sdgov.generators.pgm_mbi as pgm
    from sdgov.agreement.load import load_spec
    from sdgov.data.psi import MeasurementSet

    import_s = time.perf_counter() - t_imp
    params = spec_params = load_spec(SPEC).agreement.generator
    if args.iterations:
        params = params.model_copy(update={"iterations": args.iterations})
    mset = MeasurementSet.model_validate_json(Path(args.mset).read_text())

    t0 = time.perf_counter()
    cold = pgm.fit_pgm(mset, params)
    cold_s = time.perf_counter() - t0

    # Warm fit, through fit_pgm itself, keeping the mbi model it fits (no product code changed: the estimator
    # class is wrapped in this process only, for this call only).
    captured = []
    original = pgm.MirrorDescent

    def capturing(*a, **k):
        est = original(*a, **k)

        class _Proxy:
            def estimate(self, *ea, **ek):
                model = est.estimate(*ea, **ek)
                captured.append(model)
                return model

        return _Proxy()

    pgm.MirrorDescent = capturing
    try:
        t0 = time.perf_counter()
        warm = pgm.fit_pgm(mset, params)
        warm_s = time.perf_counter() - t0
    finally:
        pgm.MirrorDescent = original
    mrf = captured[0]
    same = all(np.allclose(a, b, rtol=1e-6, atol=1e-12) for a, b in zip(cold.marginals, warm.marginals))
    with open(args.models, "wb") as f:
        pickle.dump({"clique_model": warm, "mbi_model": mrf}, f, protocol=pickle.HIGHEST_PROTOCOL)
    return {
        "import_s": import_s,
        "cold_s": cold_s,
        "warm_s": warm_s,
        "iterations": params.iterations,
        "spec_iterations": spec_params.iterations,
        "cold_equals_warm": bool(same),
        "model_total": float(warm.total),
        "junction_tree_cliques": [list(c) for c in warm.cliques],
    }


def worker_sample(args: argparse.Namespace) -> dict:
    """Fresh process: load the models, warm up, baseline ru_maxrss, sample ``rows`` with one method."""
    import numpy as np

    import sdgov.base.jaxsetup  # noqa: F401  (x64 before mbi, as in the product)
    from sdgov.agreement.load import load_spec
    from sdgov.generators.sampler import iter_chunks, sample_to_parquet

    with open(args.models, "rb") as f:
        models = pickle.load(f)
    cm, mrf = models["clique_model"], models["mbi_model"]
    schema = load_spec(SPEC).schema_
    rows, method, seed = args.rows, args.method, args.seed
    out = Path(args.parquet)

    def run(n: int) -> int:
        if method == "ours_parquet":
            return sample_to_parquet(cm, schema, n, seed, out)
        if method == "ours_iter":
            done = 0
            for chunk in iter_chunks(cm, n, seed):
                done += len(next(iter(chunk.values())))
            return done
        np.random.seed(seed)
        return int(mrf.synthetic_data(n).records)

    run(WARMUP_ROWS)  # untimed: imports, JAX compilation of mbi's message passing, pyarrow writer set-up
    out.unlink(missing_ok=True)
    gc.collect()
    loaded_max = maxrss_mb()  # ru_maxrss after loading + warm-up (see below for why it is not the baseline)
    # The baseline is taken after restarting this process's RSS high-water mark at its current RSS (Linux
    # /proc/self/clear_refs), and the peak is read as VmHWM, the memory map's own high-water mark. That is the
    # per-process part of ru_maxrss: getrusage reports max(VmHWM, signal->maxrss), and signal->maxrss is
    # inherited through fork/exec from the *parent's* footprint (here the orchestrating process, which held
    # the 5M-row DataFrame), so raw ru_maxrss deltas read 0 in a child whose sampling stays below that.
    # A loading transient (JAX, pickle) would likewise hide the sampling peak without the reset.
    reset = reset_hwm()
    base_max, base_now = maxrss_mb(), current_rss_mb()
    base_hwm = vm_hwm_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    done = run(rows)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = maxrss_mb()
    peak_hwm = vm_hwm_mb()
    size = out.stat().st_size if out.exists() else None
    out.unlink(missing_ok=True)
    assert done == rows, (done, rows)
    return {
        "method": method,
        "rows": rows,
        "seconds": elapsed,
        "rows_per_s": rows / elapsed,
        # CPU seconds of this process (all its threads): less sensitive than wall time to other jobs
        "cpu_s": cpu,
        "rows_per_cpu_s": rows / cpu,
        "loaded_maxrss_mb": loaded_max,
        "hwm_reset": reset,
        "baseline_rss_mb": base_now,
        "baseline_hwm_mb": base_hwm,
        "peak_hwm_mb": peak_hwm,
        # the figure reported: VmHWM after sampling - RSS at the (reset) baseline
        "peak_increase_mb": (peak_hwm - base_now) if reset else (peak_hwm - loaded_max),
        # raw getrusage figures, for transparency (polluted by the inherited signal->maxrss, see above)
        "ru_maxrss_baseline_mb": base_max,
        "ru_maxrss_peak_mb": peak,
        "ru_maxrss_increase_mb": peak - base_max,
        "parquet_bytes": size,
    }


def spawn_worker(kind: str, extra: list[str], workdir: Path, timeout: float) -> dict:
    result = workdir / f"result-{kind}-{time.monotonic_ns()}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--result", str(result), *extra]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(REPO))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not result.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {"error": f"worker exit {proc.returncode}: " + " | ".join(tail)}
    out = json.loads(result.read_text())
    out["process_wall_s"] = wall
    return out


# ----------------------------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (smoke test, < ~2 min)")
    ap.add_argument("--json", metavar="FILE", help="also write all figures as JSON here")
    ap.add_argument("--workdir", metavar="DIR", help="scratch directory (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument(
        "--iterations",
        type=int,
        metavar="N",
        help="MirrorDescent iterations for the fit (default: the spec's 1000; --quick: 50)",
    )
    ap.add_argument("--render", metavar="FILE", help="print the table for a JSON report written by --json")
    ap.add_argument("--worker", choices=["fit", "sample"], help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--mset", help=argparse.SUPPRESS)
    ap.add_argument("--models", help=argparse.SUPPRESS)
    ap.add_argument("--method", choices=METHODS, help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=SEED, help=argparse.SUPPRESS)
    ap.add_argument("--parquet", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.render:
        rep = json.loads(Path(args.render).read_text())
        if rep.get("sampling"):
            rep["ratios"] = ratios(rep["sampling"], sorted({r["rows"] for r in rep["sampling"]}))
        print(render(rep))
        return 0
    if args.worker:
        res = worker_fit(args) if args.worker == "fit" else worker_sample(args)
        Path(args.result).write_text(json.dumps(res))
        return 0

    if not DATA.is_file():
        print(f"census data not found: {DATA}", file=sys.stderr)
        return 2
    cfg = QUICK if args.quick else FULL
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="sdgov-bench-", dir="/tmp"))
    workdir.mkdir(parents=True, exist_ok=True)
    if REPO in workdir.resolve().parents or workdir.resolve() == REPO:
        print("--workdir must be outside the repository", file=sys.stderr)
        return 2
    timeout = 600 if args.quick else 3600
    report: dict = {
        "mode": "quick" if args.quick else "full",
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "spec": str(SPEC.relative_to(REPO)),
        "data": str(DATA),
        "load_start": load_avg(),
    }
    t_start = time.perf_counter()
    try:
        log("1/3 measurement throughput")
        report["measurement"], mset_path = bench_measurement(cfg["measure_rows"], workdir)

        log("2/3 model fit (fresh process)")
        models = workdir / "models.pkl"
        iters = args.iterations or cfg.get("iterations")
        report["fit"] = spawn_worker(
            "fit",
            ["--mset", str(mset_path), "--models", str(models)] + (["--iterations", str(iters)] if iters else []),
            workdir,
            timeout,
        )
        if "error" in report["fit"]:
            raise RuntimeError(f"fit worker failed: {report['fit']['error']}")

        log("3/3 sampling (one fresh process per configuration)")
        sampling = []
        for n in cfg["sample_rows"]:
            for method in METHODS:
                log(f"  {method} {fmt_n(n)} rows")
                r = spawn_worker(
                    "sample",
                    [
                        "--models",
                        str(models),
                        "--method",
                        method,
                        "--rows",
                        str(n),
                        "--parquet",
                        str(workdir / f"synthetic-{method}-{n}.parquet"),
                    ],
                    workdir,
                    timeout,
                )
                r.setdefault("method", method)
                r.setdefault("rows", n)
                sampling.append(r)
                if "error" in r:
                    log(f"    {r['error']}")
                else:
                    log(f"    {r['seconds']:.2f}s, {fmt_rate(r['rows_per_s'])}, +{r['peak_increase_mb']:.0f} MB")
        report["sampling"] = sampling
        report["ratios"] = ratios(sampling, cfg["sample_rows"])
    finally:
        report["load_end"] = load_avg()
        report["elapsed_s"] = time.perf_counter() - t_start
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(render(report))
    return 0


def ratios(sampling: list[dict], sizes: list[int]) -> dict:
    get = {(r["method"], r["rows"]): r for r in sampling if "error" not in r}
    out: dict = {"speedup_vs_mbi": {}, "speedup_vs_mbi_cpu": {}, "memory_growth": {}}
    for n in sizes:
        mbi = get.get(("mbi", n))
        for m in ("ours_parquet", "ours_iter"):
            ours = get.get((m, n))
            if ours and mbi:
                out["speedup_vs_mbi"][f"{m}@{n}"] = ours["rows_per_s"] / mbi["rows_per_s"]
                if ours.get("cpu_s") and mbi.get("cpu_s"):
                    out["speedup_vs_mbi_cpu"][f"{m}@{n}"] = mbi["cpu_s"] / ours["cpu_s"]
    lo, hi = sizes[0], sizes[-1]
    for m in METHODS:
        a, b = get.get((m, lo)), get.get((m, hi))
        if a and b:
            out["memory_growth"][m] = {
                "small_rows": lo,
                "large_rows": hi,
                "small_mb": a["peak_increase_mb"],
                "large_mb": b["peak_increase_mb"],
                "ratio": b["peak_increase_mb"] / a["peak_increase_mb"] if a["peak_increase_mb"] >= 1 else None,
            }
    return out


def render(rep: dict) -> str:
    parts = [
        f"sdgov pipeline benchmark ({rep['mode']}) — {rep['spec']}, {rep['cpus']} CPUs, Python {rep['python']}",
        f"load at start: {rep['load_start']}",
        "",
    ]
    m = rep.get("measurement") or []
    if m:
        parts += [
            "1. Measurement (encode text DataFrame → codes; 21 noisy 2-way marginals, σ=10), best of repeats",
            table(
                ["rows", "encode s", "encode rows/s", "measure s", "measure rows/s", "total s", "total rows/s"],
                [
                    [
                        fmt_n(r["rows"]),
                        f"{r['encode_s']:.3f}",
                        fmt_rate(r["encode_rows_per_s"]),
                        f"{r['measure_s']:.3f}",
                        fmt_rate(r["measure_rows_per_s"]),
                        f"{r['total_s']:.3f}",
                        fmt_rate(r["total_rows_per_s"]),
                    ]
                    for r in m
                ],
            ),
            "",
        ]
    f = rep.get("fit")
    if f and "error" not in f:
        parts += [
            f"2. Model fit (fit_pgm, MirrorDescent {f['iterations']} iterations, App 3)",
            table(
                ["fit", "seconds"],
                [
                    ["cold (fresh process, JIT)", f"{f['cold_s']:.2f}"],
                    ["warm (second fit)", f"{f['warm_s']:.2f}"],
                    ["(import sdgov.generators.pgm_mbi)", f"{f['import_s']:.2f}"],
                ],
            ),
            f"cold and warm fits agree: {f['cold_equals_warm']}"
            + (
                ""
                if f["iterations"] == f.get("spec_iterations", f["iterations"])
                else f"  (NB: {f['iterations']} iterations, not the spec's {f['spec_iterations']})"
            ),
            "",
        ]
    s = rep.get("sampling") or []
    if s:
        rows = []
        for r in s:
            if "error" in r:
                rows.append([METHOD_LABEL[r["method"]], fmt_n(r["rows"]), "error", "", "", "", "", ""])
            else:
                cpu = r.get("cpu_s")
                rows.append(
                    [
                        METHOD_LABEL[r["method"]],
                        fmt_n(r["rows"]),
                        f"{r['seconds']:.2f}",
                        fmt_rate(r["rows_per_s"]),
                        "—" if cpu is None else f"{cpu:.2f}",
                        fmt_rate(r.get("rows_per_cpu_s")),
                        f"{r['peak_increase_mb']:.1f}",
                        f"{r['baseline_rss_mb']:.0f}",
                    ]
                )
        parts += [
            "3. Sampling (fresh process each; peak +MB = high-water-mark RSS during sampling"
            " − RSS after load + warm-up)",
            table(["sampler", "rows", "wall s", "rows/s", "CPU s", "rows/CPU-s", "peak +MB", "baseline MB"], rows),
            "",
        ]
        errs = [f"   {METHOD_LABEL[r['method']]} {fmt_n(r['rows'])}: {r['error']}" for r in s if "error" in r]
        parts += errs + ([""] if errs else [])
    ra = rep.get("ratios")
    if ra:
        cpu = ra.get("speedup_vs_mbi_cpu", {})
        rows = [
            [
                k.split("@")[0],
                fmt_n(int(k.split("@")[1])),
                f"{v:.1f}×",
                "≥ 4×",
                "yes" if v >= 4 else "NO",
                f"{cpu[k]:.1f}×" if k in cpu else "—",
            ]
            for k, v in ra["speedup_vs_mbi"].items()
        ]
        parts += [
            "4a. Sampling speed: ours rows/s ÷ mbi rows/s (wall clock; and the same from CPU seconds)",
            table(["ours", "rows", "ratio", "target", "met", "CPU ratio"], rows),
            "",
        ]
        rows = [
            [
                METHOD_LABEL[k],
                f"{v['small_mb']:.1f}",
                f"{v['large_mb']:.1f}",
                "n/a (< 1 MB)" if v["ratio"] is None else f"{v['ratio']:.2f}",
            ]
            for k, v in ra["memory_growth"].items()
        ]
        if rows:
            lo, hi = (
                next(iter(ra["memory_growth"].values()))["small_rows"],
                next(iter(ra["memory_growth"].values()))["large_rows"],
            )
            parts += [
                f"4b. Peak-memory increase at {fmt_n(hi)} ÷ at {fmt_n(lo)} rows (target for ours ≈ 1, flat)",
                table(["sampler", f"+MB @{fmt_n(lo)}", f"+MB @{fmt_n(hi)}", "ratio"], rows),
                "",
            ]
    parts += [f"load at end: {rep.get('load_end')}", f"elapsed: {rep.get('elapsed_s', 0):.0f}s"]
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
