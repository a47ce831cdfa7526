"""Issue 16 acceptance: private selection (MST) on the census extract at ε = 1, δ = 1e-5, against the peers.

    .venv/bin/python benchmarks/bench_selection.py [--seeds 3] [--dpmm PY] [--mbi PY] [--out FILE]

Every arm gets the same 50 000 × 17 census extract, encoded once by sdgov's schema (the peers read those integer
codes and the domain sizes), the same ε and δ, and is timed from the data in memory to 50 000 synthetic rows in
memory (selection + measurement + fit + sample). The score is the average total-variation distance over all 136
attribute pairs, median over seeds.

* sdgov MST: the declared selection share measures the 1-ways and runs OpenDP's Gumbel noisy-max (+ the
  reviewers' noisy scores); the rest measures the selected pairs; mbi mirror descent on the tree; sdgov's sampler.
  This is :func:`sdgov.measurement.selection.mst.select_mst` and the release's own functions, without the registry.
* sdgov AIM (``--aim``): :class:`sdgov.measurement.selection.aim.Aim` with the same share (AIM's rounds: Gumbel
  noisy-max on the mbi model's errors, Gaussian measurement, refit, annealing), then the release of its Φ as above.
* sdgov all 2-way: every pair at ε = 1, fitted with mbi's approximate inference (the card's "approximate"
  path, :mod:`sdgov.generators.pgm_mbi`), when ``--all-pairs`` is given.
* peers, each in its own venv (``--dpmm``, ``--mbi``: a python with dpmm / mbi 2.0 installed; not sdgov
  dependencies): dpmm's MSTPipeline and the reference MST on mbi 2.0 (benchmarks/peers/).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sdgov.agreement.spec import LimitsSpec, PrivacySpec, SelectionSpec  # noqa: E402
from sdgov.agreement.weights import with_cell_weights  # noqa: E402
from sdgov.budget.accounting import plan_privacy  # noqa: E402
from sdgov.data.psi import MeasurementSet  # noqa: E402
from sdgov.data.schema import load_schema  # noqa: E402
from sdgov.data.tables import contingency_table  # noqa: E402
from sdgov.engines import load_encoded  # noqa: E402
from sdgov.generators import registry  # noqa: E402
from sdgov.generators.sampler import iter_chunks  # noqa: E402
from sdgov.generators.settings import GeneratorSpec  # noqa: E402
from sdgov.measurement.marginals import measure_cliques  # noqa: E402
from sdgov.measurement.selection import model_size  # noqa: E402
from sdgov.measurement.selection.mst import Proposal, select_mst  # noqa: E402

CENSUS = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"
SCHEMA = REPO / "examples" / "census2011" / "schema.yaml"
PEERS = REPO / "benchmarks" / "peers"


def tvd_kway(real: pd.DataFrame, syn: pd.DataFrame, sizes: dict[str, int], k: int) -> float:
    """Average total-variation distance of the k-way marginals over every set of k attributes. A synthetic code
    below 0 is a value outside the domain (OpenDP's contingency tables give each column a null key, which its
    synthesizer can draw): such records count as mass in a cell the real data leave empty."""
    out = []
    for c in itertools.combinations(list(sizes), k):
        shape = tuple(sizes[a] for a in c)
        inside = (syn[list(c)] >= 0).all(axis=1).to_numpy()
        p = contingency_table(real, c, shape) / len(real)
        q = contingency_table(syn[inside], c, shape) / len(syn)
        out.append(0.5 * (float(np.abs(p - q).sum()) + float(1 - inside.mean())))
    return float(np.mean(out))


def tvd_pairs(real: pd.DataFrame, syn: pd.DataFrame, sizes: dict[str, int]) -> float:
    """Average total-variation distance of the 2-way marginals over every attribute pair."""
    return tvd_kway(real, syn, sizes, 2)


def tvd_triples(real: pd.DataFrame, syn: pd.DataFrame, sizes: dict[str, int]) -> float:
    """Average total-variation distance of the 3-way marginals over every set of three attributes."""
    return tvd_kway(real, syn, sizes, 3)


def bench_measurements(schema, attrs, measurements) -> MeasurementSet:
    """A benchmark's measurements as the generator takes them (no agreement, data or schema hash behind them)."""
    return MeasurementSet(
        agreement_sha256="bench",
        dataset_fingerprint="bench",
        schema_sha256="bench",
        attributes=attrs,
        domain=schema.domain(attrs),
        noise="gaussian",
        measurements=measurements,
    )


def release_proposed(real, schema, attrs, p, m1, cliques, iterations, rows, seed, sampling=None):
    """The release of a proposed Φ: its cliques measured with what the selection leaves (the 1-ways ``m1`` reused),
    the pgm fit, sdgov's sampler. Returns the synthetic frame, the plan and the fitted model."""
    ones = [(a,) for a in attrs]
    p = with_cell_weights(p, list(cliques), schema.domain(attrs))  # as resolving the proposed spec weighs Φ
    plan = plan_privacy(p, ones + list(cliques))
    m2 = measure_cliques(real, schema, list(cliques), plan.sigmas)
    mset = bench_measurements(schema, attrs, m1 + m2)
    model = registry.generator("pgm").fit(mset, GeneratorSpec(iterations=iterations))
    syn = pd.concat([pd.DataFrame(c) for c in iter_chunks(model, rows, seed, sampling=sampling)], ignore_index=True)
    return syn, plan, model


def sdgov_mst(
    real,
    schema,
    attrs,
    eps,
    delta,
    rows,
    seed,
    share,
    one_way,
    iterations,
    extra=0,
    exact_cells=250_000,
    triples=False,
    sampling=None,
    fast_count=True,
    pair_score=None,
    weigh_by_cells=None,
):
    """``sdgov propose --select mst`` with ``privacy.selection.extra`` (and ``triples``) and
    ``limits.max_exact_cells``: the extra cliques stay within the exact-inference limit, by the same rule as the
    product (``LimitsSpec.exact_cells``); ``sampling``: the sampler's (None: its default). ``fast_count``: the model
    sized as the product's selection sizes it (:func:`model_size.model_cells`); False: by mbi's junction tree, as
    before issue 40 (the same numbers, ~15× the CPU); ``pair_score``: MST's pair score (None: the default's);
    ``weigh_by_cells``: the power of its cells that weighs each selected marginal (None: the default's; 0: equal σ)."""
    t0, c0 = time.perf_counter(), time.process_time()
    sel = SelectionSpec(
        share=share, one_way=one_way, extra=extra, triples=triples, pair_score=pair_score, weigh_by_cells=weigh_by_cells
    )
    p = PrivacySpec(epsilon=eps, delta=delta, selection=sel)
    limit = LimitsSpec(max_exact_cells=exact_cells).exact_cells()
    m1, proposal = propose_mst(real, schema, attrs, p, limit, fast_count)
    pairs = [tuple(e.pair) for e in proposal.selected]
    syn, plan, model = release_proposed(real, schema, attrs, p, m1, pairs, iterations, rows, seed, sampling)
    info = {"pairs": [list(x) for x in pairs], "rho": plan.rho, "fit": model.fit_info}
    return syn, time.perf_counter() - t0, {**info, "cpu_seconds": time.process_time() - c0}


def propose_mst(real, schema, attrs, p: PrivacySpec, limit: int, fast_count: bool = True) -> tuple[list, Proposal]:
    """What ``sdgov propose --select mst`` does with ``p`` (its ``selection`` MST's): the draft's 1-ways measured, then
    MST's rounds, the extras keeping the model within ``limit`` cells (``fast_count``: sized as the product's
    selection sizes it; False: by mbi's junction tree). Returns the 1-ways' measurements and the proposal."""
    sizes = schema.domain(attrs)
    plugin = registry.generator("pgm")
    count = model_size.model_cells(plugin.name, plugin.model_cells) if fast_count else plugin.model_cells
    ones = [(a,) for a in attrs]
    plan1 = plan_privacy(p, ones)
    m1 = measure_cliques(real, schema, ones, plan1.sigmas)
    assert plan1.selection_rho is not None and p.selection is not None
    proposal = select_mst(
        attrs,
        sizes,
        {m.clique[0]: m.array().astype(float) for m in m1},
        lambda a, b: contingency_table(real, (a, b), (sizes[a], sizes[b])).astype(float),
        p.selection,
        plan1.selection_rho,
        10**6,
        fits=lambda cliques: count(attrs, ones + list(cliques), sizes) <= limit,
        exact=lambda c: contingency_table(real, c, tuple(sizes[a] for a in c)).astype(float),
    )
    return m1, proposal


def sdgov_aim(
    real, schema, attrs, eps, delta, rows, seed, share, one_way, iterations, aim_rounds=None, aim_iterations=None
):
    """AIM as ``propose --select aim`` runs it (:class:`sdgov.measurement.selection.aim.Aim`, mbi between
    rounds), then
    the release of the proposed Φ: its pairs measured with what the selection leaves, mbi fit, sdgov's sampler.
    The rounds' own measurements serve the selection only (the release does not reuse them)."""
    from sdgov.generators.pgm_mbi import marginal_estimator
    from sdgov.measurement.selection.aim import Aim

    t0, c0 = time.perf_counter(), time.process_time()
    sizes = schema.domain(attrs)
    sel = SelectionSpec(method="aim", share=share, one_way=one_way, rounds=aim_rounds)
    p = PrivacySpec(epsilon=eps, delta=delta, selection=sel)
    ones = [(a,) for a in attrs]
    plan1 = plan_privacy(p, ones)
    m1 = measure_cliques(real, schema, ones, plan1.sigmas)
    assert plan1.selection_rho is not None
    plugin = registry.generator("pgm")
    aim = Aim(
        spec=sel,
        rho=plan1.selection_rho,
        max_marginal_cells=10**6,
        max_model_cells=2 * 10**9,
        estimate=marginal_estimator(attrs, sizes, aim_iterations or iterations),
        model_cells=lambda cliques: plugin.model_cells(attrs, ones + list(cliques), sizes),
    )
    proposal = aim.run(attrs, sizes, m1, lambda c: contingency_table(real, c, tuple(sizes[a] for a in c)).astype(float))
    t_sel = time.perf_counter() - t0
    cliques = [tuple(e.pair) for e in proposal.selected]
    syn, plan, model = release_proposed(real, schema, attrs, p, m1, cliques, iterations, rows, seed)
    info = {
        "cliques": [list(x) for x in cliques],
        "aim_rounds": proposal.budget.rounds,
        "selection_rho_spent": proposal.budget.rho_spent,
        "selection_seconds": t_sel,
        "rho": plan.rho,
        "fit": model.fit_info,
    }
    return syn, time.perf_counter() - t0, {**info, "cpu_seconds": time.process_time() - c0}


def sdgov_all_pairs(real, schema, attrs, eps, delta, rows, seed, iterations):
    t0, c0 = time.perf_counter(), time.process_time()
    p = PrivacySpec(epsilon=eps, delta=delta)
    cliques = list(itertools.combinations(attrs, 2))
    plan = plan_privacy(p, cliques)
    m = measure_cliques(real, schema, cliques, plan.sigmas)
    mset = bench_measurements(schema, attrs, m)
    # what resolve() makes of this Φ under the default domain limit: the junction tree has 2.4·10^12 cells
    model = registry.generator("pgm").fit(mset, GeneratorSpec(iterations=iterations, inference="approximate"))
    syn = pd.concat([pd.DataFrame(c) for c in iter_chunks(model, rows, seed)], ignore_index=True)
    info = {"rho": plan.rho, "fit": model.fit_info, "cpu_seconds": time.process_time() - c0}
    return syn, time.perf_counter() - t0, info


def peer(
    python: str,
    script: str,
    codes: Path,
    domain: Path,
    eps: float,
    delta: float,
    rows: int,
    work: Path,
    *more: str,
    env: dict[str, str] | None = None,
):
    """One run of a peer script (``benchmarks/peers/``) on the codes and domain written to ``work``: its synthetic
    rows, its seconds (data in memory to rows in memory) and the rest of what it printed. ``more``: the script's own
    arguments after the common ones; ``env``: the process's environment (default: this one's)."""
    out = work / f"{'-'.join([script, *more])}.csv"
    cmd = [python, str(PEERS / script), str(codes), str(domain), str(eps), str(delta), str(rows), str(out), *more]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise RuntimeError(f"{script} failed: {res.stderr[-2000:]}")
    info = json.loads(res.stdout.strip().splitlines()[-1])
    # the whole process (interpreter start, imports, compilation, writing its rows), beside its own in-memory figure
    info["process_cpu_seconds"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return pd.read_csv(out), float(info.pop("seconds")), info


def shared_options(ap: argparse.ArgumentParser) -> None:
    """The options every comparison with the peers takes (this benchmark and ``bench_adult.py``)."""
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first..first+seeds-1 (split runs over processes)")
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--share", type=float, default=2 / 3)
    ap.add_argument("--one-way", type=float, default=0.5)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument(
        "--exact-cells", type=int, default=250_000, help="MST extra pairs: limits.max_exact_cells (the model's cells)"
    )
    ap.add_argument("--dpmm", help="python of a venv with dpmm installed")
    ap.add_argument("--mbi", help="python of a venv with mbi 2.0 installed")
    ap.add_argument("--combine", nargs="+", help="merge the arms of earlier --out files (run side by side) and exit")
    ap.add_argument("--out", default=None)


@contextlib.contextmanager
def peer_arms(args: argparse.Namespace, real: pd.DataFrame, sizes: dict[str, int]) -> Iterator[dict[str, Callable]]:
    """The peers' arms asked for (``--dpmm``, ``--mbi``), each a call that runs the peer on ``real``'s codes in its
    own venv; the codes and the domain are written once, to a directory that lives as long as the block."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        codes, domain = work / "codes.csv", work / "domain.json"
        real.to_csv(codes, index=False)
        domain.write_text(json.dumps(sizes))
        rows, arms, budget = len(real), {}, (args.eps, args.delta)
        if args.dpmm:
            arms["dpmm MST"] = lambda: peer(args.dpmm, "dpmm_mst.py", codes, domain, *budget, rows, work)
        if args.mbi:
            arms["mbi 2.0 MST"] = lambda: peer(args.mbi, "mbi_mst.py", codes, domain, *budget, rows, work)
        yield arms


def main() -> None:
    ap = argparse.ArgumentParser()
    shared_options(ap)
    ap.add_argument("--extra", type=int, default=0, help="MST: pairs selected beyond the spanning tree")
    ap.add_argument("--all-pairs", action="store_true", help="also all 136 pairs with approximate inference")
    ap.add_argument("--no-mst", action="store_true", help="leave out sdgov's MST arm (e.g. peers in another process)")
    ap.add_argument("--aim", action="store_true", help="also sdgov's AIM arm (propose --select aim, then release)")
    ap.add_argument("--aim-rounds", type=int, default=None, help="AIM: rounds planned (default 16 × attributes)")
    ap.add_argument("--aim-iterations", type=int, default=None, help="AIM: mirror descent per round (--iterations)")
    args = ap.parse_args()
    if args.aim:
        import logging

        logging.basicConfig(format="%(asctime)s %(message)s")
        logging.getLogger("sdgov.measurement.selection.aim").setLevel(logging.INFO)  # one line per round
    if args.combine:
        return combine(args.combine, args.out)

    schema = load_schema(SCHEMA)
    real = load_encoded(CENSUS, schema)
    attrs = [c.name for c in schema.columns if c.name in real.columns]
    real = real[attrs]
    sizes = schema.domain(attrs)
    rows = len(real)
    arms: dict[str, list[dict]] = {}
    with peer_arms(args, real, sizes) as peers:
        for s in range(args.first_seed, args.first_seed + args.seeds):
            runs = {}
            data = (real, schema, attrs, args.eps, args.delta, rows, s)  # every sdgov arm: same data, ε, seed
            selection = (args.share, args.one_way, args.iterations)
            if not args.no_mst:
                mst = "sdgov MST" + (f" + {args.extra} pairs" if args.extra else "")
                runs[mst] = functools.partial(sdgov_mst, *data, *selection, args.extra, args.exact_cells)
            if args.aim:
                runs["sdgov AIM"] = functools.partial(
                    sdgov_aim, *data, *selection, args.aim_rounds, args.aim_iterations
                )
            if args.all_pairs:
                runs["sdgov all 2-way (approximate)"] = functools.partial(sdgov_all_pairs, *data, args.iterations)
            for name, run in {**runs, **peers}.items():
                syn, secs, info = run()
                tvd = tvd_pairs(real, syn[attrs].astype(np.int64), sizes)
                arms.setdefault(name, []).append({"seed": s, "tvd": tvd, "seconds": secs, "info": info})
                print(f"seed {s}  {name:32} TVD {tvd:.4f}  {secs:6.1f} s", flush=True)
    summary = summarize(arms)
    result = {
        "benchmark": "issue 16: private selection, census extract, all 136 pairs",
        "command": " ".join(["python", *sys.argv]),
        "data": str(CENSUS.name),
        "rows": rows,
        "attributes": len(attrs),
        "pairs": len(attrs) * (len(attrs) - 1) // 2,
        "epsilon": args.eps,
        "delta": args.delta,
        "selection_share": args.share,
        "one_way": args.one_way,
        "extra_pairs": args.extra,
        "aim_rounds_planned": args.aim_rounds,
        "aim_iterations": args.aim_iterations,
        "exact_cells": args.exact_cells,
        "iterations": args.iterations,
        "seeds": args.seeds,
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "targets": {"tvd_max": 0.027, "seconds_vs_fastest_peer_max": 0.5},
        "arms": summary,
    }
    report(result, args.out)


def summarize(arms: dict[str, list[dict]]) -> dict[str, dict]:
    summary = {
        name: {
            "tvd_median": float(np.median([r["tvd"] for r in runs])),
            "seconds_median": float(np.median([r["seconds"] for r in runs])),
            "cpu_seconds_median": _median([r["info"].get("cpu_seconds") for r in runs]),
            "runs": runs,
        }
        for name, runs in arms.items()
    }
    peers = [v for k, v in summary.items() if not k.startswith("sdgov")]
    if peers:
        best_tvd = min(p["tvd_median"] for p in peers)
        fastest = min(p["seconds_median"] for p in peers)
        cpus = [p["cpu_seconds_median"] for p in peers if p["cpu_seconds_median"] is not None]
        for v in summary.values():
            v["tvd_vs_best_peer"] = v["tvd_median"] / best_tvd
            v["seconds_vs_fastest_peer"] = v["seconds_median"] / fastest
            cpu = v["cpu_seconds_median"]
            v["cpu_seconds_vs_fastest_peer"] = cpu / min(cpus) if cpus and cpu is not None else None
    return summary


def _median(values: list) -> float | None:
    known = [float(x) for x in values if x is not None]
    return float(np.median(known)) if known else None


def report(result: dict, out: str | None) -> None:
    for k, v in result["arms"].items():
        extra = (
            f"  ({v['tvd_vs_best_peer']:.2f}× best peer TVD, {v['seconds_vs_fastest_peer']:.2f}× fastest peer wall, "
            f"{v['cpu_seconds_vs_fastest_peer'] or float('nan'):.2f}× CPU)"
            if "tvd_vs_best_peer" in v
            else ""
        )
        wall, cpu = v["seconds_median"], v["cpu_seconds_median"]
        print(f"{k:32} TVD {v['tvd_median']:.4f}  {wall:6.1f} s  CPU {cpu or float('nan'):6.1f} s{extra}")
    if out:
        Path(out).write_text(json.dumps(result, indent=2) + "\n")


def combine(
    files: list[str],
    out: str | None,
    summarize_arms: Callable[[dict[str, list[dict]]], dict] = summarize,
    report_result: Callable[[dict, str | None], None] = report,
) -> None:
    """Arms run side by side as separate processes (same data, ε, seeds, same time window) in one result, summed
    up and reported by the benchmark's own functions (this one's :func:`summarize` and :func:`report` by default)."""
    parts = [json.loads(Path(f).read_text()) for f in files]
    arms: dict[str, list[dict]] = {}
    for p in parts:
        for k, v in p["arms"].items():
            arms.setdefault(k, []).extend(v["runs"])
    report_result({**parts[0], "command": [p["command"] for p in parts], "arms": summarize_arms(arms)}, out)


if __name__ == "__main__":
    main()
