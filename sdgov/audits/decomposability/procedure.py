"""Black-box decomposability test (Houssiau et al. 2022, §3.2–3.3, eqs. 3–7): does a generator use only Φ?

Θ is the count vector of the joint table over the audited attributes; span(Φ) is spanned by the marginal-
indicator rows; Φ⊥ is its orthogonal complement. A generator that reads only φ(D) gives synthetic data with
the same distribution for any two datasets with the same φ; one that reads anything in Φ⊥ does not.

Everything works on the **count vector restricted to its non-empty cells** (weighted unique records), never on
rows, and every extremal dataset is built from **integer moves**: vectors

    u = ⊗_{a∈S} (e_{p_a} − e_{q_a}) ⊗_{a∉S} e_{j_a}        (S not inside any Φ marginal)

with entries in {−1, 0, +1} on 2^|S| cells. Every marginal of Φ sums u over some a ∈ S, where (e_p − e_q)·1 = 0,
so u ∈ Φ⊥ exactly; integer combinations keep counts integral and φ *exactly* unchanged (checked in code:
``φ(D±) == φ(D*)`` on integer tables), and a move only ever takes records from cells that hold enough of them,
so every extremal dataset is a valid dataset (non-negative integer counts).

Two regimes for the directions, neither tied to a basis a linear-algebra library picks (the p-value is a function
of the data, Φ, the generator, its params and the seed only; ``environment`` records the libraries anyway):

* **projection** (joint table up to ``explicit_max_cells``, e.g. Applications 1–2): Φ⊥ of the full joint table is
  the orthogonal sum of the interaction spaces W_S of the attribute sets S not inside a Φ marginal (the ANOVA
  decomposition; :class:`~.basis.ProjectionBasis`); P_S is computed by centring and averaging along axes. The
  random direction is β = Σ_S P_S g / √dim W_S, g seeded Gaussian (every set gets the same expected share), and
  features are the synthetic joint table. The extremal change δ is built greedily from moves (all 2^|T| corners
  occupied) in order of |⟨β, u⟩| (ties broken by index), each pushed to the capacity left in its cells, and
  D± = Θ(D*) ± δ.
* **minimal non-Φ marginals** (large tables, e.g. Application 3, 1.56M cells): every cell (T, v) of every minimal
  non-Φ marginal T (up to ``candidate_basis`` seeded cells of a larger one), each projected onto Φ⊥:
  b = ⊗_{a∈T}(e_v − 1/k_a) ⊗ 1, whose inner product with Θ(S) is the fully centred T-marginal of S at v — the
  statistics need only synthetic marginals (:class:`~.basis.MarginalSetBasis`). Here D* is sparse, so moves need
  only *half* of their corners occupied: D₊ = Θ(D*) + δ₊ and D₋ = Θ(D*) + δ₋ are built separately (extremal along
  +β and −β), each move oriented so that it only removes records from occupied corners (cells D* leaves empty are
  added to Θ's cell list).

The fits come in **pairs**: fit i on D₊ and fit i on D₋ share a seed, so under the null (φ(D₊) = φ(D₋)) the two are
exchangeable whatever the generator does with its seed, and a generator whose randomness comes from the seed gives
the same sample twice — its honest part cancels in the pair's difference.

In both regimes, β* (eq. 6) is the phase-1 mean response â restricted to the one interaction set whose response is
most significant — two sign-flip tests per set of the pairs' differences, directed along the data change and
omnibus (:mod:`.beta_star`).

Then K fresh pairs of fits on D±β* and a two-sided paired t-test of g(synthetic) = ⟨w, Θ(synthetic)⟩ (eq. 7), w
the matched filter of the data change or β* (:func:`_phase2_statistic`). The fits of the two phases are
independent, so the test keeps its size in its null whatever β* and w are.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from sdgov.agreement.sections.decomposability import DecomposabilitySettings
from sdgov.audits.decomposability.basis import MarginalSetBasis, ProjectionBasis, count_tables
from sdgov.audits.decomposability.beta_star import SetSelection, select_sets
from sdgov.audits.decomposability.moves import (
    MovePool,
    extremal_pair,
    greedy_extremal,
    greedy_half,
    half_move_pool,
    move_pool,
    ranked_by_magnitude,
)
from sdgov.audits.decomposability.theta import ThetaSpace
from sdgov.audits.environment import numeric_environment
from sdgov.audits.generator_protocol import (
    AuditError,
    Factory,
    GeneratorCrash,
    NotTestable,
    NotTestableResult,
    fit_generator,
    load_generator,
    make_generator,
    sample_generator,
)
from sdgov.base.executor import Executor, SerialExecutor
from sdgov.data.schema import Clique
from sdgov.engines.recordset import sample_frame

# ----------------------------------------------------------------------------------------------- result


class ControlResult(BaseModel):
    generator: str
    p_value: float
    verdict: Literal["pass", "fail"]
    caught: bool
    effect_size: float
    seconds: float


class DecomposabilityResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    test: str = "decomposability (Houssiau et al. 2022, eqs. 3-7)"
    generator: str
    generator_params: dict[str, Any]
    attributes: list[str]
    phi: list[list[str]]
    alpha: float
    K: int
    rows: int
    records: int
    seed: int
    p_value: float
    verdict: Literal["pass", "fail"]
    t_statistic: float
    effect_size: float = Field(description="Cohen's d of g_β* between D₊ and D₋ fits")
    mean_difference: float
    g_plus: list[float]
    g_minus: list[float]
    basis: dict[str, Any]
    extremal: dict[str, Any]
    top_cells: list[dict[str, Any]]
    top_interactions: list[dict[str, Any]]
    seeds: dict[str, list[int]]
    timing: dict[str, float]
    seconds: float
    environment: dict[str, Any] = Field(
        default_factory=dict, description="numpy/scipy versions and BLAS kernel (recorded; the p-value ignores them)"
    )
    control: ControlResult | None = None


def _seeds(seed: int, label: str, k: int) -> list[int]:
    ss = np.random.SeedSequence([seed, sum(label.encode()) * 7919 + len(label)])
    return [int(s.generate_state(1, np.uint32)[0]) for s in ss.spawn(k)]


def _fit_counts(
    factory: Factory,
    gen_name: str,
    theta: ThetaSpace,
    params: dict[str, Any],
    recs: pd.DataFrame,
    w: np.ndarray,
    n: int,
    marginals: list[tuple[str, ...]],
    seed: int,
) -> list[np.ndarray]:
    """One fit on weighted records and one seeded sample of ``n`` rows, returned as the sample's counts on the
    basis's ``marginals`` (:func:`~sdgov.audits.decomposability.basis.count_tables`): all the features read of it,
    and what a worker sends back instead of the sample (at census scale a batch of 1M-record samples, held together
    in the audit's process, was its memory peak: issue 37)."""
    gen = make_generator(factory, theta.cliques, theta.domain, params, where=gen_name)
    fit_generator(gen, recs, w, seed, where=gen_name)
    df = sample_generator(gen, n, seed ^ 0x5EED, theta.domain, where=gen_name)
    return [c.astype(np.int32) for c in count_tables(df, marginals, theta.domain)]  # n ≤ MAX_ROWS < 2³¹


def _fit_counts_by_path(gen_name: str, *args: Any) -> list[np.ndarray]:
    """Executor entry point: the generator is looked up by its registered name wherever the fit runs."""
    return _fit_counts(load_generator(gen_name), gen_name, *args)


class _Space:
    """What the test and its positive control share: Θ, the integer moves and the basis of Φ⊥, and the random state
    after building them (the control draws its own directions from a copy, exactly as if it had built them again)."""

    def __init__(
        self, records: pd.DataFrame, cliques: list[Clique], domain: dict[str, int], st: DecomposabilitySettings
    ) -> None:
        self.theta = ThetaSpace(records, cliques, domain)
        self.rng = np.random.default_rng(np.random.SeedSequence([st.seed, 1]))
        self.explicit = st.explicit_max_cells >= math.prod(self.theta.shape)
        self.pool = self._moves(st)
        self.basis: Any = (
            ProjectionBasis(self.theta) if self.explicit else MarginalSetBasis(self.theta, st.candidate_basis, self.rng)
        )

    def _moves(self, st: DecomposabilitySettings) -> MovePool:
        theta = self.theta
        pool = move_pool(theta, 10**6, self.rng) if self.explicit else half_move_pool(theta, st.move_pool, self.rng)
        if len(pool) == 0:
            raise NotTestable(
                "Φ⊥ has no direction that moves only occupied cells of the data: nothing to test",
                "decomposability",
                "audit on more data, or Φ already fixes the whole table",
            )
        return pool

    def info(self) -> dict[str, Any]:
        theta = self.theta
        return {
            "mode": self.basis.mode,
            **self.basis.info,
            "moves": len(self.pool),
            "move_sets": self.pool.set_counts(),
            "occupied_cells": theta.C,
            "joint_cells": math.prod(theta.shape),
            "minimal_non_phi_sets": [list(s) for s in theta.minimal_non_phi_sets()],
        }


class _Run:
    """One generator's test on a shared :class:`_Space`: its settings, its random directions, where its fits run."""

    def __init__(
        self,
        space: _Space,
        generator: str,
        st: DecomposabilitySettings,
        factory: Factory | None,
        executor: Executor,
        in_process: Executor,
    ) -> None:
        self.generator, self.st, self.params = generator, st, dict(st.generator_params)
        self.factory = factory  # an object handed in cannot be re-imported by path elsewhere: fitted here
        # a memo lives in one process: memoised fits spread over workers would refit in every one of them, so
        # they run where the memo is (inside a release: task runs in the stage's process, still shown in the UI)
        self.executor = in_process if self.params.get("memo") else executor
        self.theta, self.pool, self.basis, self.explicit = space.theta, space.pool, space.basis, space.explicit
        self.rng = copy.deepcopy(space.rng)
        self.n = st.rows or 10 * int(self.theta.x.sum())
        # each fit's features net of its own Φ-only model (small tables: the joint is at hand; see residual_features)
        self.residual = st.phi_residual and self.explicit

    def extremal(self, coef: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, float]:
        """D₊, D₋ along ``coef``, the records moved, and the cosine of D₊ − D₋ to the direction."""
        theta, pool = self.theta, self.pool
        scores = self.basis.scores(pool, coef)
        if self.explicit:
            plus, minus = extremal_pair(theta, greedy_extremal(pool, scores, theta.x))
        else:
            plus, minus = extremal_pair(
                theta, greedy_half(pool, scores, theta.x), greedy_half(pool, [-sc for sc in scores], theta.x)
            )
        moved = int(np.abs(plus - theta.x).sum() + np.abs(minus - theta.x).sum())
        return plus, minus, moved, _cos((plus - minus).astype(float), self.basis.cells_vector(coef))

    def fits(self, weights: np.ndarray, seeds: list[int], label: str) -> np.ndarray:
        """K independent fits on one weighted dataset → the basis features of each fit's synthetic sample."""
        label = f"decomposability-{label}"
        keep = weights > 0
        recs = self.theta.records[keep].reset_index(drop=True)
        args = (self.theta, self.params, recs, weights[keep], self.n, self.basis.marginals)
        if self.factory is not None:
            counts = [_fit_counts(self.factory, self.generator, *args, s) for s in seeds]
        else:
            counts = self.executor.map(_fit_counts_by_path, [(self.generator, *args, s) for s in seeds], label)
        features = self.basis.residual_features if self.residual else self.basis.features
        return np.asarray([np.asarray(features(c), dtype=np.float64) for c in counts])


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """(p, t, Cohen's d) of a two-sided paired t-test of a[i] − b[i] (fit i on D₊ and on D₋ shared a seed); d is
    the difference of the two groups' means over their pooled standard deviation, as unpaired. Pairs that are all
    equal give p = 1 (a generator deterministic in its seed and honest); equal non-zero differences give p = 0."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    diff = a - b
    mean = math.fsum(diff) / len(diff)
    pooled = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    d = mean / pooled if pooled > 0 else (0.0 if mean == 0 else math.copysign(math.inf, mean))
    if not np.any(diff != diff[0]):
        return (1.0 if mean == 0 else 0.0), (0.0 if mean == 0 else math.copysign(math.inf, mean)), d
    from scipy import stats  # here: see sdgov.audits.privacy.attribute.p_correct

    res = stats.ttest_rel(a, b)
    return float(res.pvalue), float(res.statistic), float(d)


def _critical_direction(
    run: _Run, G1p: np.ndarray, G1m: np.ndarray, z: np.ndarray, change: np.ndarray, ext: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray, SetSelection]:
    """Eqs. 5–6: the mean response â of the phase-1 fits inside the interaction set that responds most
    significantly (:mod:`.beta_star`; ``change`` is D₊β − D₋β, the data the phase moved) is the critical direction
    β* (unit norm); also which coordinates it uses."""
    st = run.st
    sel = select_sets(
        run.basis.groups(np.vstack([G1p, G1m])),
        [g[0] for g in run.basis.groups(run.basis.data_features(change)[None, :])],
        st.K,
        st.beta_star_alpha,
        st.beta_star_permutations,
        np.random.default_rng(np.random.SeedSequence([st.seed, 2])),
    )
    names = run.basis.set_names()
    ext["beta_star_sets"] = [names[i] for i in sel.chosen]
    ext["responding_sets"] = [names[i] for i in sel.responding]  # Holm at beta_star_alpha
    ext["set_tests"] = [
        {"set": n, "p_value": ps, "p_directed": pd_, "p_omnibus": po, "sum_t2": round(t, 6), "cells": q}
        for n, ps, pd_, po, t, q in zip(names, sel.p_set, sel.p_directed, sel.p_omnibus, sel.statistics, sel.cells)
    ]
    w = run.basis.critical(G1p.mean(axis=0) - G1m.mean(axis=0), sel.chosen)
    if not np.any(w):
        w = z
    return w / math.sqrt(math.fsum(w * w)), w != 0, sel


def _phase2_statistic(
    run: _Run, sel: SetSelection, G1p: np.ndarray, G1m: np.ndarray, change: np.ndarray, beta_star: np.ndarray
) -> tuple[np.ndarray, str]:
    """The direction w of phase 2's statistic g = ⟨w, features(synthetic)⟩, fixed before any phase-2 fit.

    When the chosen set's *directed* test (the fits follow the data change) was at least as significant as its
    omnibus test, w is the matched filter of that response: the phase-2 data change inside the set, u₂ = P_S(D₊β* −
    D₋β*), divided cell by cell by v, the phase-1 pairs' mean squared difference. A generator that reads the S-marginal
    moves its output along u₂ — exactly, up to its share of leaked rows — so ⟨u₂ ⊘ v, ·⟩ adds every cell's response
    in phase, where β* = â (the mean of K noisy fits per cell) mostly adds noise when the leak is a few percent of
    the rows or the fits carry DP-like noise. Otherwise (a response unlike the data change) w = β*, eq. 7 as in the
    paper. Either way w depends on phase 1 and the data only, so the paired test on fresh fits keeps its size."""
    i = sel.chosen[0]
    if sel.p_directed[i] > sel.p_omnibus[i]:
        return beta_star, "mean response (β*)"
    u = run.basis.groups(run.basis.data_features(change)[None, :])[i][0]
    Yp, Ym = run.basis.groups(G1p)[i], run.basis.groups(G1m)[i]
    v = ((Yp - Ym) ** 2).mean(axis=0)  # the paired differences' noise per cell (phase 2 compares pairs too)
    floor = 1e-9 * float(v.max(initial=0.0)) + 1e-300
    wg = np.where(v > floor, u / np.maximum(v, floor), 0.0)
    if not np.any(wg):
        return beta_star, "mean response (β*)"
    w = run.basis.embed(i, wg)
    return w / math.sqrt(math.fsum(w * w)), "data change ⊘ variance"


def run_decomposability(
    records: pd.DataFrame,
    cliques: list[Clique],
    domain: dict[str, int],
    generator: str,
    settings: DecomposabilitySettings | None = None,
    labels: dict[str, list[str]] | None = None,
    factory: Factory | None = None,
    executor: Executor | None = None,
    in_process: Executor | None = None,
) -> DecomposabilityResult:
    """Audit ``generator`` (a registered name) against Φ = ``cliques`` on the encoded ``records`` (cell indices), and
    its positive control beside it when the settings name one. The fits run through ``executor``; memoised ones
    (``memo`` in the generator params) through ``in_process``, an executor that keeps them in this process
    (default: serial)."""
    st = settings or DecomposabilitySettings()
    start = time.perf_counter()
    records = sample_frame(records, st.population_rows, st.seed)  # all records up to the limit, else a fixed sample
    space = _Space(records, cliques, domain, st)
    basis_seconds = time.perf_counter() - start
    try:
        result = _test(space, generator, st, labels, factory, (executor, in_process), basis_seconds)
    except GeneratorCrash as exc:  # no verdict; keep what is known for --out
        exc.partial = {"generator": generator, "settings": st.model_dump(mode="json"), "basis": space.info()}
        raise
    if not st.positive_control:
        return result
    control_settings = st.model_copy(update={"generator_params": st.control_params})
    try:
        cres = _test(space, st.positive_control, control_settings, labels, None, (executor, in_process), 0.0)
    except GeneratorCrash as exc:  # the audited generator's result stands; the control reached no verdict
        exc.partial = {"result": result.model_dump(mode="json"), "control": st.positive_control}
        raise
    control = ControlResult(
        generator=st.positive_control,
        p_value=cres.p_value,
        verdict=cres.verdict,
        caught=cres.verdict == "fail",
        effect_size=cres.effect_size,
        seconds=cres.seconds,
    )
    total = round(time.perf_counter() - start, 4)  # the test and its control
    timing = {**result.timing, "control": control.seconds, "total": total}
    return result.model_copy(update={"control": control, "timing": timing, "seconds": total})


def _test(
    space: _Space,
    generator: str,
    st: DecomposabilitySettings,
    labels: dict[str, list[str]] | None,
    factory: Factory | None,
    executors: tuple[Executor | None, Executor | None],
    basis_seconds: float,
) -> DecomposabilityResult:
    """The two phases of the test for one generator (§3.3)."""
    clock = _Clock(basis=basis_seconds)
    with clock("basis"):
        executor, in_process = executors
        run = _Run(space, generator, st, factory, executor or SerialExecutor(), in_process or SerialExecutor())
        binfo = space.info()
    with clock("extremal"):  # phase 1: a random direction β ∈ Φ⊥ and its extremal datasets D±β
        z = run.basis.random_direction(run.rng)
        plus1, minus1, moved1, cos1 = run.extremal(z)
        if moved1 == 0:
            raise NotTestable(
                "no extremal dataset can move away from D* without a negative count",
                "decomposability",
                "audit on more data",
            )
        ext: dict[str, Any] = {"phi_unchanged": True, "phase1_records_moved": moved1, "phase1_cosine_to_beta": cos1}
    # paired fits: fit i on D₊ and fit i on D₋ share a seed (the tests compare pairs, see beta_star and _paired)
    pairs = {k: _seeds(st.seed, f"{k}_plus", st.K) for k in ("phase1", "phase2")}
    seeds = {f"{k}_{side}": pairs[k] for k in ("phase1", "phase2") for side in ("plus", "minus")}
    with clock("fits"):
        G1p = run.fits(plus1, seeds["phase1_plus"], "phase1-plus")
        G1m = run.fits(minus1, seeds["phase1_minus"], "phase1-minus")
    with clock("extremal"):  # the critical direction β* and its extremal datasets
        w, keep, sel = _critical_direction(run, G1p, G1m, z, (plus1 - minus1).astype(np.float64), ext)
        plus2, minus2, moved2, cos2 = run.extremal(w)
        if moved2 == 0:
            plus2, minus2 = plus1, minus1
        stat, statistic = _phase2_statistic(run, sel, G1p, G1m, (plus2 - minus2).astype(np.float64), w)
        ext.update(
            {
                "phase2_records_moved": moved2,
                "phase2_cosine_to_beta_star": cos2,
                "beta_star_cells": int(keep.sum()),
                "phase2_statistic": statistic,
            }
        )
    with clock("fits"):  # phase 2: K fresh fits on D±β*; g = ⟨w, Θ(synthetic)⟩ (w: _phase2_statistic)
        gp = run.fits(plus2, seeds["phase2_plus"], "phase2-plus") @ stat
        gm = run.fits(minus2, seeds["phase2_minus"], "phase2-minus") @ stat
    return _result(run, gp, gm, w, labels, {"basis": binfo, "extremal": ext, "seeds": seeds}, clock)


def _result(
    run: _Run,
    gp: np.ndarray,
    gm: np.ndarray,
    w: np.ndarray,
    labels: dict[str, list[str]] | None,
    details: dict[str, Any],
    clock: _Clock,
) -> DecomposabilityResult:
    """Eq. 7 on pairs: the two-sided paired t-test of g between the D₊ and D₋ fits that shared a seed, and what the
    card shows beside it."""
    st, theta = run.st, run.theta
    with clock("test"):
        p, tval, dval = _paired(gp, gm)
        beta_cells = run.basis.cells_vector(w)
        top_cells = _top_cells(theta, beta_cells, labels)
    return DecomposabilityResult(
        generator=run.generator,
        generator_params=run.params,
        attributes=theta.attributes,
        phi=[list(c) for c in theta.cliques],
        alpha=st.alpha,
        K=st.K,
        rows=run.n,
        records=int(theta.x.sum()),
        seed=st.seed,
        p_value=p,
        verdict="fail" if p < st.alpha else "pass",
        t_statistic=tval,
        effect_size=dval,
        mean_difference=float(np.mean(gp) - np.mean(gm)),
        g_plus=[float(v) for v in gp],
        g_minus=[float(v) for v in gm],
        top_cells=top_cells,
        top_interactions=_interaction_shares(theta, beta_cells),
        timing=clock.timing(),
        seconds=round(clock.total(), 4),
        environment=numeric_environment(),
        **details,
    )


class _Clock:
    """Wall time per named step (steps may recur), the total and the main process's CPU time."""

    def __init__(self, basis: float) -> None:
        self.steps = {"basis": basis, "extremal": 0.0, "fits": 0.0, "test": 0.0}
        self.start, self.cpu_start = time.perf_counter() - basis, time.process_time()

    @contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.steps[step] += time.perf_counter() - t0

    def total(self) -> float:
        return time.perf_counter() - self.start

    def timing(self) -> dict[str, float]:
        steps = {**self.steps, "total": self.total(), "cpu_main_process": time.process_time() - self.cpu_start}
        return {k: round(v, 4) for k, v in steps.items()}


def _top_cells(theta: ThetaSpace, beta_cells: np.ndarray, labels: dict[str, list[str]] | None) -> list[dict[str, Any]]:
    """The ten cells carrying most of β* (what the card shows behind the verdict)."""
    top = ranked_by_magnitude(beta_cells)[:10]
    return [
        {"cell": theta.describe_cell(int(i), labels), "weight": float(beta_cells[i]), "count_in_data": int(theta.x[i])}
        for i in top
        if beta_cells[i] != 0
    ]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0


def _interaction_shares(theta: ThetaSpace, beta: np.ndarray, top: int = 5) -> list[dict[str, Any]]:
    """Share of β* carried by each minimal non-Φ interaction: ‖S-marginal of β*‖², normalised over the sets."""
    out = []
    for s in theta.minimal_non_phi_sets():
        idx = [theta.pos[a] for a in s]
        flat = np.ravel_multi_index(tuple(theta.values[:, i] for i in idx), tuple(theta.shape[i] for i in idx))
        m = np.bincount(flat, weights=beta, minlength=math.prod(theta.shape[i] for i in idx))
        out.append((float(m @ m), s))
    tot = sum(v for v, _ in out) or 1.0
    order = ranked_by_magnitude(np.array([v for v, _ in out]))
    return [{"attributes": list(out[i][1]), "share": out[i][0] / tot} for i in order[:top]]


# ----------------------------------------------------------------------------------------------- spec entry point


def audit_spec(
    spec_path: str,
    generator: str,
    K: int | None = None,
    seed: int | None = None,
    data_path: str | None = None,
    overrides: dict[str, Any] | None = None,
    executor: Executor | None = None,
) -> DecomposabilityResult:
    """:func:`audit_spec_parts` of a spec with one model (a split spec is refused in one line): its one result."""
    from sdgov.agreement.load import check_unsplit, load_spec

    check_unsplit(load_spec(spec_path), "the decomposability test of one result")
    result = audit_spec_parts(spec_path, generator, K, seed, data_path, overrides, executor)[None]
    assert isinstance(result, DecomposabilityResult)  # one model: nothing to test raises
    return result


def audit_spec_parts(
    spec_path: str,
    generator: str | None = None,
    K: int | None = None,
    seed: int | None = None,
    data_path: str | None = None,
    overrides: dict[str, Any] | None = None,
    executor: Executor | None = None,
) -> dict[str | None, DecomposabilityResult | NotTestableResult]:
    """Run the test for a release spec: its Φ, its data, its pre-registered ``audit`` settings (``K``, ``seed`` and
    ``overrides`` replace some of them, e.g. from the command line) — once per part of a split synthesis, each on
    that part's Φ and records only, as the release's audit stage runs it (:func:`sdgov.audits.parts.audited_units`);
    keyed by part (``None``: the one model). A part the data and Φ leave nothing to test in is "not testable"
    (:class:`NotTestableResult`) and the others get their verdicts; one model with nothing to test, or a split
    with no part to test, is the :class:`NotTestable` line. ``generator`` (None): the section's ``generator``, else
    the honest audit variant of the spec's generator — what the release's audit stage runs."""
    from sdgov.agreement.load import load_spec
    from sdgov.audits.generators import honest_variant
    from sdgov.audits.parts import audited_units, in_part
    from sdgov.engines import load_encoded

    loaded = load_spec(spec_path)
    settings = loaded.agreement.section("audit", DecomposabilitySettings) or DecomposabilitySettings()
    upd: dict[str, Any] = {**(overrides or {}), **({"K": K} if K is not None else {})}
    if seed is not None:
        upd["seed"] = seed
    if upd:
        settings = overridden(settings, upd)
    generator = generator or settings.generator or honest_variant(loaded.agreement.generator.name)
    schema = loaded.schema_
    records = load_encoded(data_path or loaded.data_path, schema)
    results: dict[str | None, DecomposabilityResult | NotTestableResult] = {}
    for part, ag in audited_units(loaded.agreement):
        codes = loaded.agreement.records_of(part, records)[ag.attributes].reset_index(drop=True)
        domain = schema.domain(ag.attributes)
        labels = {a: schema.by_name[a].labels() for a in ag.attributes}
        cliques = [tuple(c) for c in ag.cliques]
        with in_part(part):
            try:
                results[part] = run_decomposability(
                    codes, cliques, domain, generator, settings, labels, executor=executor
                )
            except NotTestable as exc:
                if part is None:
                    raise
                results[part] = NotTestableResult(reason=f"{exc.what} ({exc.fix})" if exc.fix else exc.what)
    if all(isinstance(r, NotTestableResult) for r in results.values()):
        raise NotTestable("no part of the split synthesis has anything to test", "decomposability", "see each part")
    return results


def overridden(settings: DecomposabilitySettings, update: dict[str, Any]) -> DecomposabilitySettings:
    """The settings with command-line ``update`` applied, validated: anything the section would refuse (a nested
    ``--params`` value, a ``--control`` that is not a registered name) is one :class:`AuditError` line."""
    from pydantic import ValidationError

    from sdgov.base.loading import validation_message

    try:
        return DecomposabilitySettings(**{**settings.model_dump(), **update})
    except ValidationError as exc:
        raise AuditError(validation_message(exc), "decomposability settings", "check the option values") from None
