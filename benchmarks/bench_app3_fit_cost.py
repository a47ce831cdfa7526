"""What one fit of Application 3's generator costs, before and after issue 37's cheaper fits, and what the audits
therefore cost at their defaults.

    nice -n 5 python benchmarks/bench_app3_fit_cost.py [--app app3] [--fits 2] [--old-fits 1] [--json OUT]
    python benchmarks/bench_app3_fit_cost.py --device [--fits 20] [--json OUT]      # on an accelerator (JAX on CUDA)

Every audit fits the release's generator again and again on shadow datasets: the privacy-risk audit
``planned_fits`` times (:mod:`sdgov.audits.privacy.cost`), the decomposability test 4·K times. On App 3 (Φ = all 21
pairs of 7 census attributes) that generator is Private-PGM on one 1.56M-cell junction-tree clique, 1,000 mirror-
descent iterations from uniform. This measures, in one run and one process:

* **the fit as the audits make it now** (the audit's own generator and settings, built by
  :func:`sdgov.audits.privacy.run.agreement_audit_run`, fitted and sampled as ``GeneratorRef.fit_sample`` does) —
  mirror descent with one marginal-oracle call an iteration (:class:`sdgov.generators.pgm_mbi.OneOracleMirrorDescent`),
  the dense clique's marginals by two matrix products (:mod:`sdgov.generators.pgm_dense`) — on shadow training sets
  (``train_rows``) and memorisation sets (``memorisation_rows``): CPU seconds of each fit and of its sample, after
  one warm-up fit;
* **the old path in the same run**: mbi's own ``MirrorDescent`` and default oracle (the fit before issue 37), the
  same datasets and seeds, and the ratio;
* **compilations** (:func:`sdgov.base.jax_compiles.compilations`): the programs the warm-up fit compiled, and that
  the later fits compiled none (one traced, compiled program per junction tree, the measurements as arguments);
* **agreement**: the two paths' fitted models on one shadow world's noisy marginals — total-variation distance and
  KL divergence of the two joint distributions (the 1.56M-cell clique is the whole joint) and the largest difference
  of any pair-marginal count — beside the same distances between two fits of that world whose Gaussian noise (σ of
  the plan) was drawn again: the fit-to-fit spread every audit statistic averages over;
* **peak memory** of the process (``ru_maxrss``);
* what the audits at their defaults therefore cost: fits × CPU-seconds a fit, and the wall time on this machine's
  cores.

``--device`` runs the new path alone wherever JAX finds an accelerator (``JAX_PLATFORMS`` left to JAX: CUDA where
installed), the same code, and reports fits per CPU-second there (on a device, read the wall times).

The census extract is read from ``../shared/data`` (ONS 2011 Census Microdata Teaching File, Open Government
Licence v1.0).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DATA = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"
SHADOW = "shadow (train_rows)"


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


def _fit_and_sample(ref, rows: np.ndarray, seed: int, n: int) -> tuple[float, float]:
    """CPU seconds of one fit and of its one sample, as ``GeneratorRef.fit_sample`` makes them."""
    from sdgov.audits.generator_protocol import fit_generator, load_generator, make_generator, sample_generator
    from sdgov.audits.privacy.base import weighted_unique

    gen = make_generator(load_generator(ref.path), list(ref.cliques), ref.domain, ref.params, ref.path)
    records, weights = weighted_unique(rows, ref.attributes)
    _, _, fit_cpu = timed(lambda: fit_generator(gen, records, weights, seed, ref.path))
    _, _, sample_cpu = timed(lambda: sample_generator(gen, n, seed + 1, ref.domain, ref.path))
    return fit_cpu, sample_cpu


def _mset_of(ref, rows: np.ndarray, seed: int):
    """The noisy measurement set the audit's honest generator fits to these rows with this seed."""
    from sdgov.audits.generators import HonestPGM
    from sdgov.audits.privacy.base import weighted_unique

    gen = HonestPGM(list(ref.cliques), ref.domain, **{k: v for k, v in ref.params.items() if k != "iterations"})
    got = {}
    gen._fit_model = lambda mset: got.setdefault("mset", mset)  # type: ignore[method-assign]
    records, weights = weighted_unique(rows, ref.attributes)
    gen.fit(records, weights, seed=seed)
    return got["mset"]


def _distance(a, b) -> dict[str, float]:
    """TV and KL (nats) between two fitted models' junction-tree tables (App 3: the joint itself), and the largest
    difference of a pair-marginal count."""
    tv, kl = 0.0, 0.0
    for p, q in zip(a.marginals, b.marginals, strict=True):
        p, q = np.asarray(p, np.float64).ravel(), np.asarray(q, np.float64).ravel()
        tv = max(tv, 0.5 * float(np.abs(p - q).sum()))
        m = (p > 0) & (q > 0)
        kl = max(kl, float((p[m] * np.log(p[m] / q[m])).sum()))
    counts = 0.0
    for node, p, q in zip(a.cliques, a.marginals, b.marginals, strict=True):
        for i, j in itertools.combinations(range(len(node)), 2):
            other = tuple(k for k in range(len(node)) if k not in (i, j))
            counts = max(counts, float(np.abs(p.sum(axis=other) - q.sum(axis=other)).max()) * a.total)
    return {"tv": tv, "kl": kl, "max_pair_count_difference": counts}


def _old_path():
    """mbi's own MirrorDescent with its default oracle: the fit before issue 37 (restored on exit)."""
    from contextlib import contextmanager

    from sdgov.generators import pgm_mbi

    @contextmanager
    def patched():
        saved = pgm_mbi.estimator
        pgm_mbi.estimator = lambda domain, cliques, cons=(): pgm_mbi.MirrorDescent()
        try:
            yield
        finally:
            pgm_mbi.estimator = saved

    return patched()


def _timed_fits(ref, datasets: dict[str, list[np.ndarray]], count: int, path: str) -> dict[str, list[dict]]:
    """``count`` fits of each size (datasets 1.., seeds 10..), each fit's and sample's CPU seconds, printed."""
    out: dict[str, list[dict]] = {}
    for label, sets in datasets.items():
        n = len(sets[0])
        for i in range(count):
            (fit_cpu, sample_cpu), wall, _ = timed(
                lambda rows=sets[i + 1], i=i, n=n: _fit_and_sample(ref, rows, 10 + i, n)
            )
            out.setdefault(label, []).append({"fit_cpu_s": fit_cpu, "sample_cpu_s": sample_cpu, "wall_s": wall})
            print(
                f"  {path} path, fit on {n:,} records ({label}): fit {fit_cpu:.2f} CPU s, "
                f"sample {sample_cpu:.2f} CPU s, {wall:.1f} s wall",
                flush=True,
            )
    return out


def _median_cpu(fits: dict[str, list[dict]]) -> float:
    return float(np.median([f["fit_cpu_s"] + f["sample_cpu_s"] for v in fits.values() for f in v]))


def batched_worlds(ref, worlds: list[np.ndarray], iterations: int) -> dict[str, object]:
    """``jax.vmap`` over a batch of shadow worlds against the same worlds one by one: the estimator's own steps (one
    compiled program for the batch), CPU and wall seconds of each way, and whether the batch's potentials equal the
    single fits' bit for bit. Measured, not used by the audits: on this machine's CPU the batch costs more than the
    fits one by one, and its results differ from theirs in the last bits (XLA vectorises the batch otherwise), so a
    fit's result would depend on which batch it was in."""
    import functools

    import jax
    import jax.numpy as jnp
    from mbi import marginal_loss

    from sdgov.generators.pgm_mbi import _compiled_loss, _domain, estimator

    msets = [_mset_of(ref, rows, 20 + i) for i, rows in enumerate(worlds)]
    domain = _domain(ref.attributes, ref.domain)
    losses, totals = [], []
    for mset in msets:
        linear = [_linear(m) for m in mset.measurements]
        losses.append(_compiled_loss(marginal_loss.from_linear_measurements(linear, domain)))
        totals.append(max(mset.noisy_total(), 1.0))
    est = estimator(domain, losses[0].cliques)

    @functools.partial(jax.jit, static_argnums=0)
    def init_many(est, loss, total):
        return jax.vmap(lambda lo, t: est._init(domain, lo, t))(loss, total)

    @functools.partial(jax.jit, static_argnums=0, donate_argnums=1)
    def steps_many(est, state, loss, total):
        return jax.vmap(lambda s, lo, t: est._multi_step(s, lo, t))(state, loss, total)

    stacked = jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *losses)
    stacked_totals = jnp.asarray(totals)
    blocks = -(-iterations // 50)

    def batch():
        state = init_many(est, stacked, stacked_totals)
        for _ in range(blocks):
            state = steps_many(est, state, stacked, stacked_totals)
        return jax.block_until_ready(state)

    def one_by_one():
        out = []
        for loss, total in zip(losses, totals, strict=True):
            state = jax.tree.map(jnp.copy, est._init(domain, loss, total))
            for _ in range(blocks):
                state = est._multi_step(state, loss, total)
            out.append(jax.block_until_ready(state))
        return out

    batch(), one_by_one()  # compile both
    together, wall_b, cpu_b = timed(batch)
    alone, wall_s, cpu_s = timed(one_by_one)
    same = all(
        np.array_equal(np.asarray(together.potentials[c].values[i]), np.asarray(alone[i].potentials[c].values))
        for i in range(len(worlds))
        for c in together.potentials.cliques
    )
    out = {
        "worlds": len(worlds),
        "iterations": blocks * 50,
        "batch": {"wall_s": wall_b, "cpu_s": cpu_b},
        "one_by_one": {"wall_s": wall_s, "cpu_s": cpu_s},
        "bit_identical": same,
    }
    print(
        f"  vmap over {len(worlds)} worlds × {blocks * 50} iterations: batch {cpu_b:.1f} CPU s ({wall_b:.1f} wall), "
        f"one by one {cpu_s:.1f} CPU s ({wall_s:.1f} wall); bit-identical: {same}",
        flush=True,
    )
    return out


def _linear(m):
    import mbi

    return mbi.LinearMeasurement(m.array().astype(np.float64).ravel(), tuple(m.clique), stddev=m.sigma or 1.0)


def decomposability_at_defaults(codes, loaded, K: int) -> dict[str, object]:
    """The decomposability test as a release pre-registers it at its defaults (the release's honest generator at its
    iterations, K fits per extremal dataset, serial in this process): its planned and actual fits, CPU seconds,
    wall seconds, peak memory and verdict."""
    from sdgov.agreement.sections.decomposability import DecomposabilitySettings
    from sdgov.audits.decomposability.procedure import run_decomposability
    from sdgov.audits.generators import honest_variant
    from sdgov.engines.recordset import sample_frame
    from sdgov.generators import pgm_mbi

    ag, schema = loaded.agreement, loaded.schema_
    settings = DecomposabilitySettings(K=K, generator_params={"iterations": ag.generator.iterations})
    fitted = []
    real_fit = pgm_mbi.fit_pgm

    def counting(*a, **k):
        fitted.append(1)
        return real_fit(*a, **k)

    pgm_mbi.fit_pgm = counting
    try:
        records = sample_frame(codes[ag.attributes], settings.population_rows, settings.seed)
        result, wall, cpu = timed(
            lambda: run_decomposability(
                records,
                [tuple(c) for c in ag.cliques],
                schema.domain(ag.attributes),
                honest_variant(ag.generator.name),
                settings,
            )
        )
    finally:
        pgm_mbi.fit_pgm = real_fit
    out = {
        "K": K,
        "planned_fits": 4 * K,
        "actual_fits": len(fitted),
        "cpu_s": cpu,
        "wall_s_serial": wall,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "verdict": result.verdict,  # type: ignore[attr-defined]
        "p_value": result.p_value,  # type: ignore[attr-defined]
        "timing": result.timing,  # type: ignore[attr-defined]
    }
    print(
        f"  decomposability test at K = {K}: {len(fitted)} fits (planned {4 * K}), {cpu:.0f} CPU s, {wall:.0f} s wall "
        f"serial, peak {out['peak_rss_mb']:.0f} MB; {out['verdict']} (p = {out['p_value']:.3g})",
        flush=True,
    )
    return out


def warm_start(ref, real: np.ndarray, n: int, iterations: int) -> dict[str, object]:
    """Would a warm start give the cold fit? World A fitted cold (the release's path: from uniform, ``iterations``
    iterations), and fitted again from world B's cold fit (a neighbouring shadow world) with a trajectory every 50
    iterations, against the same world with its Gaussian noise drawn again and against world A fitted cold for four
    times the iterations (how far from converged the cold fit is): the largest pair-marginal count difference and
    the largest pair-marginal TV of each to world A's cold fit."""
    import jax
    from mbi import marginal_loss

    from sdgov.generators.pgm_mbi import _compiled_loss, _domain, estimator

    domain = _domain(ref.attributes, ref.domain)
    draws = np.random.default_rng(7)
    rows_a, rows_b = (real[draws.choice(len(real), n, replace=False)] for _ in range(2))

    def world(rows: np.ndarray, seed: int):
        mset = _mset_of(ref, rows, seed)
        linear = [_linear(m) for m in mset.measurements]
        return _compiled_loss(marginal_loss.from_linear_measurements(linear, domain)), max(mset.noisy_total(), 1.0)

    (loss_a, total_a), (loss_a2, total_a2), (loss_b, total_b) = world(rows_a, 1), world(rows_a, 2), world(rows_b, 3)
    est = estimator(domain, loss_a.cliques)

    def fit(loss, total, warm=None, trajectory=None):
        record = (
            (lambda mu: trajectory.append({c: np.asarray(mu[c].values) for c in mu.cliques}))
            if trajectory is not None
            else None
        )
        return jax.block_until_ready(
            est.estimate(domain, loss, known_total=total, iters=iterations, warm_start=warm, callback_fn=record)
        )

    def tables(model):
        return {c: np.asarray(model.marginals[c].values) for c in model.marginals.cliques}

    def distance(x, y) -> dict[str, float]:
        return {
            "max_pair_count_difference": max(float(np.abs(x[c] - y[c]).max()) for c in x),
            "max_pair_tv": max(0.5 * float(np.abs(x[c] - y[c]).sum()) / total_a for c in x),
        }

    cold = tables(fit(loss_a, total_a))
    longer = tables(jax.block_until_ready(est.estimate(domain, loss_a, known_total=total_a, iters=4 * iterations)))
    warm: list = []
    fit(loss_a, total_a, warm=fit(loss_b, total_b), trajectory=warm)
    out = {
        "rows": n,
        "iterations": iterations,
        "noise_redraw_vs_cold": distance(tables(fit(loss_a2, total_a2)), cold),
        "cold_4x_iterations_vs_cold": distance(longer, cold),
        "warm_from_neighbour_vs_cold": [{"iterations": 50 * (i + 1), **distance(m, cold)} for i, m in enumerate(warm)],
    }
    last = out["warm_from_neighbour_vs_cold"][-1]
    print(
        f"  warm start from a neighbouring world's fit, after {last['iterations']} iterations: pair TV "
        f"{last['max_pair_tv']:.3f}, a pair count {last['max_pair_count_difference']:.1f} records off the cold fit "
        f"(another noise draw: TV {out['noise_redraw_vs_cold']['max_pair_tv']:.3f}; the cold fit run four times as "
        f"long: TV {out['cold_4x_iterations_vs_cold']['max_pair_tv']:.4f})",
        flush=True,
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--app", default="app3")
    ap.add_argument("--fits", type=int, default=2, help="timed fits of each size on the new path (after a warm-up)")
    ap.add_argument("--old-fits", type=int, default=1, help="timed fits of each size on the old path (0: skip it)")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--estimators", action="store_true", help="also every mbi estimator on one shadow dataset")
    ap.add_argument("--device", action="store_true", help="let JAX use an accelerator; the new path only")
    ap.add_argument("--batch", type=int, default=0, help="also vmap over this many shadow worlds against one by one")
    ap.add_argument("--batch-iterations", type=int, default=200, help="iterations of the batch measurement")
    ap.add_argument("--decomposability", type=int, default=0, metavar="K", help="also run the test at this K")
    ap.add_argument("--warm-start", action="store_true", help="also: does a warm-started fit give the cold one?")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.device:
        os.environ["JAX_PLATFORMS"] = ""  # sdgov.base.jaxsetup pins CPU only when the variable is unset
        args.old_fits = 0

    import jax

    from sdgov.agreement.load import load_spec
    from sdgov.agreement.sections.privacy_risk import DEFAULT_PARTS, RiskSettings
    from sdgov.audits.privacy.cost import planned_fits
    from sdgov.audits.privacy.run import agreement_audit_run
    from sdgov.base.jax_compiles import compilations
    from sdgov.budget.accounting import plan_privacy
    from sdgov.engines import load_encoded
    from sdgov.generators.pgm_mbi import fit_pgm, junction_tree_cells
    from sdgov.generators.settings import GeneratorSpec

    loaded = load_spec(REPO / "examples" / "census2011" / f"{args.app}.yaml")
    ag = loaded.agreement
    codes = load_encoded(Path(args.data), loaded.schema_)
    settings = RiskSettings()
    run = agreement_audit_run(ag, loaded.schema_, codes, plan_privacy(ag.privacy, ag.cliques), settings=settings)
    ref = run.frame().ref
    attrs = list(ag.attributes)
    domain = loaded.schema_.domain(attrs)
    cells = junction_tree_cells(attrs, [tuple(c) for c in ag.cliques], domain)
    devices = [str(d) for d in jax.devices()]
    print(f"{args.app}: {len(ag.cliques)} marginals, junction tree {cells:,} cells; generator {ref.path} {ref.params}")
    print(f"  JAX devices: {devices}", flush=True)

    real = codes[attrs].to_numpy()
    sizes = {SHADOW: settings.train_rows, "memorisation (memorisation_rows)": settings.memorisation_rows}
    draws = np.random.default_rng(0)
    datasets = {
        label: [real[draws.choice(len(real), n, replace=False)] for _ in range(1 + args.fits)]
        for label, n in sizes.items()
    }

    with compilations() as first:
        _, wall0, cpu0 = timed(lambda: _fit_and_sample(ref, datasets[SHADOW][0], 1, settings.train_rows))
    print(f"  new path, warm-up fit: {wall0:.1f} s wall, {cpu0:.1f} CPU s, {sum(first.values())} programs compiled")
    with compilations() as later:
        new = _timed_fits(ref, datasets, args.fits, "new")
    print(f"  programs compiled by the {sum(len(v) for v in new.values())} later fits: {sum(later.values())}")
    new_fit = _median_cpu(new)

    old: dict[str, list[dict]] = {}
    if args.old_fits:
        with _old_path():
            _, wall_o, cpu_o = timed(lambda: _fit_and_sample(ref, datasets[SHADOW][0], 1, settings.train_rows))
            print(f"  old path, warm-up fit: {wall_o:.1f} s wall, {cpu_o:.1f} CPU s", flush=True)
            old = _timed_fits(ref, datasets, min(args.old_fits, args.fits), "old")
    old_fit = _median_cpu(old) if old else None

    agreement = None
    if args.old_fits:
        world = datasets[SHADOW][1]
        spec = GeneratorSpec(name="pgm", iterations=int(ref.params.get("iterations", 1000)))
        mset, other_noise = _mset_of(ref, world, 10), _mset_of(ref, world, 11)
        fitted = fit_pgm(mset, spec)
        with _old_path():
            before = fit_pgm(mset, spec)
        agreement = {
            "new_vs_old_same_marginals": _distance(fitted, before),
            "new_vs_new_other_noise_draw": _distance(fitted, fit_pgm(other_noise, spec)),
        }
        print(f"  agreement, new vs old path on one world's marginals: {agreement['new_vs_old_same_marginals']}")
        print(f"  resolution, the same world with another noise draw: {agreement['new_vs_new_other_noise_draw']}")

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the batch and audit measurements
    warm = (
        warm_start(ref, real, settings.train_rows, int(ref.params.get("iterations", 1000))) if args.warm_start else None
    )
    decomposability = decomposability_at_defaults(codes, loaded, args.decomposability) if args.decomposability else None
    batch = (
        batched_worlds(
            ref,
            [real[draws.choice(len(real), settings.train_rows, replace=False)] for _ in range(args.batch)],
            args.batch_iterations,
        )
        if args.batch
        else None
    )
    cores = os.cpu_count() or 1
    print(
        f"  per fit (fit + sample, median): new {new_fit:.2f} CPU s = {1 / new_fit:.3f} fits per CPU-second"
        + (f"; old {old_fit:.1f} CPU s; old/new {old_fit / new_fit:.1f}×" if old_fit else "")
        + f"; process peak {peak_mb:.0f} MB"
    )

    floor = None if args.device else oracle_floor(domain, [tuple(c) for c in ag.cliques])
    if floor:
        print(
            f"  one oracle call: mbi {floor['mbi_oracle_ms_wall']:.1f} ms wall ({floor['mbi_oracle_ms_cpu']:.1f} CPU), "
            f"hand-fused JAX {floor['fused_jax_ms_wall']:.1f} ms wall ({floor['fused_jax_ms_cpu']:.1f} CPU)"
        )
    optimisers = (
        estimators(domain, [tuple(c) for c in ag.cliques], real[:1000], ref.params.get("sigma", 10.0))
        if args.estimators
        else None
    )
    privacy = planned_fits(settings, DEFAULT_PARTS)
    audits = {
        "privacy-risk audit (default parts)": sum(privacy.values()),
        "decomposability test, K = 10": 4 * 10,
        "decomposability test, K = 7": 4 * 7,
    }
    rows = []
    for name, fits in audits.items():
        row = {"audit": name, "fits": fits}
        for path, cpu in (("new", new_fit), ("old", old_fit)):
            if cpu:
                row[f"{path}_cpu_hours"] = round(fits * cpu / 3600, 3)
                row[f"{path}_wall_hours_on_{cores}_cores"] = round(fits * cpu / 3600 / cores, 3)
        rows.append(row)
        minutes = fits * new_fit / 60
        print(
            f"  {name}: {fits} fits × {new_fit:.1f} CPU s = {minutes:.1f} CPU min, {minutes / cores:.1f} min on {cores}"
        )
    print(f"  privacy-risk fits by part: {privacy}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "command": " ".join(["python", *sys.argv]),
                    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "machine": {
                        "platform": platform.platform(),
                        "cpus": cores,
                        "load_average": os.getloadavg(),
                        "jax_devices": devices,
                    },
                    "app": args.app,
                    "junction_tree_cells": cells,
                    "generator": {"path": ref.path, "params": ref.params},
                    "new_path": {
                        "warm_up_fit": {"wall_s": wall0, "cpu_s": cpu0, "programs_compiled": dict(first)},
                        "fits": new,
                        "programs_compiled_by_later_fits": dict(later),
                        "fit_and_sample_cpu_s_median": new_fit,
                        "fits_per_cpu_second": 1 / new_fit,
                    },
                    "old_path": {"fits": old, "fit_and_sample_cpu_s_median": old_fit} if old else None,
                    "old_over_new": old_fit / new_fit if old_fit else None,
                    "agreement": agreement,
                    "vmap_batch": batch,
                    "warm_start": warm,
                    "decomposability_at_defaults": decomposability,
                    "peak_rss_mb": peak_mb,
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
