"""Private selection of Φ (MST, McKenna et al. 2021): which pairs of attributes to measure, chosen under DP.

From the noisy 1-way marginals (already drawn and paid for; the fit reuses them) every candidate pair's score is
how far its exact 2-way table is from the independence estimate — the L1 distance, which one added or removed
record moves by at most 1. A Kruskal tree is then grown over the attributes: in each round OpenDP's report-noisy-max
with Gumbel noise (the exponential mechanism, ``make_noisy_max`` under zCDP) picks the highest-scoring pair that
joins two components. Forced pairs (stakeholders' knowledge) are in the tree from the start, excluded pairs and
pairs over the cell limit are never candidates. The 1-ways' noise adds to that distance in proportion to the pair's
cells, and so favours the pairs of attributes with many sparse values (Adult's native-country over income's
capital-loss); by default (``privacy.selection.pair_score: debiased_one_ways``, issue 40) each pair's score is taken
down by what that noise is expected to add — :func:`one_way_bias`, computed from the released 1-ways and their σ
alone, so the score keeps its sensitivity of 1. ``noisy_one_ways`` is the score without it (the default before);
``exact_margins`` measures the distance from the product of the pair's own exact margins (:func:`margin_scores`),
free of the bias, at a sensitivity of 4 that the mechanism divides out (``benchmarks/README.md``, issue 40).

With ``privacy.selection.triples`` (the default) the rounds after the tree (up to ``extra``) first add pairs, as
without it (the best-scoring pair not yet in Φ whose model stays within the bound), and once no pair is left they
choose among triples (none holding an excluded pair, none over the cell limit, none inside a clique already chosen,
each holding a pair a chosen clique holds). A triple scores the interaction its pairs do not explain — its L1 distance
from the best of its three conditional-independence estimates T_ab·T_bc/T_b (:func:`interaction_scores`; one
record moves it by at most 4, so every value of a triple round is divided by 4 before the mechanism) — net of what
measuring it would cost in noise: the release's Gaussian at the σ Φ would have with it (each marginal weighed by its
cells, :mod:`sdgov.agreement.weights`), √(2/π)·σ per cell, as AIM's quality score counts it (McKenna et al. 2022,
§4). A "stop" candidate scoring 0 competes in every triple round: once no triple is expected to pay for its noise,
the mechanism most likely picks it and the rounds end. So on a small
domain (five census attributes: all ten pairs fit) the rounds go on to the triples that pay, and on a large one (all
17: the model bound stops the pairs first) they are pairs, as measured (issue 40, ``benchmarks/README.md``).

The exponential mechanism releases only the index of the winner. The scores that the reviewers see are a separate
Gaussian release of the whole score vector (L2 sensitivity √m for m candidates), with its own small part of the
selection budget: post-processing of them (the ranking, "near the threshold") is free.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
from pydantic import Field

import sdgov.base.opendp_lite as dp
from sdgov.agreement.spec import SelectionSpec
from sdgov.agreement.weights import cells_weight
from sdgov.base.errors import SpecError
from sdgov.base.model import Frozen, unstated_at_default
from sdgov.data.schema import Clique

if TYPE_CHECKING:  # scipy.cluster costs 0.4-0.6 s to import: only a selection's rounds load it
    from scipy.cluster.hierarchy import DisjointSet

dp.enable_features("contrib")

SCORE_SENSITIVITY = 1.0  # L∞: one record moves each pair's L1 score by at most 1 (not monotonically)
NEAR = 5  # rejected candidates listed for the reviewers
MST_SCORE = "L1 distance of the pair's table from the product of its noisy 1-ways (independence)"
MARGIN_SCORE = "L1 distance of the pair's table from the product of its own margins (independence)"
DEBIASED_SCORE = (
    "L1 distance of the pair's table from the product of its noisy 1-ways (independence), less the distance their "
    "noise is expected to add"
)
MARGIN_SENSITIVITY = 4.0
"""How far one added or removed record moves :func:`margin_scores`: 1 through the pair's table, and at most 3
through the product of its margins — m·p·qᵀ becomes (m + 1)·p′·q′ᵀ, an L1 change of (m + 1)‖p′ − p‖₁ +
‖(m + 1)q′ − m·q‖₁ = ‖e_a − p‖₁ + 1 ≤ 3, the argument of :data:`TRIPLE_SENSITIVITY` with one slice. Checked on
random tables by ``tests/unit/measurement/test_selection.py``."""
BIAS = math.sqrt(2 / math.pi)  # E|N(0, σ²)| = σ·√(2/π): the L1 error a measurement's noise leaves per cell


class Candidate(Frozen):
    pair: list[str]
    cells: int
    noisy_score: float | None  # Gaussian-noised L1 distance from independence (None: no score budget)


class SelectedEdge(Candidate):
    how: str  # "selected" (exponential mechanism, round k) | "forced"
    round: int | None = None


class SelectionBudget(Frozen):
    rho: float  # exponential mechanism + noisy scores (+ AIM's round measurements)
    rho_mechanism: float  # MST: the exponential mechanism; AIM: its rounds, selections and measurements together
    rho_scores: float
    rounds: int
    gumbel_scale: float | None  # MST: every round's; AIM: the first round's (each round's is in ``aim_rounds``)
    score_sigma: float | None
    rho_spent: float | None = Field(default=None, exclude_if=lambda v: v is None)  # AIM: OpenDP's maps, summed


class AimRound(Frozen):
    """One AIM round as the reviewers see it (its noisy table stays in the draw-once store's round journal)."""

    round: int
    clique: list[str]
    how: str  # "forced" (measured first, no selection) | "selected" (exponential mechanism)
    sigma: float  # Gaussian measurement of the clique
    rho_measure: float
    gumbel_scale: float | None  # None for a forced clique
    rho_select: float
    candidates: int  # how many the mechanism chose among
    annealed: bool | None = None  # the model barely moved: σ halved, ε doubled for the next round


class Proposal(Frozen):
    """What the analyst proposes and the stakeholders review: Φ's pairs and why."""

    method: str
    mechanism: str
    attributes: list[str]
    selected: list[SelectedEdge]
    near_threshold: list[Candidate]  # the best-scoring candidates left out
    excluded: list[list[str]]
    over_cell_limit: list[list[str]]
    budget: SelectionBudget
    score: str = unstated_at_default(MST_SCORE)  # what ``noisy_score`` measures
    aim_rounds: list[AimRound] = Field(default_factory=list, exclude_if=lambda v: not v)

    @property
    def pairs(self) -> list[list[str]]:
        """The selected pairs (forced ones included), in the order of ``selected``."""
        return [e.pair for e in self.selected]


@cache
def _noisy_max(scale: float) -> dp.Measurement:
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float, monotonic=False)
    return dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=scale)


def gumbel_scale(rho_round: float) -> float:
    """Smallest Gumbel scale whose OpenDP privacy map gives at most ``rho_round`` for score sensitivity 1."""
    return float(dp.binary_search_param(_noisy_max, d_in=SCORE_SENSITIVITY, d_out=rho_round, T=float))


def rho_of_gumbel(scale: float) -> float:
    """The zCDP ρ that one noisy-max round at Gumbel ``scale`` costs, by OpenDP's privacy map (score sensitivity 1)."""
    return float(_noisy_max(scale).map(SCORE_SENSITIVITY))


def _gaussian_floats(sigma: float) -> dp.Measurement:
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    return dp.m.make_gaussian(*space, scale=sigma)


def pair_sensitivity(spec: SelectionSpec) -> float:
    """How far one record moves a pair's score under ``spec``'s pair score: :data:`MARGIN_SENSITIVITY` for
    ``exact_margins``, else :data:`SCORE_SENSITIVITY` (the mechanism divides a score by it before choosing)."""
    return MARGIN_SENSITIVITY if spec.pair_scoring == "exact_margins" else SCORE_SENSITIVITY


def score_sigma(rho: float, candidates: int, triples: int = 0, per_pair: float = SCORE_SENSITIVITY) -> float:
    """Smallest σ for which releasing all scores — ``candidates`` of sensitivity ``per_pair`` (:func:`pair_sensitivity`)
    and ``triples`` of sensitivity :data:`TRIPLE_SENSITIVITY` (L2 sensitivity √(m·s² + 16·t)) — costs at most ρ."""
    d_in = math.sqrt(candidates * per_pair**2 + triples * TRIPLE_SENSITIVITY**2)
    return float(dp.binary_search_param(_gaussian_floats, d_in=d_in, d_out=rho, T=float))


TRIPLE_SENSITIVITY = 4.0
"""How far one added or removed record moves a triple's :func:`interaction_scores`: 1 through the triple's own table,
and at most 3 through the estimate from its pairs — in the slice b₀ of the record, m·p·qᵀ becomes (m + 1)·p′·q′ᵀ, an
L1 change of (m + 1)‖p′ − p‖₁ + ‖(m + 1)q′ − m·q‖₁ = ‖e_a − p‖₁ + 1 ≤ 3 (the minimum over the three middles keeps
the bound). Checked on random tables by ``tests/unit/measurement/test_selection.py``."""


def interaction_scores(exact: Callable[[Clique], np.ndarray], triples: Sequence[Clique]) -> np.ndarray:
    """Each triple's L1 distance from the best of its three conditional-independence estimates
    T_ab·T_bc / T_b (b the middle): the 3-way interaction that no two of its pairs explain — 0 for a chain or a fork,
    which the pairs already give the model, large where only the 3-way table shows it (sensitivity
    :data:`TRIPLE_SENSITIVITY`)."""
    out = np.empty(len(triples))
    for i, t in enumerate(triples):
        table = exact(t).astype(np.float64)
        best = math.inf
        for middle in range(3):
            u = np.moveaxis(table, middle, 0)  # (b, a, c)
            ba, bc, b = u.sum(2), u.sum(1), u.sum((1, 2))
            est = np.divide(
                ba[:, :, None] * bc[:, None, :], b[:, None, None], out=np.zeros_like(u), where=b[:, None, None] > 0
            )
            best = min(best, float(np.abs(u - est).sum()))
        out[i] = best
    return out


def independence_scores(
    exact: Callable[[Clique], np.ndarray], one_ways: dict[str, np.ndarray], cliques: Sequence[Clique]
) -> np.ndarray:
    """L1 distance of each clique's exact table from the product of the noisy 1-ways (scaled to their mean total):
    one added or removed record moves it by at most 1, whatever the clique."""
    total = float(np.mean([max(float(v.sum()), 1.0) for v in one_ways.values()]))
    probs = {a: _distribution(v) for a, v in one_ways.items()}
    out = np.empty(len(cliques))
    for i, clique in enumerate(cliques):
        estimate = total * functools.reduce(np.multiply.outer, [probs[a] for a in clique])
        out[i] = float(np.abs(exact(clique) - estimate).sum())
    return out


def margin_scores(exact: Callable[[Clique], np.ndarray], pairs: Sequence[Clique]) -> np.ndarray:
    """L1 distance of each pair's exact table from the product of its own exact margins (sensitivity
    :data:`MARGIN_SENSITIVITY`): the score :func:`independence_scores` estimates, without the bias that the noisy
    1-ways add — on Adult at ε = 1 and the default share their noise (σ ≈ 71 a cell) put native-country × capital-loss
    2,000–2,600 records from independence (213 from its own margins), above capital-loss × income's 1,600, so such
    pairs won the rounds that income's capital-loss needed (issue 40)."""
    out = np.empty(len(pairs))
    for i, pair in enumerate(pairs):
        table = exact(pair).astype(np.float64)
        total = table.sum()
        estimate = np.outer(table.sum(1), table.sum(0)) / total if total > 0 else np.zeros_like(table)
        out[i] = float(np.abs(table - estimate).sum())
    return out


def one_way_bias(one_ways: dict[str, np.ndarray], sigma: float, draws: int = 64) -> dict[str, float]:
    """How far, in records, each noisy 1-way's distribution is expected to be from the true one — what the noise of
    σ adds to every :func:`independence_scores` value of a pair holding the attribute: the mean L1 distance between
    the distribution of the released table and that of the same table with fresh noise of σ (a parametric
    bootstrap on released figures only, seeded: post-processing, no privacy cost)."""
    total = float(np.mean([max(float(v.sum()), 1.0) for v in one_ways.values()]))
    rng = np.random.default_rng(0)
    out = {}
    for a, noisy in one_ways.items():
        p = _distribution(noisy)
        again = noisy[None, :] + rng.normal(0.0, sigma, (draws, noisy.size))
        out[a] = total * float(np.mean([np.abs(_distribution(d) - p).sum() for d in again]))
    return out


def _distribution(noisy: np.ndarray) -> np.ndarray:
    p = np.clip(noisy.astype(np.float64), 0, None)
    return p / p.sum() if p.sum() > 0 else np.full(p.shape, 1.0 / p.size)


@dataclass(frozen=True)
class Edges:
    """The draft's forced and excluded pairs checked against Φ, and which pairs the cell limit leaves out — the
    same for every selection method (MST, AIM)."""

    forced: list[tuple[str, str]]
    excluded: list[tuple[str, str]]
    too_big: list[tuple[str, str]]
    cells: dict[tuple[str, str], int]  # every pair of Φ's attributes → its marginal's cells
    candidates: list[tuple[str, str]]  # pairs the mechanism may pick: not forced, excluded or over the limit


def check_edges(attributes: list[str], sizes: dict[str, int], spec: SelectionSpec, max_marginal_cells: int) -> Edges:
    """Refuse unknown or contradictory edges and forced pairs over the cell limit; list the candidate pairs."""
    known = set(attributes)
    for kind, edges in (("force", spec.force), ("exclude", spec.exclude)):
        unknown = sorted({a for e in edges for a in e} - known)
        if unknown:
            raise SpecError(
                f"privacy.selection.{kind} names {unknown}, not modelled attributes",
                "privacy.selection",
                f"use attributes of Φ: {attributes}",
            )
    order = {a: i for i, a in enumerate(attributes)}

    def key(e: Sequence[str]) -> tuple[str, str]:
        a, b = sorted(e, key=order.__getitem__)
        return a, b

    forced = [key(e) for e in spec.force]
    excluded = {key(e) for e in spec.exclude}
    clash = sorted(set(forced) & excluded)
    if clash:
        raise SpecError(
            f"privacy.selection forces and excludes the same pair(s) {[list(c) for c in clash]}",
            "privacy.selection",
            "keep each pair in one list",
        )
    cells = {(a, b): sizes[a] * sizes[b] for i, a in enumerate(attributes) for b in attributes[i + 1 :]}
    too_big = sorted(p for p, c in cells.items() if c > max_marginal_cells)
    big_forced = [p for p in forced if p in too_big]
    if big_forced:
        raise SpecError(
            f"forced pair(s) {[list(p) for p in big_forced]} exceed the cell limit of {max_marginal_cells:,}",
            "privacy.selection.force",
            "coarsen the attributes or drop the pair",
        )
    candidates = [p for p in cells if p not in excluded and p not in too_big and p not in forced]
    return Edges(forced=forced, excluded=sorted(excluded), too_big=too_big, cells=cells, candidates=candidates)


def extra_triples(
    attributes: list[str], sizes: dict[str, int], edges: Edges, max_marginal_cells: int
) -> tuple[list[Clique], list[Clique]]:
    """The triples MST's extra rounds may choose (none holding an excluded pair) and those over the cell limit."""
    excluded = set(edges.excluded)
    fit: list[Clique] = []
    over: list[Clique] = []
    for t in combinations(attributes, 3):
        if any(p in excluded for p in combinations(t, 2)):
            continue
        (over if math.prod(sizes[a] for a in t) > max_marginal_cells else fit).append(t)
    return fit, over


def select_mst(
    attributes: list[str],
    sizes: dict[str, int],
    one_ways: dict[str, np.ndarray],
    exact_pair: Callable[[str, str], np.ndarray],
    spec: SelectionSpec,
    rho: float,
    max_marginal_cells: int,
    fits: Callable[[list[Clique]], bool] = lambda cliques: True,
    exact: Callable[[Clique], np.ndarray] | None = None,
    one_way_sigma: float | None = None,
) -> Proposal:
    """MST selection with ``rho`` (the exponential mechanism's rounds + the noisy scores). Reads the data only
    through ``exact_pair`` (exact 2-way tables) and ``exact`` (any clique's; default: pairs through ``exact_pair``),
    and only inside the mechanisms. Up to ``spec.extra_rounds`` rounds after the tree add the best remaining pairs
    — and triples, with ``spec.triples`` — for which ``fits`` (the model within its bound) holds; with triples each
    is scored net of the noise of its measurement (:func:`release_sigma`)."""
    edges = check_edges(attributes, sizes, spec, max_marginal_cells)
    forced, excluded, too_big, candidates = edges.forced, set(edges.excluded), edges.too_big, edges.candidates
    cells: dict[Clique, int] = dict(edges.cells.items())
    table = exact or (lambda c: exact_pair(*c))
    triples, triples_over = extra_triples(attributes, sizes, edges, max_marginal_cells) if spec.triples else ([], [])
    order = {a: i for i, a in enumerate(attributes)}

    from scipy.cluster.hierarchy import DisjointSet

    components = DisjointSet(attributes)
    for a, b in forced:
        components.merge(a, b)
    tree_rounds = _rounds_needed(components, candidates)
    scored: list[Clique] = [*candidates, *triples]  # every candidate of some round
    rounds = tree_rounds + min(spec.extra_rounds, len(scored) - tree_rounds)
    share_scores = spec.scores if candidates else 0.0
    rho_scores = rho * share_scores
    rho_mech = rho - rho_scores
    # pairs: distance from independence; triples: the interaction their pairs do not explain
    if spec.pair_scoring == "exact_margins":
        pair_scores = margin_scores(table, candidates)
    else:
        pair_scores = independence_scores(table, one_ways, candidates)
    if spec.pair_scoring == "debiased_one_ways" and candidates:
        # the 1-ways' σ as the plan fixed it: their share × one_way of ρ split equally (rho is the rest of the share)
        rho_ones = rho * spec.one_way / (1 - spec.one_way) / len(attributes)
        bias = one_way_bias(one_ways, one_way_sigma or math.sqrt(1 / (2 * rho_ones)))
        pair_scores = pair_scores - np.array([bias[a] + bias[b] for a, b in candidates])
    sensitivity = pair_sensitivity(spec)
    scores = np.concatenate([pair_scores, interaction_scores(table, triples)])
    for t in triples:
        cells[t] = math.prod(sizes[a] for a in t)

    noisy: dict[Clique, float | None] = dict.fromkeys(scored)
    sigma = None
    if rho_scores > 0:
        sigma = score_sigma(rho_scores, len(candidates), len(triples), sensitivity)
        released = _gaussian_floats(sigma)(scores.tolist())
        noisy = {p: float(s) for p, s in zip(scored, released)}

    chosen: list[SelectedEdge] = [
        SelectedEdge(pair=list(p), cells=cells[p], noisy_score=noisy.get(p), how="forced") for p in forced
    ]
    scale = gumbel_scale(rho_mech / rounds) if rounds else None
    index = {p: i for i, p in enumerate(scored)}
    taken: list[Clique] = list(forced)
    misfit: set[Clique] = set()  # over the model bound: the model only grows, so they never fit again
    # with triples, an extra round's score is net of the clique's measurement noise (σ at the planned Φ's size)
    for r in range(rounds):
        joining: list[Clique]
        if r < tree_rounds:  # Kruskal: a pair joining two components
            joining = [p for p in candidates if not components.connected(*p)]
            values = [float(scores[index[p]]) / sensitivity for p in joining]
        else:  # extra cliques, pairs first: any not inside a taken clique whose model stays within the bound (one
            # that did not fit never will: the model only grows); once no pair is left, triples (below)
            joining = _fitting([p for p in candidates if not _covered(p, taken)], taken, fits, misfit)
            values = [float(scores[index[p]]) / sensitivity for p in joining]
            if not joining and triples:
                joining, values = _triple_round(triples, taken, fits, misfit, scores, index, cells, spec, rho)
            if not joining:
                break
        assert scale is not None
        pick = joining[_noisy_max(scale)(values)]
        if not pick:
            break
        if len(pick) == 2:
            components.merge(*pick)
        taken.append(pick)
        chosen.append(
            SelectedEdge(pair=list(pick), cells=cells[pick], noisy_score=noisy[pick], how="selected", round=r + 1)
        )
    picked = {tuple(sorted(e.pair, key=order.__getitem__)) for e in chosen}
    chosen = outermost(chosen)
    left = [p for p in scored if p not in picked]
    if rho_scores > 0:
        left.sort(key=lambda p: -(noisy[p] or 0.0))
    near = [Candidate(pair=list(p), cells=cells[p], noisy_score=noisy[p]) for p in left[:NEAR]]
    return Proposal(
        method="mst",
        mechanism=(
            "MST: Kruskal rounds of OpenDP make_noisy_max (Gumbel noise, zCDP) on L1 scores; "
            "noisy scores by OpenDP make_gaussian"
        ),
        attributes=list(attributes),
        selected=chosen,
        near_threshold=near if rho_scores > 0 else [],
        score={"exact_margins": MARGIN_SCORE, "debiased_one_ways": DEBIASED_SCORE}.get(spec.pair_scoring, MST_SCORE),
        excluded=[list(p) for p in sorted(excluded)],
        over_cell_limit=[list(p) for p in [*too_big, *triples_over]],
        budget=SelectionBudget(
            rho=rho,
            rho_mechanism=rho_mech,
            rho_scores=rho_scores,
            rounds=rounds,
            gumbel_scale=scale,
            score_sigma=sigma,
        ),
    )


def release_sigma(spec: SelectionSpec, rho: float, weights: Sequence[float], weight: float) -> float:
    """σ at which the release will measure a selected marginal of ``weight`` beside Φ's others of ``weights`` when the
    selection has ``rho``: the plan gives the 1-ways ``share × one_way`` of the release's ρ, the selection ``share ×
    (1 − one_way)`` (= ``rho``) and Φ's other marginals the rest, by weight
    (:func:`sdgov.budget.accounting.plan_privacy`; the weights :func:`sdgov.agreement.weights.cells_weight` of their
    cells)."""
    rest = rho * (1 - spec.share) / (spec.share * (1 - spec.one_way))
    return math.sqrt(math.fsum([*weights, weight]) / (2 * rest * weight))


def outermost(selected: list[SelectedEdge]) -> list[SelectedEdge]:
    """The selected cliques less any inside another one (a pair a later triple holds): Φ lists no marginal another
    implies (the agreement refuses it — measuring it again only spends budget), and the larger one still gives it."""
    sets = [set(e.pair) for e in selected]
    return [e for e, s in zip(selected, sets) if not any(s < t for t in sets)]


def _fitting(
    cliques: list[Clique], taken: list[Clique], fits: Callable[[list[Clique]], bool], misfit: set[Clique]
) -> list[Clique]:
    """``cliques`` that keep the model within its bound next to ``taken`` (``misfit`` learns those that do not)."""
    misfit |= {c for c in cliques if c not in misfit and not fits([*taken, c])}
    return [c for c in cliques if c not in misfit]


def _triple_round(
    triples: list[Clique],
    taken: list[Clique],
    fits: Callable[[list[Clique]], bool],
    misfit: set[Clique],
    scores: np.ndarray,
    index: dict[Clique, int],
    cells: dict[Clique, int],
    spec: SelectionSpec,
    rho: float,
) -> tuple[list[Clique], list[float]]:
    """A round among the triples that extend a chosen dependence and fit, and "stop" (the empty clique, at 0): each
    valued by its interaction score net of its measurement's noise at the σ Φ would have with it, every value
    divided by :data:`TRIPLE_SENSITIVITY` so that the vector moves by at most 1 (the mechanism's sensitivity)."""
    joining = _fitting([t for t in triples if not _covered(t, taken) and _extends(t, taken)], taken, fits, misfit)
    weights = [cells_weight(cells[c], spec.cells_exponent) for c in outermost_cliques(taken)]
    values = [
        (float(scores[index[t]]) - _noise(spec, rho, weights, cells[t]) * cells[t]) / TRIPLE_SENSITIVITY
        for t in joining
    ]
    return [*joining, ()], [*values, 0.0]


def _noise(spec: SelectionSpec, rho: float, weights: list[float], cells: int) -> float:
    """The L1 error per cell that measuring a marginal of ``cells`` beside Φ's others (``weights``) would leave."""
    return BIAS * release_sigma(spec, rho, weights, cells_weight(cells, spec.cells_exponent))


def outermost_cliques(cliques: list[Clique]) -> list[Clique]:
    """The cliques less any inside another: those Φ will list."""
    sets = [set(c) for c in cliques]
    return [c for c, s in zip(cliques, sets) if not any(s < t for t in sets)]


def _extends(clique: Clique, taken: Sequence[Clique]) -> bool:
    """A pair always; a triple only when it holds a pair some taken clique holds: it adds a third attribute to a
    dependence the selection already chose (public: the earlier rounds' picks), as AIM's model grows."""
    return len(clique) == 2 or any(len(set(clique) & set(t)) >= 2 for t in taken)


def _covered(clique: Clique, taken: Sequence[Clique]) -> bool:
    """Whether ``clique`` is one of ``taken`` or inside one: measuring it again would add nothing new."""
    return any(set(clique) <= set(t) for t in taken)


def rounds_needed(attributes: list[str], forced: list[tuple[str, str]], candidates: list[tuple[str, str]]) -> int:
    """MST's Kruskal rounds for these attributes: one per merge the candidates can make once the forced pairs are in."""
    from scipy.cluster.hierarchy import DisjointSet

    components = DisjointSet(attributes)
    for a, b in forced:
        components.merge(a, b)
    return _rounds_needed(components, candidates)


def _rounds_needed(components: DisjointSet, candidates: list[tuple[str, str]]) -> int:
    """Kruskal rounds: one per merge the candidates can still make (a pair left out may leave a forest)."""
    from scipy.cluster.hierarchy import DisjointSet

    probe = DisjointSet(list(components))
    for s in components.subsets():
        first = next(iter(s))
        for x in s:
            probe.merge(first, x)
    rounds = 0
    for a, b in candidates:
        if probe.merge(a, b):
            rounds += 1
    return rounds
