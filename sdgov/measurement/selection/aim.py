"""Private selection of Φ by AIM (McKenna, Mullins, Sheldon, Miklau 2022, "AIM: An Adaptive and Iterative
Mechanism for Differentially Private Synthetic Data", Algorithm 1).

MST (:func:`sdgov.measurement.selection.mst.select_mst`) scores every pair once, against independence. AIM is adaptive:
each round
it asks the *current model* — fitted to everything measured so far — which candidate marginal it gets most wrong,

    q_r = w_r · (‖M_r(D) − M_r(p̂)‖₁ − √(2/π) · σ · n_r),

(the L1 error less the error the measurement's own noise would leave, weighted by how much of the workload r
covers), picks one with the exponential mechanism (OpenDP's ``make_noisy_max``, Gumbel noise, zCDP — the scores are
divided by the largest weight, so one record moves each by at most 1), measures it with OpenDP's discrete Gaussian,
and refits the model. When a round's measurement barely moves the model (by less than the noise's expected L1), the
rounds were too coarse: σ halves and ε doubles (AIM's annealing). The rounds stop when the declared ρ is spent —
the last round takes exactly what is left, so the spend never exceeds the declared share. Each round's own ρ is
what OpenDP's privacy maps say, summed.

Candidates are the pairs :func:`sdgov.measurement.selection.mst.check_edges` leaves (forced, excluded and cell-limit
rules shared
with MST), plus the triples when ``privacy.selection.triples`` allows them (none holding an excluded pair, none over
the cell limit); a candidate is eligible in a round only while the model with it stays within AIM's growing size
limit (``model_cells`` ≤ the domain limit × the share of ρ spent so far). Forced pairs are measured first, before
any selection, so that the model knows them. The 1-ways — drawn beforehand by the draw-once store, at the σ the
release reuses — are the model's starting point, as in AIM.

Every draw is handed to ``persist`` (the draw-once store's round journal) before anything uses it, and a
``journal`` from an interrupted run is replayed, never drawn again: a retry continues where the crash stopped.
The reviewers' scores (all candidates' L1 error under the final model) are one Gaussian release of the whole score
vector, as in MST, with its own part of the budget.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from itertools import combinations

import numpy as np
from pydantic import Field

from sdgov.agreement.accounting import add_noise, rho_of_sigma
from sdgov.agreement.spec import SelectionSpec
from sdgov.base.errors import InternalError
from sdgov.base.model import Frozen
from sdgov.data.schema import Clique
from sdgov.measurement.marginals import Measurement
from sdgov.measurement.selection.mst import (
    NEAR,
    AimRound,
    Candidate,
    Proposal,
    SelectedEdge,
    SelectionBudget,
    _gaussian_floats,
    _noisy_max,
    check_edges,
    gumbel_scale,
    rho_of_gumbel,
    score_sigma,
)

SELECT_PART = 0.1  # AIM: of each round's ρ, a tenth selects (exponential mechanism), the rest measures
AIM_MODEL_CELLS = 10**7  # AIM's default model size (80 MB of float64): the per-round refits stay fast
LOG = logging.getLogger(__name__)
BIAS = math.sqrt(2 / math.pi)  # E|N(0, σ²)| = σ·√(2/π): the L1 error a measurement's own noise leaves per cell

Estimate = Callable[[Clique], np.ndarray]  # the fitted model's table (counts) of a clique, axes in clique order


class RoundDraw(AimRound):
    """A round as persisted in the journal: what the reviewers see plus the noisy table itself."""

    shape: list[int]
    noisy_counts: list[int]


class AimJournal(Frozen):
    """Everything AIM drew so far, in order: a retry replays it instead of drawing again."""

    rounds: list[RoundDraw] = Field(default_factory=list)
    scores: list[float] | None = None  # the reviewers' noisy scores, once released


def sigma_for(rho: float) -> float:
    """σ of a sensitivity-1 Gaussian measurement costing at most ``rho`` (checked with OpenDP's map)."""
    sigma = math.sqrt(1 / (2 * rho)) * (1 + 1e-9)
    if rho_of_sigma(sigma) > rho:
        raise InternalError(f"OpenDP's Gaussian map gives more than ρ={rho} at σ={sigma}")
    return sigma


def workload_weights(cliques: list[Clique], workload: list[Clique]) -> dict[Clique, float]:
    """AIM's w_r = Σ_{s ∈ W} |r ∩ s|: how much of the workload a candidate's marginal informs."""
    sets = [set(s) for s in workload]
    return {c: float(sum(len(set(c) & s) for s in sets)) for c in cliques}


def select_aim(
    attributes: list[str],
    sizes: dict[str, int],
    one_ways: list[Measurement],
    exact: Callable[[Clique], np.ndarray],
    spec: SelectionSpec,
    rho: float,
    max_marginal_cells: int,
    max_model_cells: int,
    estimate: Callable[[list[Measurement]], Estimate],
    model_cells: Callable[[list[Clique]], int],
    journal: AimJournal | None = None,
    persist: Callable[[AimJournal], None] = lambda journal: None,
) -> Proposal:
    """AIM with ``rho`` (rounds + the reviewers' noisy scores). Reads the data only through ``exact`` (exact
    tables of candidate cliques), and only inside the mechanisms. ``estimate`` fits the model to the measurements
    so far (the 1-ways first); ``model_cells`` sizes the model of a list of cliques."""
    edges = check_edges(attributes, sizes, spec, max_marginal_cells)
    excluded = set(edges.excluded)
    candidates: list[Clique] = list(edges.candidates)
    over: list[Clique] = list(edges.too_big)
    if spec.triples:
        for t in combinations(attributes, 3):
            if any(p in excluded for p in combinations(t, 2)):
                continue
            cells = math.prod(sizes[a] for a in t)
            (over if cells > max_marginal_cells else candidates).append(t)
    forced: list[Clique] = list(edges.forced)
    weights = workload_weights(candidates, candidates + forced)
    top = max(weights.values(), default=1.0)
    n_cells = {c: math.prod(sizes[a] for a in c) for c in candidates + forced}
    answers = {c: exact(c).astype(np.float64) for c in candidates + forced}

    rho_scores = rho * spec.scores if candidates else 0.0
    rho_rounds = rho - rho_scores
    planned = spec.rounds or 16 * len(attributes)
    rho_meas = (1 - SELECT_PART) * rho_rounds / planned
    rho_sel = SELECT_PART * rho_rounds / planned
    limit = min(max_model_cells, AIM_MODEL_CELLS)

    replay = list((journal or AimJournal()).rounds)
    done: list[RoundDraw] = []
    spent: list[float] = []
    measured = list(one_ways)

    def record(draw: RoundDraw) -> None:
        done.append(draw)
        persist(AimJournal(rounds=list(done)))

    def measurement(draw: RoundDraw) -> Measurement:
        shape = tuple(draw.shape)
        return Measurement(clique=tuple(draw.clique), shape=shape, sigma=draw.sigma, noisy_counts=draw.noisy_counts)

    def replayed(i: int, clique: Clique | None) -> RoundDraw | None:
        if i >= len(replay):
            return None
        r = replay[i]
        if clique is not None and tuple(r.clique) != clique:
            raise InternalError(f"AIM journal round {i + 1} measured {r.clique}, the replay expects {list(clique)}")
        return r

    # Forced pairs: measured first (no selection), at the planned round's σ — or less if many are forced.
    rho_forced = min(rho_meas, rho_rounds / (2 * max(len(forced), 1)))
    for c in forced:
        draw = replayed(len(done), c)
        if draw is None:
            sigma = sigma_for(rho_forced)
            draw = _draw(len(done) + 1, c, "forced", sigma, None, 0, answers[c])
        record(draw)
        spent.append(rho_of_sigma(draw.sigma))
        measured.append(measurement(draw))
    fitted: list[tuple[int, Estimate]] = []

    def model() -> Estimate:
        """The model of everything measured so far (refitted only when something new was measured)."""
        if not fitted or fitted[-1][0] != len(measured):
            fitted[:] = [(len(measured), estimate(list(measured)))]
        return fitted[-1][1]

    taken: list[Clique] = list(forced)
    final = False
    while not final:
        remaining = rho_rounds - math.fsum(spent)
        if remaining <= 0:
            break
        if remaining < 2 * (rho_sel + rho_meas):  # the last round takes exactly what is left
            rho_sel, rho_meas, final = SELECT_PART * remaining, (1 - SELECT_PART) * remaining, True
        draw = replayed(len(done), None)
        if draw is not None:  # drawn before a crash: its choice and its noise are kept, not drawn again
            scale, sigma = draw.gumbel_scale, draw.sigma
            pick = tuple(draw.clique)
        else:
            scale, sigma = gumbel_scale(rho_sel), sigma_for(rho_meas)
            share = (math.fsum(spent) + rho_of_gumbel(scale) + rho_of_sigma(sigma)) / rho_rounds
            size = {c: model_cells(list(dict.fromkeys([*taken, c]))) for c in candidates}
            eligible = [c for c in candidates if size[c] <= limit * share] or [
                c for c in candidates if size[c] <= limit
            ]
            if not eligible:
                break
            est = model()
            scores = [
                weights[c] / top * (float(np.abs(answers[c] - est(c)).sum()) - BIAS * sigma * n_cells[c])
                for c in eligible
            ]
            pick = eligible[_noisy_max(scale)(scores)]
            draw = _draw(len(done) + 1, pick, "selected", sigma, scale, len(eligible), answers[pick])
        assert scale is not None
        spent += [rho_of_gumbel(scale), rho_of_sigma(sigma)]
        taken.append(pick)
        if draw.annealed is None:  # drawn now (or drawn just before a crash): decide the annealing
            before = model()(pick)
            record(draw)  # persisted before the refit that uses it
            measured.append(measurement(draw))
            annealed = float(np.abs(model()(pick) - before).sum()) <= BIAS * sigma * n_cells[pick]
            draw = draw.model_copy(update={"annealed": annealed})
            done[-1] = draw
            persist(AimJournal(rounds=list(done)))
        else:  # replayed with its annealing decided: no refit needed until the next new draw
            record(draw)
            measured.append(measurement(draw))
        LOG.info(
            "AIM round %d: %s (%s, σ=%.4g, among %d), annealed=%s, ρ spent %.4g of %.4g",
            draw.round,
            " × ".join(draw.clique),
            "replayed" if len(done) <= len(replay) else "drawn",
            draw.sigma,
            draw.candidates,
            draw.annealed,
            math.fsum(spent),
            rho_rounds,
        )
        if draw.annealed:
            rho_sel, rho_meas = 4 * rho_sel, 4 * rho_meas  # ε doubles, σ halves

    rho_spent = math.fsum(spent)
    if rho_spent > rho_rounds * (1 + 1e-9):
        raise InternalError(f"AIM spent ρ={rho_spent} over its share {rho_rounds}")

    scored = list(candidates)
    noisy: dict[Clique, float | None] = dict.fromkeys(scored)
    sigma_scores = None
    if rho_scores > 0:
        sigma_scores = score_sigma(rho_scores, len(scored))
        kept = journal.scores if journal is not None and journal.scores is not None else None
        if kept is None:
            est = model()
            errors = [float(np.abs(answers[c] - est(c)).sum()) for c in scored]
            kept = [float(s) for s in _gaussian_floats(sigma_scores)(errors)]
        persist(AimJournal(rounds=list(done), scores=kept))
        noisy = dict(zip(scored, kept))
        rho_spent += rho_scores

    first_round = {tuple(d.clique): d for d in reversed(done)}  # a clique measured again is listed once
    chosen = [
        SelectedEdge(
            pair=list(d.clique),
            cells=n_cells[tuple(d.clique)],
            noisy_score=noisy.get(tuple(d.clique)),
            how=d.how,
            round=d.round if d.how == "selected" else None,
        )
        for d in done
        if first_round[tuple(d.clique)] is d
    ]
    left = [c for c in scored if c not in set(taken)]
    if rho_scores > 0:
        left.sort(key=lambda c: -(noisy[c] or 0.0))
    first = next((d.gumbel_scale for d in done if d.gumbel_scale is not None), None)
    return Proposal(
        method="aim",
        mechanism=(
            "AIM: rounds of OpenDP make_noisy_max (Gumbel noise, zCDP) on the current model's weighted L1 errors, "
            "each pick measured by OpenDP's discrete Gaussian and the model refitted (mbi), with annealing; "
            "noisy scores by OpenDP make_gaussian"
        ),
        attributes=list(attributes),
        selected=chosen,
        near_threshold=[Candidate(pair=list(c), cells=n_cells[c], noisy_score=noisy[c]) for c in left[:NEAR]]
        if rho_scores > 0
        else [],
        excluded=[list(p) for p in sorted(excluded)],
        over_cell_limit=[list(p) for p in over],
        budget=SelectionBudget(
            rho=rho,
            rho_mechanism=rho_rounds,
            rho_scores=rho_scores,
            rounds=sum(d.how == "selected" for d in done),  # a clique may be measured again in a later round
            gumbel_scale=first,
            score_sigma=sigma_scores,
            rho_spent=rho_spent,
        ),
        score="L1 error of the final AIM model on the candidate's table (high: the model still misses it)",
        aim_rounds=[AimRound.model_validate(d.model_dump(include=set(AimRound.model_fields))) for d in done],
    )


def _draw(
    number: int, clique: Clique, how: str, sigma: float, scale: float | None, among: int, exact: np.ndarray
) -> RoundDraw:
    """The round's one noisy measurement (OpenDP discrete Gaussian), with its accounting."""
    noisy = add_noise(exact.astype(np.int64), sigma)
    return RoundDraw(
        round=number,
        clique=list(clique),
        how=how,
        sigma=sigma,
        rho_measure=rho_of_sigma(sigma),
        gumbel_scale=scale,
        rho_select=rho_of_gumbel(scale) if scale is not None else 0.0,
        candidates=among,
        shape=list(noisy.shape),
        noisy_counts=noisy.ravel().tolist(),
    )
