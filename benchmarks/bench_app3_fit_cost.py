"""What Application 3's audits cost at their defaults, from the cost of one fit of its generator (issue 26 item 1).

    nice -n 5 python benchmarks/bench_app3_fit_cost.py [--app app3] [--fits 2] [--json OUT]

Every audit fits the release's generator again and again on shadow datasets: the privacy-risk audit
``planned_fits`` times (:mod:`sdgov.audits.privacy.cost`), the decomposability test 4·K times. On App 3 (Φ = all 21
pairs of 7 census attributes) that generator is Private-PGM on one 1.56M-cell junction-tree clique, 1,000 mirror-
descent iterations, and one fit costs the same whatever the shadow dataset's size. This measures, in one run:

* one fit as the audit makes it (the audit's own generator and settings, built by
  :func:`sdgov.audits.privacy.run.agreement_audit_run`), on a shadow training set (``train_rows``) and on a
  memorisation training set (``memorisation_rows``), after one warm-up fit (JAX compiles);
* the floor under one iteration: a call of mbi's marginal oracle against the same computation written as one fused
  JAX function (the potentials summed into the clique, normalised, exponentiated, projected to the 21 pairs), so
  that "mbi is slow here" can be told apart from "the clique is large";
* what the defaults therefore cost: fits × CPU-seconds a fit, and the wall time on this machine's cores.

The census extract is read from ``../shared/data`` (ONS 2011 Census Microdata Teaching File, Open Government
Licence v1.0).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DATA = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"


def timed(fn: Callable[[], object]) -> tuple[object, float, float]:
    """(result, wall s, CPU s of this process — JAX's threads included)."""
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def oracle_floor(domain: dict[str, int], cliques: list[tuple[str, ...]], calls: int = 20) -> dict[str, float]:
    """ms per call (wall, CPU) of mbi's default marginal oracle and of a hand-fused JAX equivalent."""
    import jax
    import jax.numpy as jnp
    import mbi
    from mbi import marginal_oracles

    attrs = list(domain)
    dom = mbi.Domain(tuple(attrs), tuple(domain.values()))
    potentials = mbi.CliqueVector.zeros(dom, cliques)
    oracle = marginal_oracles.default_oracle(cliques, dom)
    mbi_call = jax.jit(lambda p: oracle(p, 1000.0))
    shape, axis = tuple(domain.values()), {a: i for i, a in enumerate(attrs)}

    def fused(arrays: list[jax.Array]) -> list[jax.Array]:
        full = jnp.zeros(shape)
        for c, a in zip(cliques, arrays):
            dims = [1] * len(shape)
            for x in c:
                dims[axis[x]] = domain[x]
            full = full + a.reshape(dims)
        p = jnp.exp(full - jax.nn.logsumexp(full)) * 1000.0
        return [p.sum(axis=tuple(i for i in range(len(shape)) if attrs[i] not in c)) for c in cliques]

    fused_call = jax.jit(fused)
    arrays = [jnp.zeros(tuple(domain[x] for x in c)) for c in cliques]
    out = {}
    for name, call, arg in (("mbi_oracle", mbi_call, potentials), ("fused_jax", fused_call, arrays)):
        jax.block_until_ready(call(arg))  # compile
        _, wall, cpu = timed(lambda c=call, a=arg: [jax.block_until_ready(c(a)) for _ in range(calls)])
        out[f"{name}_ms_wall"], out[f"{name}_ms_cpu"] = 1000 * wall / calls, 1000 * cpu / calls
    return out


def estimators(domain: dict[str, int], cliques: list[tuple[str, ...]], rows: np.ndarray, sigma: float) -> list[dict]:
    """Is a faster optimiser than mbi's mirror descent available? Every estimator mbi 2 ships, on one shadow
    dataset's noisy marginals (σ of the plan): the L2 loss it reaches (lower is better; mirror descent at 1,000
    iterations is what the release runs) and its CPU seconds."""
    import mbi
    from mbi import estimation

    attrs = list(domain)
    dom = mbi.Domain(tuple(attrs), tuple(domain.values()))
    rng = np.random.default_rng(1)
    ms = []
    for c in cliques:
        idx, shape = [attrs.index(a) for a in c], [domain[a] for a in c]
        t = np.bincount(np.ravel_multi_index(tuple(rows[:, idx].T), shape), minlength=int(np.prod(shape)))
        ms.append(mbi.LinearMeasurement(np.rint(t + rng.normal(0, sigma, t.shape)), c, stddev=sigma))
    loss = mbi.marginal_loss.from_linear_measurements(ms, dom)
    out = []
    for name, est, iters in (
        ("MirrorDescent", estimation.MirrorDescent(), 1000),
        ("MirrorDescent", estimation.MirrorDescent(), 3000),
        ("LBFGS", estimation.LBFGS(), 200),
        ("InteriorGradient", estimation.InteriorGradient(), 200),
        ("UniversalAcceleratedMethod", estimation.UniversalAcceleratedMethod(), 200),
    ):
        model, wall, cpu = timed(
            lambda e=est, i=iters: float(loss(e.estimate(dom, ms, known_total=float(len(rows)), iters=i).marginals))
        )
        out.append({"estimator": name, "iterations": iters, "l2_loss": model, "wall_s": wall, "cpu_s": cpu})
        print(f"  {name} × {iters}: loss {model:.1f}, {wall:.1f} s wall, {cpu:.1f} CPU s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--app", default="app3")
    ap.add_argument("--fits", type=int, default=2, help="timed fits of each size (after one warm-up)")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--estimators", action="store_true", help="also every mbi estimator on one shadow dataset")
    ap.add_argument("--json")
    args = ap.parse_args()

    from sdgov.agreement.load import load_spec
    from sdgov.agreement.sections.privacy_risk import DEFAULT_PARTS, RiskSettings
    from sdgov.audits.privacy.cost import planned_fits
    from sdgov.audits.privacy.run import agreement_audit_run
    from sdgov.budget.accounting import plan_privacy
    from sdgov.engines import load_encoded
    from sdgov.generators.pgm_mbi import junction_tree_cells

    loaded = load_spec(REPO / "examples" / "census2011" / f"{args.app}.yaml")
    ag = loaded.agreement
    codes = load_encoded(Path(args.data), loaded.schema_)
    settings = RiskSettings()
    run = agreement_audit_run(ag, loaded.schema_, codes, plan_privacy(ag.privacy, ag.cliques), settings=settings)
    ref = run.pool().ref
    attrs = list(ag.attributes)
    domain = loaded.schema_.domain(attrs)
    cells = junction_tree_cells(attrs, [tuple(c) for c in ag.cliques], domain)
    print(
        f"{args.app}: {len(ag.cliques)} marginals, junction tree {cells:,} cells; "
        f"audit generator {ref.path} {ref.params}"
    )

    rng = np.random.default_rng(0)
    real = codes[attrs].to_numpy()
    sizes = {"shadow (train_rows)": settings.train_rows, "memorisation (memorisation_rows)": settings.memorisation_rows}
    fit = lambda n, seed: ref.fit_sample(real[rng.choice(len(real), n, replace=False)], seed, n, [seed])
    _, wall0, cpu0 = timed(lambda: fit(settings.train_rows, 0))
    print(f"  warm-up fit (compiles): {wall0:.1f} s wall, {cpu0:.1f} CPU s", flush=True)
    per_fit: dict[str, list[float]] = {}
    for label, n in sizes.items():
        for i in range(args.fits):
            _, wall, cpu = timed(lambda n=n, i=i: fit(n, i + 1))
            per_fit.setdefault(label, []).append(cpu)
            print(f"  fit on {n:,} records ({label}): {wall:.1f} s wall, {cpu:.1f} CPU s", flush=True)
    cpu_fit = float(np.median([c for v in per_fit.values() for c in v]))

    floor = oracle_floor(domain, [tuple(c) for c in itertools.chain(ag.cliques)])
    print(
        f"  one oracle call: mbi {floor['mbi_oracle_ms_wall']:.1f} ms wall ({floor['mbi_oracle_ms_cpu']:.1f} CPU), "
        f"hand-fused JAX {floor['fused_jax_ms_wall']:.1f} ms wall ({floor['fused_jax_ms_cpu']:.1f} CPU)"
    )

    optimisers = (
        estimators(domain, [tuple(c) for c in ag.cliques], real[:1000], ref.params.get("sigma", 10.0))
        if args.estimators
        else None
    )
    cores = os.cpu_count() or 1
    privacy = planned_fits(settings, DEFAULT_PARTS)
    audits = {
        "privacy-risk audit (default parts)": sum(privacy.values()),
        "decomposability test, K = 10": 4 * 10,
        "decomposability test, K = 7": 4 * 7,
    }
    rows = []
    for name, fits in audits.items():
        cpu_h = fits * cpu_fit / 3600
        rows.append({"audit": name, "fits": fits, "cpu_hours": round(cpu_h, 2), "wall_hours": round(cpu_h / cores, 2)})
        print(
            f"  {name}: {fits} fits × {cpu_fit:.0f} CPU s = {cpu_h:.1f} CPU h ≈ {cpu_h / cores:.1f} h on {cores} cores"
        )
    print(f"  privacy-risk fits by part: {privacy}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "command": " ".join(["python", *sys.argv]),
                    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "machine": {"platform": platform.platform(), "cpus": cores, "load_average": os.getloadavg()},
                    "app": args.app,
                    "junction_tree_cells": cells,
                    "generator": {"path": ref.path, "params": ref.params},
                    "warm_up_fit": {"wall_s": wall0, "cpu_s": cpu0},
                    "fit_cpu_s": per_fit,
                    "fit_cpu_s_median": cpu_fit,
                    "oracle_floor": floor,
                    "estimators": optimisers,
                    "privacy_fits_by_part": privacy,
                    "audits_at_defaults": rows,
                    "data": "ONS 2011 Census Microdata Teaching File extract (Office for National Statistics, OGL v1)",
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
