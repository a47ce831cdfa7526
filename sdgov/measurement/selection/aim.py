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
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from pydantic import Field

from sdgov.agreement.spec import SelectionSpec
from sdgov.base.errors import InternalError
from sdgov.base.model import Frozen
from sdgov.budget.accounting import add_noise, rho_of_sigma
from sdgov.data.psi import Measurement
from sdgov.data.schema import Clique
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
    outermost,
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


def _keep_nowhere(journal: AimJournal) -> None:
    """No persistence (a benchmark, a test): a crash loses the rounds drawn so far."""


@dataclass(frozen=True, kw_only=True)
class Aim:
    """AIM's parameters, as OpenDP keeps its ``AIM``: the fields of a frozen dataclass; :meth:`run` selects Φ.

    ``spec`` brings the forced and excluded pairs, the planned rounds, the triples and the scores' share of ``rho``
    (the selection's ρ: rounds + the reviewers' noisy scores). ``estimate`` fits the model to the measurements so
    far (the 1-ways first); ``model_cells`` sizes the model of a list of cliques. ``journal`` is an interrupted
    run's draws (replayed, never drawn again); ``persist`` is handed every draw before anything uses it.
    """

    spec: SelectionSpec
    rho: float
    max_marginal_cells: int
    max_model_cells: int
    estimate: Callable[[list[Measurement]], Estimate]
    model_cells: Callable[[list[Clique]], int]
    journal: AimJournal | None = None
    persist: Callable[[AimJournal], None] = _keep_nowhere

    def run(
        self,
        attributes: list[str],
        sizes: dict[str, int],
        one_ways: list[Measurement],
        exact: Callable[[Clique], np.ndarray],
    ) -> Proposal:
        """AIM's rounds, then the reviewers' scores. Reads the data only through ``exact`` (exact tables of
        candidate cliques), and only inside the mechanisms."""
        rounds = _Rounds.start(self, attributes, sizes, one_ways, exact)
        rounds.measure_forced()
        while rounds.budget_left():
            draw = rounds.select()
            if draw is None:  # no candidate fits the model size limit
                break
            rounds.measure(draw)
        return rounds.proposal()

    def candidates(self, attributes: list[str], sizes: dict[str, int]) -> _Candidates:
        """The pairs :func:`check_edges` leaves, plus the triples when allowed (none holding an excluded pair)."""
        edges = check_edges(attributes, sizes, self.spec, self.max_marginal_cells)
        excluded: set[Clique] = set(edges.excluded)
        candidates: list[Clique] = list(edges.candidates)
        over: list[Clique] = list(edges.too_big)
        if self.spec.triples:
            for t in combinations(attributes, 3):
                if any(p in excluded for p in combinations(t, 2)):
                    continue
                cells = math.prod(sizes[a] for a in t)
                (over if cells > self.max_marginal_cells else candidates).append(t)
        return _Candidates(candidates, over, list(edges.forced), excluded)


@dataclass(frozen=True)
class _Candidates:
    candidates: list[Clique]
    over: list[Clique]  # over the cell limit: never candidates
    forced: list[Clique]
    excluded: set[Clique]


@dataclass
class _Rounds:
    """One run of :class:`Aim`: the candidates, the budget split and everything measured and spent so far."""

    aim: Aim
    attributes: list[str]
    cands: _Candidates
    weights: dict[Clique, float]
    n_cells: dict[Clique, int]
    answers: dict[Clique, np.ndarray]
    rho_scores: float  # the reviewers' scores
    rho_rounds: float  # everything else: the forced pairs and the rounds
    rho_sel: float  # this round's selection (exponential mechanism)
    rho_meas: float  # this round's measurement
    measured: list[Measurement]
    replay: list[RoundDraw]
    done: list[RoundDraw] = field(default_factory=list)
    spent: list[float] = field(default_factory=list)
    taken: list[Clique] = field(default_factory=list)
    fitted: list[tuple[int, Estimate]] = field(default_factory=list)
    final: bool = False

    @classmethod
    def start(
        cls,
        aim: Aim,
        attributes: list[str],
        sizes: dict[str, int],
        one_ways: list[Measurement],
        exact: Callable[[Clique], np.ndarray],
    ) -> _Rounds:
        """Initialise: the candidates' weights, cells and exact tables, and the budget split over the planned rounds."""
        cands = aim.candidates(attributes, sizes)
        every = cands.candidates + cands.forced
        rho_scores = aim.rho * aim.spec.scores if cands.candidates else 0.0
        rho_rounds = aim.rho - rho_scores
        planned = aim.spec.rounds or 16 * len(attributes)
        return cls(
            aim=aim,
            attributes=list(attributes),
            cands=cands,
            weights=workload_weights(cands.candidates, every),
            n_cells={c: math.prod(sizes[a] for a in c) for c in every},
            answers={c: exact(c).astype(np.float64) for c in every},
            rho_scores=rho_scores,
            rho_rounds=rho_rounds,
            rho_sel=SELECT_PART * rho_rounds / planned,
            rho_meas=(1 - SELECT_PART) * rho_rounds / planned,
            measured=list(one_ways),
            replay=list((aim.journal or AimJournal()).rounds),
            taken=list(cands.forced),
        )

    def record(self, draw: RoundDraw) -> None:
        self.done.append(draw)
        self.aim.persist(AimJournal(rounds=list(self.done)))

    def replayed(self, i: int, clique: Clique | None) -> RoundDraw | None:
        if i >= len(self.replay):
            return None
        r = self.replay[i]
        if clique is not None and tuple(r.clique) != clique:
            raise InternalError(f"AIM journal round {i + 1} measured {r.clique}, the replay expects {list(clique)}")
        return r

    def model(self) -> Estimate:
        """The model of everything measured so far (refitted only when something new was measured)."""
        if not self.fitted or self.fitted[-1][0] != len(self.measured):
            self.fitted[:] = [(len(self.measured), self.aim.estimate(list(self.measured)))]
        return self.fitted[-1][1]

    def measure_forced(self) -> None:
        """Forced pairs: measured first (no selection), at the planned round's σ — or less if many are forced."""
        forced = self.cands.forced
        rho_forced = min(self.rho_meas, self.rho_rounds / (2 * max(len(forced), 1)))
        for c in forced:
            draw = self.replayed(len(self.done), c)
            if draw is None:
                draw = _draw(len(self.done) + 1, c, "forced", sigma_for(rho_forced), None, 0, self.answers[c])
            self.record(draw)
            self.spent.append(rho_of_sigma(draw.sigma))
            self.measured.append(_measurement(draw))

    def budget_left(self) -> bool:
        """The stop rule: no round once ρ is spent; the last round takes exactly what is left."""
        if self.final:
            return False
        remaining = self.rho_rounds - math.fsum(self.spent)
        if remaining <= 0:
            return False
        if remaining < 2 * (self.rho_sel + self.rho_meas):
            self.rho_sel, self.rho_meas, self.final = SELECT_PART * remaining, (1 - SELECT_PART) * remaining, True
        return True

    def select(self) -> RoundDraw | None:
        """The round's pick by the exponential mechanism among the candidates the model size allows, and its noisy
        table — or the journal's, drawn before a crash (its choice and its noise are kept, not drawn again)."""
        draw = self.replayed(len(self.done), None)
        if draw is not None:
            return draw
        candidates, limit = self.cands.candidates, min(self.aim.max_model_cells, AIM_MODEL_CELLS)
        scale, sigma = gumbel_scale(self.rho_sel), sigma_for(self.rho_meas)
        share = (math.fsum(self.spent) + rho_of_gumbel(scale) + rho_of_sigma(sigma)) / self.rho_rounds
        size = {c: self.aim.model_cells(list(dict.fromkeys([*self.taken, c]))) for c in candidates}
        eligible = [c for c in candidates if size[c] <= limit * share] or [c for c in candidates if size[c] <= limit]
        if not eligible:
            return None
        est, top = self.model(), max(self.weights.values(), default=1.0)
        scores = [
            self.weights[c] / top * (float(np.abs(self.answers[c] - est(c)).sum()) - BIAS * sigma * self.n_cells[c])
            for c in eligible
        ]
        pick = eligible[_noisy_max(scale)(scores)]
        return _draw(len(self.done) + 1, pick, "selected", sigma, scale, len(eligible), self.answers[pick])

    def measure(self, draw: RoundDraw) -> None:
        """Spend the round, refit the model with its measurement and anneal (σ halves, ε doubles) when the
        measurement barely moved the model."""
        scale, sigma, pick = draw.gumbel_scale, draw.sigma, tuple(draw.clique)
        assert scale is not None
        self.spent += [rho_of_gumbel(scale), rho_of_sigma(sigma)]
        self.taken.append(pick)
        if draw.annealed is None:  # drawn now (or drawn just before a crash): decide the annealing
            before = self.model()(pick)
            self.record(draw)  # persisted before the refit that uses it
            self.measured.append(_measurement(draw))
            annealed = float(np.abs(self.model()(pick) - before).sum()) <= BIAS * sigma * self.n_cells[pick]
            draw = draw.model_copy(update={"annealed": annealed})
            self.done[-1] = draw
            self.aim.persist(AimJournal(rounds=list(self.done)))
        else:  # replayed with its annealing decided: no refit needed until the next new draw
            self.record(draw)
            self.measured.append(_measurement(draw))
        LOG.info(
            "AIM round %d: %s (%s, σ=%.4g, among %d), annealed=%s, ρ spent %.4g of %.4g",
            draw.round,
            " × ".join(draw.clique),
            "replayed" if len(self.done) <= len(self.replay) else "drawn",
            draw.sigma,
            draw.candidates,
            draw.annealed,
            math.fsum(self.spent),
            self.rho_rounds,
        )
        if draw.annealed:
            self.rho_sel, self.rho_meas = 4 * self.rho_sel, 4 * self.rho_meas  # ε doubles, σ halves

    def release_scores(self) -> tuple[dict[Clique, float | None], float | None]:
        """The reviewers' scores: every candidate's L1 error under the final model, one Gaussian release of the whole
        vector (the journal's, if released before a crash), and its σ."""
        scored = self.cands.candidates
        if self.rho_scores <= 0:
            return dict.fromkeys(scored), None
        sigma_scores = score_sigma(self.rho_scores, len(scored))
        journal = self.aim.journal
        kept = journal.scores if journal is not None and journal.scores is not None else None
        if kept is None:
            est = self.model()
            errors = [float(np.abs(self.answers[c] - est(c)).sum()) for c in scored]
            kept = [float(s) for s in _gaussian_floats(sigma_scores)(errors)]
        self.aim.persist(AimJournal(rounds=list(self.done), scores=kept))
        return dict(zip(scored, kept)), sigma_scores

    def proposal(self) -> Proposal:
        """The rounds' picks (a clique measured again listed once), the best of the rest, and the accounting."""
        rho_spent = math.fsum(self.spent)
        if rho_spent > self.rho_rounds * (1 + 1e-9):
            raise InternalError(f"AIM spent ρ={rho_spent} over its share {self.rho_rounds}")
        noisy, sigma_scores = self.release_scores()
        if self.rho_scores > 0:
            rho_spent += self.rho_scores
        done, n_cells = self.done, self.n_cells
        first_round = {tuple(d.clique): d for d in reversed(done)}
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
        chosen = outermost(chosen)  # a pair a later triple holds: the triple gives it
        left = [c for c in self.cands.candidates if c not in set(self.taken)]
        if self.rho_scores > 0:
            left.sort(key=lambda c: -(noisy[c] or 0.0))
        first = next((d.gumbel_scale for d in done if d.gumbel_scale is not None), None)
        return Proposal(
            method="aim",
            mechanism=(
                "AIM: rounds of OpenDP make_noisy_max (Gumbel noise, zCDP) on the current model's weighted L1 errors, "
                "each pick measured by OpenDP's discrete Gaussian and the model refitted (mbi), with annealing; "
                "noisy scores by OpenDP make_gaussian"
            ),
            attributes=list(self.attributes),
            selected=chosen,
            near_threshold=[Candidate(pair=list(c), cells=n_cells[c], noisy_score=noisy[c]) for c in left[:NEAR]]
            if self.rho_scores > 0
            else [],
            excluded=[list(p) for p in sorted(self.cands.excluded)],
            over_cell_limit=[list(p) for p in self.cands.over],
            budget=SelectionBudget(
                rho=self.aim.rho,
                rho_mechanism=self.rho_rounds,
                rho_scores=self.rho_scores,
                rounds=sum(d.how == "selected" for d in done),  # a clique may be measured again in a later round
                gumbel_scale=first,
                score_sigma=sigma_scores,
                rho_spent=rho_spent,
            ),
            score="L1 error of the final AIM model on the candidate's table (high: the model still misses it)",
            aim_rounds=[AimRound.model_validate(d.model_dump(include=set(AimRound.model_fields))) for d in done],
        )


def _measurement(draw: RoundDraw) -> Measurement:
    return Measurement(
        clique=tuple(draw.clique), shape=tuple(draw.shape), sigma=draw.sigma, noisy_counts=draw.noisy_counts
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
