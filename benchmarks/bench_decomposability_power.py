"""Issue 29's power table for the decomposability audit: weak and camouflaged blend controls caught, beside the
honest generators' false alarms, on Applications 1–3 of the census extract and the demo, at each K asked for (issue 26:
calibrated at every K a spec can pre-register), each with its Clopper–Pearson interval and, for a null, the
Kolmogorov–Smirnov p-value of its p-values against uniform.

    python benchmarks/bench_decomposability_power.py [--apps app1,app2,app3,demo] [--K 7,10] [--seeds 10] \
        [--fpr-seeds 20] [--controls blend2_ipf,blend5_ipf,camo2_ipf,camo5_ipf] [--honest honest_ipf,honest_ipf+noise] \
        [--grid "apps:generators:Ks:seeds;..."] [--jobs N] [--out FILE]

Every audit is the real one (``audit_spec``: the app's spec, its Φ and pre-registered settings — the demo's 50,000
rows per fit, else 10 × records — at the K asked for, α = 0.05, no positive control beside), one per seed from 0
(``--from`` shifts them). The camouflaged controls (``camo*_ipf``) and the
``+noise`` honest generator carry the app's own planned noise (the spec's ``privacy.sigma``) on every Φ count,
unseeded (independent in the two fits of an audit pair, as a release's noise would be) — the null that a camouflaged
control hides in. IPF is capped at 30 sweeps on Application 3
(an honest fit is honest however long it runs; the blends' leaky part uses the same cap). ``--jobs`` runs that many
audits at once in spawned processes (each audit's fits stay serial in its process); the p-values do not depend on
it. Rows are printed as they come; the JSON (``--out``) holds every p-value, the chosen sets and the command line;
the last lines print the table as Markdown (``--table FILE`` prints it from a JSON, also of a run cut short).

Issue 37 item 5: ``camo2u_ipf`` is the camouflaged 2 % blend with *every* random draw outside the audit's seed (its
noise and its sampling keyed by the records it was fitted on) and its leaked 3-way drawn at random from the audit
seed among the minimal non-Φ sets; ``+unseeded`` is the matching honest null (IPF, the plan's σ, noise and sampling
unseeded). A generator name ending in ``+raw`` runs the audit as before issue 37 (``phi_residual: false``: the raw
joint rather than each fit's joint net of its own Φ-only model), for before/after rows in one run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import yaml
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_decomposability import spec_path  # noqa: E402

ALPHA = 0.05


def plan_sigma(app: str) -> float:
    """The app's planned noise on every Φ count (the spec's ``privacy.sigma``; the demo plans by ε, so it gets the
    census apps' σ = 10, the camouflaged controls' default)."""
    from sdgov.audits.generators import CAMOUFLAGE_SIGMA

    spec = yaml.safe_load(spec_path(app).read_text())
    return float(spec["privacy"].get("sigma", CAMOUFLAGE_SIGMA))


def params_for(app: str, gen: str) -> dict:
    """Generator params: IPF capped on App 3, memoised fits (the same bytes as refitting), the plan's σ for the
    camouflaged controls and the ``+noise`` honest generator."""
    params: dict = {"memo": True, **({"iterations": 30} if app == "app3" else {})}
    if app == "demo" and gen.startswith("honest_pgm"):
        params["iterations"] = 300  # the demo spec's pre-registered audit fit (its control keeps the full 1000)
    if gen.startswith("camo"):
        params["sigma"] = plan_sigma(app)
    if gen.endswith("+noise"):  # unseeded: the two fits of an audit pair get independent noise (else it cancels)
        params.update({"sigma": plan_sigma(app), "unseeded_noise": True})
    if gen.endswith("+unseeded"):  # noise and sampling: the pair shares nothing but the data
        params.update({"sigma": plan_sigma(app), "unseeded_noise": True, "unseeded_sampling": True})
    return params


def generator_of(gen: str) -> tuple[str, bool]:
    """The shipped generator a table row runs, and whether it runs the raw-joint statistic (``+raw``)."""
    raw = gen.endswith("+raw")
    return gen.removesuffix("+raw").removesuffix("+noise").removesuffix("+unseeded"), raw


def one(job: tuple[str, str, int, int]) -> dict:
    """One audit (runs in a worker process)."""
    from bench_decomposability import run  # imported in the worker

    app, gen, K, seed = job
    name, raw = generator_of(gen)
    params = params_for(app, gen.removesuffix("+raw"))
    if name == "camo2u_ipf":
        params["leak_seed"] = seed  # the leaked table drawn at random, from the audit's seed
    row = run(app, name, K, seed, params=params, overrides={"phi_residual": False} if raw else None)
    return {
        "app": app,
        "generator": gen,
        "K": K,
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
    ps = [r["p_value"] for r in rows]
    ks = float(stats.kstest(ps, "uniform").pvalue) if n >= 10 and len(set(ps)) > 1 else None
    return {"rejected": k, "runs": n, "rate": k / n, "ci95": [lo, hi], "ks_uniform_p": ks, "p_values": ps}


Job = tuple[str, str, int, int]  # app, generator, K, seed


def default_jobs(args: argparse.Namespace) -> list[Job]:
    """Every app × K × control (``--seeds``) and honest generator (``--fpr-seeds``), seed by seed, so that a run cut
    short still has every control and generator at its first seeds."""
    gens = [(g, args.seeds) for g in filter(None, args.controls.split(","))]
    gens += [(g, args.fpr_seeds) for g in filter(None, args.honest.split(","))]
    last = args.first + max(n for _, n in gens)
    return [
        (app, g, int(K), s)
        for s in range(args.first, last)
        for K in args.K.split(",")
        for app in args.apps.split(",")
        for g, n in gens
        if s < args.first + n
    ]


def grid_jobs(grid: str, first: int) -> list[Job]:
    """The ``--grid`` groups in their order (a run cut short has the first groups whole), seed by seed inside one."""
    jobs: list[Job] = []
    for group in filter(None, (g.strip() for g in grid.split(";"))):
        apps, gens, Ks, seeds = group.split(":")
        jobs += [
            (app, g, int(K), s)
            for s in range(first, first + int(seeds))
            for K in Ks.split(",")
            for app in apps.split(",")
            for g in gens.split(",")
        ]
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--apps", default="app1,app2,app3", help="app1..app3 and/or demo")
    ap.add_argument("--K", default="10", help="comma list of K (fits per extremal dataset and phase)")
    ap.add_argument("--controls", default="blend2_ipf,blend5_ipf,camo2_ipf,camo5_ipf")
    ap.add_argument("--honest", default="honest_ipf,honest_ipf+noise")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per control")
    ap.add_argument("--fpr-seeds", type=int, default=20, help="seeds per honest generator")
    ap.add_argument("--from", dest="first", type=int, default=0, help="first seed")
    ap.add_argument("--jobs", type=int, default=1, help="audits run at once")
    ap.add_argument("--out", default=str(REPO / "build" / "bench_decomposability_power.json"))
    ap.add_argument(
        "--grid",
        help="instead of --apps/--K/--controls/--honest/--seeds: groups 'apps:generators:Ks:seeds' separated by "
        "';', run in that order (seed by seed within a group), e.g. "
        "'app3:honest_ipf+noise:10:20;app1,app2:camo2_ipf:10:10'",
    )
    ap.add_argument("--table", metavar="FILE", help="only summarise the runs in an earlier (or unfinished) JSON")
    args = ap.parse_args()
    if args.table:
        table(json.loads(Path(args.table).read_text()), args.table)
        return
    jobs = grid_jobs(args.grid, args.first) if args.grid else default_jobs(args)
    from sdgov.audits.environment import numeric_environment

    out: dict = {
        "command": " ".join(["python", *sys.argv]),
        "alpha": ALPHA,
        "cpus": os.cpu_count(),
        "environment": numeric_environment(),
        "runs": [],
        "table": {},
    }
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
    """Summarise every (app, generator, K) in ``out["runs"]`` into ``out["table"]`` and print it as Markdown, with
    the Kolmogorov–Smirnov p-value of the p-values against uniform where a row has ≥ 10 runs (a calibrated null
    gives uniform p at every α, not only at 0.05)."""
    apps = list(dict.fromkeys(r["app"] for r in out["runs"]))
    rows_of = list(dict.fromkeys((r["generator"], r.get("K", 10)) for r in out["runs"]))
    for app in apps:
        for g, K in rows_of:
            rows = sorted(
                (r for r in out["runs"] if r["app"] == app and r["generator"] == g and r.get("K", 10) == K),
                key=lambda r: r["seed"],
            )
            if rows:
                out["table"][f"{app}/{g}/K{K}"] = {"seeds": [r["seed"] for r in rows], **summary(rows)}
    Path(path).write_text(json.dumps(out, indent=2))
    print(f"\n| generator | K | {' | '.join(apps)} |\n|---|---|{'---|' * len(apps)}")
    for g, K in rows_of:
        cells = []
        for app in apps:
            s = out["table"].get(f"{app}/{g}/K{K}")
            cells.append(
                f"{s['rejected']}/{s['runs']} ({100 * s['ci95'][0]:.1f}–{100 * s['ci95'][1]:.1f} %"
                + (f"; KS p {s['ks_uniform_p']:.2f})" if s.get("ks_uniform_p") is not None else ")")
                if s
                else "—"
            )
        print(f"| {g} | {K} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
