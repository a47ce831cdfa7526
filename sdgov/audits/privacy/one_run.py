r"""One-run DP audit with canaries (Steinke, Nasr & Jagielski, "Privacy Auditing with One (1) Training Run",
NeurIPS 2023): an empirical lower bound ε_lower on the ε of the generator, from a single fit.

Game. m canary records are made up; each is put into the training data independently with probability 1/2
(S_i = ±1, drawn by the auditor). The generator is fitted once on base records + the included canaries and one
synthetic set is sampled. The auditor scores every canary from the output, guesses "+" (in) for the k highest
scores and "−" (out) for the k lowest and abstains on the rest; v of its r = 2k guesses are right. If the
generator is (ε, δ)-DP under add/remove-one, then (their Theorem 5.2)

    P[v correct or more]  ≤  P[Binomial(r, e^ε/(1 + e^ε)) ≥ v]  +  2·m·δ·α,
    α = max_{1 ≤ i ≤ v}  P[v − i ≤ Binomial(r, e^ε/(1 + e^ε)) < v] / i,

whatever the data and the scoring — the canaries' independent inclusion replaces the many training runs of the
classic audit. ε_lower is the largest ε this refutes at level β/|G| (G: the pre-set grid of k, Bonferroni).

Canaries for marginal-based generators. A generator that releases only (noisy) Φ marginals reveals a record only
through the Φ cells it adds 1 to. Each canary is therefore a cell of the full domain that *owns* a Φ-marginal cell
("its private cell"): no other canary and no base record touches that cell (canaries are picked greedily, cells of
the rarest marginal cells first; the base is drawn from reference records that touch no private cell). The score of
a canary is the number of synthetic records in its private cell. With exact marginals the private cell is empty
when the canary is out and holds one record's worth of mass when it is in: the guesses are right every time and
ε_lower grows with m (about log(r) for r guesses). With Gaussian noise of σ on every count the +1 is buried in the
noise and ε_lower stays below the claimed ε, as the theorem says it must.

A second guesser reads each canary's own *record* (issue 29: a generator that copies the records unique on a few
quasi-identifiers leaves the Φ cells as noisy as an honest one — the copy adds one row to a cell whose noise is
σ = 10 — but it puts the canary itself into its output). It says "out" for the k canaries whose exact record the
output holds least often, and "in" for the k of the others that appear in every synthetic sample, the most
surprising first: by (count − e)/√(e + 1), e the count the Φ-only model of the output itself predicts for that
record (the maximum-entropy joint with the output's own Φ tables,
:func:`sdgov.audits.privacy.beyond_phi.phi_projection`; e = 0 where the joint exceeds that check's
``MAX_CELLS``). For a generator that samples from a model on Φ the residual is sampling noise; a copier's record
stands out of it, whatever noise its Φ cells carry. Both guessers are functions of the output alone, so Thm 5.2
holds for each; ε_lower is the largest over both guessers and the k grid, each drawn at β/(2|G|) (Bonferroni over
all of them), so it holds at confidence 1 − β.

The output is ``synth_factor`` samples, each of the training size (a release-sized output), from the one fit:
sampling from a fitted model is post-processing and costs a DP release nothing, and for rows drawn i.i.d. from
the model the samples together are one sample ``synth_factor`` times the training size. A generator whose
*sampling* reads the data again (a copier) is audited as it would be released, once per sample — every release
from it carries its copies — which is a different mechanism than one release alone: a refutation refutes "the
output is post-processing of an (ε, δ)-DP fit", the claim a release of this pipeline makes (stated in the result).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sdgov.audits.privacy.base import GeneratorRef, record_keys, seed_of
from sdgov.audits.privacy.part import EpsilonBound, FitRequest, PrivacyPart
from sdgov.audits.privacy.planner import fit_all
from sdgov.base.executor import Executor, SerialExecutor
from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.agreement.sections.privacy_risk import RiskSettings
    from sdgov.audits.privacy.part import AuditFrame, AuditShape


def p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """Steinke et al. Thm 5.2: P[≥ v of r guesses right] under (ε, δ)-DP, m canaries."""
    if v <= 0:
        return 1.0
    from scipy import stats  # here: see sdgov.audits.privacy.attribute.p_correct

    q = 1.0 / (1.0 + math.exp(-eps))
    tail = float(stats.binom.sf(v - 1, r, q))
    if delta <= 0:
        return min(1.0, tail)
    pmf = stats.binom.pmf(np.arange(v - 1, -1, -1), r, q)  # P[Bin = v−1], P[Bin = v−2], …, P[Bin = 0]
    alpha = float(np.max(np.cumsum(pmf) / np.arange(1, v + 1)))
    return min(1.0, tail + 2 * m * delta * alpha)


def epsilon_from_guesses(m: int, r: int, v: int, delta: float, level: float) -> float:
    """The largest ε refuted at ``level`` by v right of r guesses (0 if none)."""
    if r == 0 or p_value(m, r, v, 0.0, delta) > level:
        return 0.0
    lo, hi = 0.0, 1.0
    while p_value(m, r, v, hi, delta) <= level and hi < 64:
        lo, hi = hi, hi * 2
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if p_value(m, r, v, mid, delta) <= level else (lo, mid)
    return lo


def one_run_k_grid(m: int) -> list[int]:
    """The numbers k of guesses on each side tried (the Bonferroni grid): m/8, m/4 and m/2, each at least 1, without
    repeats."""
    return sorted({max(1, m // 8), max(1, m // 4), max(1, m // 2)})


SCORES = ("cell", "record")  # the two guessers: the canary's private Φ cell, its own record (module docstring)


class Guess(Frozen):
    score: str = "cell"  # which guesser (SCORES)
    k: int
    guesses: int
    correct: int
    epsilon_lower: float


class OneRunResult(Frozen):
    canaries: int  # m
    included: int
    base_rows: int
    synth_rows: int
    beta: float
    delta: float
    by_k: list[Guess]
    epsilon_lower: float
    epsilon_lower_pure: float  # δ = 0
    note: str


def pick_canaries(
    reference: np.ndarray,
    sizes: list[int],
    cliques_idx: list[list[int]],
    m: int,
    seed: int,
    max_base_loss: float = 0.1,
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Up to m canary cells, each owning one Φ-marginal cell (marginal index, cell key) that no other canary
    touches. A canary owns a cell of the marginal with the most cells (then the cell rarest in the reference);
    candidates are tried rarest first, and owned cells may hold at most ``max_base_loss`` of the reference records
    in all (the base is drawn from the records that touch no owned cell)."""
    rng = np.random.default_rng(seed_of(seed, 50))
    mk = [record_keys(reference[:, c], [sizes[j] for j in c]) for c in cliques_idx]
    freq = [dict(zip(*np.unique(k, return_counts=True), strict=True)) for k in mk]
    n_cells = [int(np.prod([sizes[j] for j in c], dtype=np.float64)) for c in cliques_idx]
    total = int(np.prod(sizes, dtype=np.float64))
    n_cand = min(total, 20_000)
    cand = rng.choice(total, size=n_cand, replace=False) if total > n_cand else rng.permutation(total)
    cells = np.stack(np.unravel_index(cand, tuple(sizes)), axis=1)
    keys = [record_keys(cells[:, c], [sizes[j] for j in c]) for c in cliques_idx]
    rarity = np.min([[freq[j].get(int(x), 0) for x in keys[j]] for j in range(len(cliques_idx))], axis=0)
    order = np.argsort(rarity, kind="stable")
    used: set[tuple[int, int]] = set()
    private: set[tuple[int, int]] = set()
    chosen: list[np.ndarray] = []
    owned: list[tuple[int, int]] = []
    loss, budget = 0, max_base_loss * len(reference)
    for i in order:
        if len(chosen) >= m:
            break
        touch = [(j, int(keys[j][i])) for j in range(len(cliques_idx))]
        if any(t in private for t in touch):
            continue
        free = [t for t in touch if t not in used and loss + freq[t[0]].get(t[1], 0) <= budget]
        if not free:
            continue
        own = min(free, key=lambda t: (-n_cells[t[0]], freq[t[0]].get(t[1], 0)))
        loss += freq[own[0]].get(own[1], 0)
        private.add(own)
        used.update(touch)
        chosen.append(cells[i])
        owned.append(own)
    return np.asarray(chosen, dtype=np.int64).reshape(-1, len(sizes)), owned


def cell_scores(
    synth: np.ndarray, owned: list[tuple[int, int]], sizes: list[int], cliques_idx: list[list[int]]
) -> np.ndarray:
    """Synthetic records in each canary's private Φ cell."""
    score = np.zeros(len(owned))
    for j, c in enumerate(cliques_idx):
        idx = [i for i, o in enumerate(owned) if o[0] == j]
        if not idx:
            continue
        sk, cnt = np.unique(record_keys(synth[:, c], [sizes[x] for x in c]), return_counts=True)
        lookup = dict(zip(sk.tolist(), cnt.tolist(), strict=True))
        for i in idx:
            score[i] = lookup.get(owned[i][1], 0)
    return score


def record_scores(
    sets: list[np.ndarray], canaries: np.ndarray, sizes: list[int], cliques_idx: list[list[int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per canary: how often its exact record appears in all the samples, whether it appears in every one, and
    (count − e)/√(e + 1), e the count the Φ-only model of the whole output predicts for it (e = 0 when the joint
    has more than ``beyond_phi.MAX_CELLS`` cells)."""
    from sdgov.audits.privacy.beyond_phi import MAX_CELLS, SCORE_SWEEPS, phi_projection

    keys = record_keys(canaries, sizes)
    set_keys = [record_keys(syn, sizes) for syn in sets]  # each synthetic record's cell, once
    per_set = np.zeros((len(sets), len(keys)))
    for j, sk_all in enumerate(set_keys):
        sk, cnt = np.unique(sk_all, return_counts=True)
        at = np.minimum(np.searchsorted(sk, keys), len(sk) - 1)
        per_set[j] = np.where(sk[at] == keys, cnt[at], 0)
    count = per_set.sum(axis=0)
    expected = np.zeros(len(keys))
    cells = math.prod(sizes)
    if cells <= MAX_CELLS and len(keys):
        all_keys = np.concatenate(set_keys)
        joint = np.bincount(all_keys, minlength=cells).reshape(sizes).astype(np.float64)
        p = phi_projection(joint, [tuple(sorted(c)) for c in cliques_idx], SCORE_SWEEPS)
        expected = p.ravel()[keys] * len(all_keys)
    every = np.asarray((per_set > 0).all(axis=0))
    return count, every, (count - expected) / np.sqrt(expected + 1)


def record_guesses(
    count: np.ndarray, every: np.ndarray, surprise: np.ndarray, tie: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The record guesser's k "out" (the records the output holds least often) and k "in" (of the others: those in
    every sample first, then the largest residual); ``tie`` orders ties. Needs 2k ≤ the number of canaries."""
    said_out = np.lexsort((tie, count))[:k]
    rest = np.setdiff1d(np.arange(len(count)), said_out)
    said_in = rest[np.lexsort((tie[rest], surprise[rest], every[rest]))][len(rest) - k :]
    return said_out, said_in


@dataclass(frozen=True)
class OneRunDesign:
    """The game before the fit: the canaries, their private Φ cells, who is in (S_i), the training records and the
    tie-breaking order — drawn from the audit's seed alone."""

    canaries: np.ndarray
    owned: list[tuple[int, int]]
    included: np.ndarray  # S_i = +1
    train: np.ndarray
    base_rows: int
    tie: np.ndarray


def one_run_design(ref: GeneratorRef, reference: np.ndarray, m: int, base_rows: int, seed: int) -> OneRunDesign:
    """Up to m canaries with private cells, a base of reference records touching none of them, each canary in with
    probability 1/2 (module docstring)."""
    reference = np.asarray(reference, dtype=np.int64)
    sizes = [ref.domain[a] for a in ref.attributes]
    cliques_idx = _cliques_idx(ref)
    canaries, owned = pick_canaries(reference, sizes, cliques_idx, m, seed)
    m = len(canaries)
    private = set(owned)
    clean = np.ones(len(reference), bool)
    for j, c in enumerate(cliques_idx):
        mkeys = record_keys(reference[:, c], [sizes[i] for i in c])
        bad = np.array([(j, int(x)) in private for x in np.unique(mkeys)])
        if bad.any():
            clean &= ~np.isin(mkeys, np.unique(mkeys)[bad])
    rng = np.random.default_rng(seed_of(seed, 51))
    pool = np.flatnonzero(clean)
    base = reference[rng.choice(pool, size=min(base_rows, len(pool)), replace=False)]
    s = rng.random(m) < 0.5
    return OneRunDesign(canaries, owned, s, np.vstack([base, canaries[s]]), len(base), rng.random(m))


def _cliques_idx(ref: GeneratorRef) -> list[list[int]]:
    return [[ref.attributes.index(a) for a in c] for c in ref.cliques] or [list(range(len(ref.attributes)))]


ONE_RUN = "one_run"  # the planner's key of the game's fit


def one_run_request(ref: GeneratorRef, design: OneRunDesign, synth_factor: int, seed: int) -> FitRequest:
    """The game's one fit, on base + included canaries, ``synth_factor`` samples of the training size, scored where
    they were drawn (:func:`one_run_scores`: the Φ-only projection of the output is the costly part)."""
    sizes = [ref.domain[a] for a in ref.attributes]
    factor = max(1, int(synth_factor))
    score = partial(
        one_run_scores, canaries=design.canaries, owned=design.owned, sizes=sizes, cliques_idx=_cliques_idx(ref)
    )
    return FitRequest(
        (ONE_RUN,),
        design.train,
        seed_of(seed, 52),
        max(1, len(design.train)),
        tuple(seed_of(seed, 53, j) for j in range(factor)),
        score,
    )


def one_run_scores(
    sets: list[np.ndarray],
    *,
    canaries: np.ndarray,
    owned: list[tuple[int, int]],
    sizes: list[int],
    cliques_idx: list[list[int]],
) -> tuple[int, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The synthetic rows, each canary's cell score, and its record scores (:func:`record_scores`)."""
    synth = np.vstack(sets)
    return len(synth), cell_scores(synth, owned, sizes, cliques_idx), record_scores(sets, canaries, sizes, cliques_idx)


def one_run_result(
    design: OneRunDesign,
    scores: tuple[int, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]],
    synth_factor: int,
    beta: float,
    delta: float,
) -> OneRunResult:
    """The guesses of both guessers over the k grid, and the bound they give (module docstring)."""
    n_syn, cells, (count, every, surprise) = scores
    m, s, tie = len(design.canaries), design.included, design.tie
    by_cell = np.lexsort((tie, cells))  # ascending
    grid = one_run_k_grid(m) if m >= 2 else []
    level = beta / max(len(SCORES) * len(grid), 1)  # Bonferroni over both guessers and the k grid
    by_k: list[Guess] = []
    pure = 0.0
    for k in grid:
        said = {
            "cell": (by_cell[:k], by_cell[m - k :]),
            "record": record_guesses(count, every, surprise, tie, k),
        }
        for name in SCORES:
            said_out, said_in = said[name]
            correct = int((~s[said_out]).sum() + s[said_in].sum())
            by_k.append(
                Guess(
                    score=name,
                    k=k,
                    guesses=2 * k,
                    correct=correct,
                    epsilon_lower=epsilon_from_guesses(m, 2 * k, correct, delta, level),
                )
            )
            pure = max(pure, epsilon_from_guesses(m, 2 * k, correct, 0.0, level))
    train = len(design.train)
    factor = max(1, int(synth_factor))
    return OneRunResult(
        canaries=m,
        included=int(s.sum()),
        base_rows=design.base_rows,
        synth_rows=n_syn,
        beta=beta,
        delta=delta,
        by_k=by_k,
        epsilon_lower=max((g.epsilon_lower for g in by_k), default=0.0),
        epsilon_lower_pure=pure,
        note=f"ε_lower holds with confidence {1 - beta:g} (Steinke et al. 2023, Thm 5.2; Bonferroni over "
        f"the {' and '.join(SCORES)} guessers and k ∈ {grid}); {factor} samples of {train} synthetic rows from "
        f"one fit on {train} records (for a generator whose sampling reads its data, every sample carries it)",
    )


def one_run_audit(
    ref: GeneratorRef,
    reference: np.ndarray,
    m: int,
    base_rows: int,
    synth_factor: int,
    seed: int,
    beta: float,
    delta: float,
    executor: Executor | None = None,
) -> OneRunResult:
    """Plant up to m canaries (each in with probability 1/2), fit once, score, bound ε (module docstring)."""
    design = one_run_design(ref, reference, m, base_rows, seed)
    (scores,) = fit_all(ref, [one_run_request(ref, design, synth_factor, seed)], executor or SerialExecutor())
    return one_run_result(design, scores, synth_factor, beta, delta)


# ------------------------------------------------------------------------------------------------ the audit's part


class OneRun(PrivacyPart):
    """The one-run canary audit's ε lower bound (``--parts one_run``), on one fit of its own (base records plus
    planted canaries: nothing another part could share), made and scored by the planner beside the other parts' fits."""

    name: ClassVar[str] = "one_run"
    result_field: ClassVar[str] = "one_run"
    splits_beta: ClassVar[bool] = True

    def fit_keys(self, settings: RiskSettings, shape: AuditShape) -> list[tuple[Hashable, ...]]:
        """Its one fit."""
        return [(ONE_RUN,)]

    def requests(self, frame: AuditFrame) -> list[FitRequest]:
        """The game's fit, scored in the worker that makes it."""
        st = frame.settings
        return [one_run_request(frame.ref, self._design(frame), st.one_run_synth_factor, seed_of(st.seed, 7))]

    def run(self, frame: AuditFrame, fitted: list[Any]) -> OneRunResult:
        """The guesses and ε_lower from the fit's scores, at this part's share of β."""
        st = frame.settings
        return one_run_result(
            self._design(frame), fitted[0], st.one_run_synth_factor, frame.beta_share(), frame.claimed_delta or 0.0
        )

    def _design(self, frame: AuditFrame) -> OneRunDesign:
        st = frame.settings
        base = st.one_run_base_rows if st.one_run_base_rows is not None else st.train_rows
        return frame.cached(
            "one-run-design",
            lambda: one_run_design(frame.ref, frame.reference, st.one_run_canaries, base, seed_of(st.seed, 7)),
        )

    def bound(self, result: OneRunResult, frame: AuditFrame) -> EpsilonBound:
        """ε_lower at confidence 1 − (its share of β)."""
        return EpsilonBound(
            epsilon_lower=result.epsilon_lower,
            epsilon_lower_pure=result.epsilon_lower_pure,
            confidence=1 - result.beta,
        )
