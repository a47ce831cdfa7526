"""Issue 29's power table for the decomposability audit: weak and camouflaged blend controls caught, beside the
honest generators' false alarms, on Applications 1–3 of the census extract, each with its Clopper–Pearson interval.

    python benchmarks/bench_decomposability_power.py [--apps app1,app2,app3] [--seeds 10] [--fpr-seeds 20] \
        [--controls blend2_ipf,blend5_ipf,camo2_ipf,camo5_ipf] [--honest honest_ipf,honest_ipf+noise] \
        [--jobs N] [--out FILE]

Every audit is the real one (``audit_spec``: the app's spec, its Φ, K = 10, 10 × records synthetic rows per fit,
α = 0.05), one per seed from 0 (``--from`` shifts them). The camouflaged controls (``camo*_ipf``) and the
``+noise`` honest generator carry the app's own planned noise (the spec's ``privacy.sigma``) on every Φ count,
unseeded (independent in the two fits of an audit pair, as a release's noise would be) — the null that a camouflaged
control hides in. IPF is capped at 30 sweeps on Application 3
(an honest fit is honest however long it runs; the blends' leaky part uses the same cap). ``--jobs`` runs that many
audits at once in spawned processes (each audit's fits stay serial in its process); the p-values do not depend on
it. Rows are printed as they come; the JSON (``--out``) holds every p-value, the chosen sets and the command line;
the last lines print the table as Markdown (``--table FILE`` prints it from a JSON, also of a run cut short).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path

import yaml
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

ALPHA = 0.05


def plan_sigma(app: str) -> float:
    """The app's planned noise on every Φ count (the spec's ``privacy.sigma``)."""
    spec = yaml.safe_load((REPO / "examples" / "census2011" / f"{app}.yaml").read_text())
    return float(spec["privacy"]["sigma"])


def params_for(app: str, gen: str) -> dict:
    """Generator params: IPF capped on App 3, memoised fits (the same bytes as refitting), the plan's σ for the
    camouflaged controls and the ``+noise`` honest generator."""
    params: dict = {"memo": True, **({"iterations": 30} if app == "app3" else {})}
    if gen.startswith("camo"):
        params["sigma"] = plan_sigma(app)
    if gen.endswith("+noise"):  # unseeded: the two fits of an audit pair get independent noise (else it cancels)
        params.update({"sigma": plan_sigma(app), "unseeded_noise": True})
    return params


def one(job: tuple[str, str, int]) -> dict:
    """One audit (runs in a worker process)."""
    from bench_decomposability import run  # imported in the worker

    app, gen, seed = job
    row = run(app, gen.removesuffix("+noise"), 10, seed, params=params_for(app, gen))
    return {
        "app": app,
        "generator": gen,
        "seed": seed,
        "p_value": row["p_value"],
        "beta_star_sets": row["beta_star_sets"],
        "phase2_statistic": row["extremal"].get("phase2_statistic"),
        "cpu_seconds": row["cpu_seconds"],
        "wall": row["wall"],
    }


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact two-sided binomial (Clopper–Pearson) interval for k successes in n trials, as scipy computes it."""
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def summary(rows: list[dict]) -> dict:
    """Rejections at α, their share and its 95 % Clopper–Pearson interval."""
    k, n = sum(r["p_value"] < ALPHA for r in rows), len(rows)
    lo, hi = clopper_pearson(k, n)
    return {"rejected": k, "runs": n, "rate": k / n, "ci95": [lo, hi], "p_values": [r["p_value"] for r in rows]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--apps", default="app1,app2,app3")
    ap.add_argument("--controls", default="blend2_ipf,blend5_ipf,camo2_ipf,camo5_ipf")
    ap.add_argument("--honest", default="honest_ipf,honest_ipf+noise")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per control")
    ap.add_argument("--fpr-seeds", type=int, default=20, help="seeds per honest generator")
    ap.add_argument("--from", dest="first", type=int, default=0, help="first seed")
    ap.add_argument("--jobs", type=int, default=1, help="audits run at once")
    ap.add_argument("--out", default=str(REPO / "build" / "bench_decomposability_power.json"))
    ap.add_argument("--table", metavar="FILE", help="only summarise the runs in an earlier (or unfinished) JSON")
    args = ap.parse_args()
    if args.table:
        table(json.loads(Path(args.table).read_text()), args.table)
        return
    apps = args.apps.split(",")
    gens = [(g, args.seeds) for g in filter(None, args.controls.split(","))]
    gens += [(g, args.fpr_seeds) for g in filter(None, args.honest.split(","))]
    # seed by seed, so that a run cut short still has every control and generator at its first seeds
    last = args.first + max(n for _, n in gens)
    jobs = [(app, g, s) for s in range(args.first, last) for app in apps for g, n in gens if s < args.first + n]
    out: dict = {"command": " ".join(["python", *sys.argv]), "alpha": ALPHA, "runs": [], "table": {}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        for row in pool.imap_unordered(one, jobs):
            out["runs"].append(row)
            print(json.dumps(row), flush=True)
            Path(args.out).write_text(json.dumps(out, indent=2))
    out["wall_seconds"] = time.perf_counter() - t0
    table(out, args.out)


def table(out: dict, path: str) -> None:
    """Summarise every (app, generator) in ``out["runs"]`` into ``out["table"]`` and print it as Markdown."""
    apps = list(dict.fromkeys(r["app"] for r in out["runs"]))
    gens = list(dict.fromkeys(r["generator"] for r in out["runs"]))
    for app in apps:
        for g in gens:
            rows = sorted((r for r in out["runs"] if r["app"] == app and r["generator"] == g), key=lambda r: r["seed"])
            if rows:
                out["table"][f"{app}/{g}"] = {"seeds": [r["seed"] for r in rows], **summary(rows)}
    Path(path).write_text(json.dumps(out, indent=2))
    print(f"\n| generator | {' | '.join(apps)} |\n|---|{'---|' * len(apps)}")
    for g in gens:
        cells = []
        for app in apps:
            s = out["table"].get(f"{app}/{g}")
            cells.append(
                f"{s['rejected']}/{s['runs']} ({100 * s['ci95'][0]:.0f}–{100 * s['ci95'][1]:.0f} %)" if s else "—"
            )
        print(f"| {g} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
