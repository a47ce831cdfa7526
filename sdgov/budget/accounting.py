"""Privacy accounting under zero-concentrated DP, and the noise itself — both from OpenDP.

Neighbouring datasets differ by adding or removing one record, so one record moves one cell of each marginal
by 1: every marginal has L2 sensitivity 1. The Gaussian mechanism with scale σ on it is ρ = 1/(2σ²)-zCDP
(also for the discrete Gaussian, Canonne–Kamath–Steinke 2020); zCDP composes by adding ρ. The conversion to
(ε, δ)-DP is OpenDP's ``make_zCDP_to_approxDP`` (the tight CKS20 conversion), so every number on the card
comes from one place: the plan (:func:`plan_agreement`) under one δ rule (:class:`PrivacyRule`), and the release's
statement made from it at measure time (:mod:`sdgov.budget.statement`).
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import Field, PositiveFloat, PositiveInt

from sdgov.agreement.spec import Agreement, PrivacySpec
from sdgov.agreement.weights import weighed_attributes
from sdgov.base.errors import SpecError
from sdgov.base.model import Frozen
from sdgov.data.schema import Clique

if TYPE_CHECKING:
    import sdgov.base.opendp_lite as dp

SENSITIVITY = 1  # L2 sensitivity of a count marginal under add/remove-one neighbours
NEIGHBOURS = "add/remove one record (unbounded DP)"
MECHANISM = "discrete Gaussian (OpenDP make_gaussian on integer counts), zCDP"


DEFAULT_DELTA = 1e-9
"""δ when neither the spec nor the controller's policy sets one (:meth:`PrivacyRule.delta`): fixed, never computed
from the data — δ = 10^-ceil(log10 N) would print N's order of magnitude on the card."""


class PrivacyRule(Frozen):
    """What the data controller's policy says about every release's privacy figures (its ``max_delta``,
    ``public_max_records`` and ``sigma_floor``: :meth:`sdgov.governance.policy.Limits.rule`). The empty rule is the
    one a tool without a registry plans under (the fixed default δ, no floor); every plan is made under one."""

    max_delta: float | None = Field(default=None, gt=0, lt=1)
    public_max_records: PositiveInt | None = None
    sigma_floor: PositiveFloat | None = None

    def delta(self) -> tuple[float, str]:
        """The release's δ and where it came from (said on the card): the smallest of ``max_delta`` and the one
        ``public_max_records`` gives, or the fixed :data:`DEFAULT_DELTA` when neither is set. Never a function of
        the confidential data."""
        options: list[tuple[float, str]] = []
        if self.max_delta is not None:
            options.append((self.max_delta, f"set by the data controller's policy (max_delta = {self.max_delta:g})"))
        if self.public_max_records is not None:
            bound = self.public_max_records
            options.append(
                (
                    10.0 ** -(math.floor(math.log10(bound)) + 1),
                    f"derived from the public bound of {bound:,} records that the data controller's policy "
                    "declares (public_max_records): the largest power of ten below 1/bound",
                )
            )
        if not options:
            options.append((DEFAULT_DELTA, f"the fixed default δ = {DEFAULT_DELTA:g} (not derived from the data)"))
        return min(options)


@cache
def _opendp() -> Any:
    """OpenDP with its contrib features on (:mod:`sdgov.base.opendp_lite`), imported on first use: a command that
    only reads a policy or signs a statement (``sdgov init``, ``sign``) never loads it."""
    import sdgov.base.opendp_lite

    return sdgov.base.opendp_lite


@cache
def _gaussian(sigma: float) -> dp.Measurement:
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int)
    return dp.m.make_gaussian(*space, scale=float(sigma))


def rho_of_sigma(sigma: float) -> float:
    """ρ of one Gaussian measurement with scale σ on a sensitivity-1 marginal (OpenDP's privacy map)."""
    return float(_gaussian(sigma).map(SENSITIVITY))


def epsilon_of_rho(rho: float, delta: float) -> float:
    """Tight (ε, δ) of a ρ-zCDP release (OpenDP's zCDP → approximate-DP conversion).

    Above the ρ any budget is planned in (:data:`RHO_SEARCH`'s top, 10⁴: e.g. the most a policy's σ floor of 0.001
    would let a release spend) OpenDP's tight conversion overflows; there the classic bound ρ + 2√(ρ ln(1/δ)) (Bun &
    Steinke 2016, Prop. 1.3), which the tight ε never exceeds, is stated instead of a traceback."""
    if rho == 0:
        return 0.0
    if rho > RHO_SEARCH[1]:
        return rho + 2 * math.sqrt(rho * math.log(1 / delta))
    sigma = math.sqrt(SENSITIVITY**2 / (2 * rho))
    profile = _opendp().c.make_zCDP_to_approxDP(_gaussian(sigma)).map(SENSITIVITY)
    return float(profile.epsilon(delta))


RHO_SEARCH = (1e-12, 1e4)


@cache
def rho_of_epsilon(epsilon: float, delta: float) -> float:
    """Largest ρ whose tight conversion stays within (ε, δ). Kept per (ε, δ) for the life of the process: the search
    calls OpenDP's conversion some 70 times (≈ 0.3 CPU-s) and one command plans the same budget two to four times
    (the pre-flight, the controller's policy, the measure stage, the card); a refused (ε, δ) raises every time."""
    if not epsilon_of_rho(RHO_SEARCH[0], delta) <= epsilon < epsilon_of_rho(RHO_SEARCH[1], delta):
        raise SpecError(
            f"ε = {epsilon:g} at δ = {delta:g} is outside what can be accounted (ρ in {RHO_SEARCH})",
            "privacy.epsilon",
            "choose a meaningful budget (ε between about 0.01 and 100)",
        )
    return float(_opendp().binary_search(lambda rho: epsilon_of_rho(rho, delta) <= epsilon, bounds=RHO_SEARCH))


class MarginalBudget(Frozen):
    clique: Clique
    weight: float
    sigma: float
    rho: float | None  # None: measured exactly (noise 'none'), no DP accounting at all
    part: str | None = Field(default=None, exclude_if=lambda v: v is None)  # a split synthesis: whose records


class PrivacyPlan(Frozen):
    """Every privacy number of a release, computed once. The card only displays it."""

    noise: str
    mechanism: str
    neighbours: str
    rho_budget: float | None
    rho: float | None
    epsilon: float | None
    delta: float | None
    delta_source: str | None = None  # where δ came from (the policy, its public bound on N, or the spec): never N
    sigma_floor: float | None
    floor_binding: bool
    floor_max_epsilon: float | None
    marginals: list[MarginalBudget]
    selection_rho: float | None = None  # private selection's exponential mechanism + noisy scores (in ``rho``)
    selection_method: str | None = Field(default=None, exclude_if=lambda v: v is None)  # "mst" | "aim"
    part_selection_rho: dict[str, float] | None = Field(  # a split synthesis: each part's selection ρ (they add up)
        default=None, exclude_if=lambda v: v is None
    )

    @property
    def sigmas(self) -> dict[Clique, float]:
        """σ of each agreed marginal, keyed by its clique: the noise scale it is (or was) measured at."""
        return {m.clique: m.sigma for m in self.marginals}


def plan_privacy(
    p: PrivacySpec,
    cliques: list[Clique],
    *,
    delta: float | None = None,
    delta_source: str | None = None,
    sigma_floor: float | None = None,
) -> PrivacyPlan:
    """Resolve a privacy spec into σ per marginal, ρ spent, and (ε, δ) — one Φ's plan (:func:`plan_agreement` is
    the agreement's, under a :class:`PrivacyRule`).

    ``delta`` is the rule's (said where it came from in ``delta_source``; the empty rule's when omitted), used when
    the spec gives none; nothing here sees the data or its record count. ``sigma_floor`` is the data controller's
    (:mod:`sdgov.governance.policy`); a spec's own ``sigma_floor`` can only raise it.
    """
    if delta is None:
        delta, delta_source = PrivacyRule().delta()
    if p.noise == "none":
        return PrivacyPlan(
            noise="none",
            mechanism="none: statistics declared public, measured exactly",
            neighbours=NEIGHBOURS,
            rho_budget=None,
            rho=None,
            epsilon=None,
            delta=None,
            sigma_floor=None,
            floor_binding=False,
            floor_max_epsilon=None,
            marginals=[MarginalBudget(clique=c, weight=0.0, sigma=0.0, rho=None) for c in cliques],
        )
    if p.delta is not None:
        delta, delta_source = float(p.delta), "the agreement (privacy.delta), within the controller's policy"
    weights = _weights(p, cliques)
    if p.sigma is not None:
        sigmas = [float(p.sigma)] * len(cliques)
        budget = None
    else:
        budget = float(p.rho) if p.rho is not None else rho_of_epsilon(_epsilon(p), delta)
        shares = _shares(p, cliques, weights)
        sigmas = [math.sqrt(SENSITIVITY**2 / (2 * budget * share)) for share in shares]
    floors = [float(f) for f in (p.sigma_floor, sigma_floor) if f is not None]
    floor = max(floors) if floors else None
    floor_binding = False
    if floor is not None:
        floor_binding = any(s < floor for s in sigmas)
        sigmas = [max(s, floor) for s in sigmas]
    rhos = [rho_of_sigma(s) for s in sigmas]
    marginals = [
        MarginalBudget(clique=c, weight=w, sigma=s, rho=r) for c, w, s, r in zip(cliques, weights, sigmas, rhos)
    ]
    selection_rho = selection_budget(p, budget) if budget is not None else None
    rho = math.fsum(rhos) + (selection_rho or 0.0)
    if budget is not None and rho > budget * (1 + 1e-9):
        raise SpecError(f"internal accounting error: spent ρ={rho} exceeds budget {budget}", "privacy")
    floor_max = None
    if floor is not None:
        floor_max = epsilon_of_rho(len(cliques) * rho_of_sigma(floor), delta)
    return PrivacyPlan(
        noise="gaussian",
        mechanism=MECHANISM,
        neighbours=NEIGHBOURS,
        rho_budget=budget,
        rho=rho,
        epsilon=epsilon_of_rho(rho, delta),
        delta=delta,
        delta_source=delta_source,
        sigma_floor=floor,
        floor_binding=floor_binding,
        floor_max_epsilon=floor_max,
        marginals=marginals,
        selection_rho=selection_rho,
        selection_method=p.selection.method if p.selection is not None else None,
    )


def plan_agreement(agreement: Agreement, rule: PrivacyRule | None = None) -> PrivacyPlan:
    """The agreement's plan under the controller's ``rule`` (the empty rule when none: a tool outside a registry),
    the one way every stage and tool plans a release: :func:`plan_privacy` of its Φ — or, for a split synthesis, of
    every part's Φ at the part's share, each marginal tagged with its part and the parts' ρ added (sequential
    composition: conservative, as a record is in exactly one part and parallel composition would allow the maximum).
    With private selection each part's selection ρ is its plan's, and they add up the same way
    (``part_selection_rho``)."""
    rule = rule or PrivacyRule()
    delta, delta_source = rule.delta()
    sigma_floor = rule.sigma_floor
    if agreement.split is None:
        return plan_privacy(
            agreement.privacy, agreement.cliques, delta=delta, delta_source=delta_source, sigma_floor=sigma_floor
        )
    plans = {
        p.name: plan_privacy(p.privacy, p.cliques, delta=delta, delta_source=delta_source, sigma_floor=sigma_floor)
        for p in agreement.split.parts
    }
    first = next(iter(plans.values()))
    marginals = [m.model_copy(update={"part": name}) for name, plan in plans.items() for m in plan.marginals]
    if first.noise == "none":
        return first.model_copy(update={"marginals": marginals})
    assert first.delta is not None  # a noisy plan has δ
    rho = math.fsum(p.rho or 0.0 for p in plans.values())
    selection = {name: p.selection_rho for name, p in plans.items() if p.selection_rho is not None}
    floor_rho = len(marginals) * rho_of_sigma(first.sigma_floor) if first.sigma_floor is not None else None
    return first.model_copy(
        update={
            "rho_budget": agreement.privacy.rho,
            "rho": rho,
            "epsilon": epsilon_of_rho(rho, first.delta),
            "floor_binding": any(p.floor_binding for p in plans.values()),
            "floor_max_epsilon": None if floor_rho is None else epsilon_of_rho(floor_rho, first.delta),
            "marginals": marginals,
            "selection_rho": math.fsum(selection.values()) if selection else None,
            "part_selection_rho": selection or None,
        }
    )


def part_plan(plan: PrivacyPlan, part: str) -> PrivacyPlan:
    """One part's own plan from a split plan (:func:`plan_agreement`): its marginals, its ρ (their sum) and the ε of
    that ρ at the plan's δ — the noise budget of that part's model, which its audits simulate and claim. With private
    selection the part's ρ holds its selection's too, as an unsplit plan's does."""
    marginals = [m for m in plan.marginals if m.part == part]
    if plan.noise == "none":
        return plan.model_copy(update={"marginals": marginals})
    assert plan.delta is not None  # a noisy plan has δ
    selection = (plan.part_selection_rho or {}).get(part)
    rho = math.fsum([*(m.rho or 0.0 for m in marginals), selection or 0.0])
    return plan.model_copy(
        update={
            "rho": rho,
            "rho_budget": None,
            "epsilon": epsilon_of_rho(rho, plan.delta),
            "marginals": marginals,
            "selection_rho": selection,
            "part_selection_rho": None,
        }
    )


def selection_budget(p: PrivacySpec, budget: float) -> float | None:
    """ρ of private selection itself (exponential mechanism + the reviewers' noisy scores), or None without one."""
    if p.selection is None:
        return None
    return budget * p.selection.share * (1 - p.selection.one_way)


def _shares(p: PrivacySpec, cliques: list[Clique], weights: list[float]) -> list[float]:
    """Each marginal's share of ρ. With private selection the 1-ways split ``share × one_way`` equally — fixed
    by the draft, whatever pairs are selected or reviewed in, so the measurement stage finds them at the σ they
    were drawn at during selection — and the other marginals split what selection leaves, by weight."""
    if p.selection is None:
        total_w = math.fsum(weights)
        return [w / total_w for w in weights]
    ones = [len(c) == 1 for c in cliques]
    one_share = p.selection.share * p.selection.one_way / max(sum(ones), 1)
    rest_w = math.fsum(w for w, one in zip(weights, ones) if not one)
    rest = 1 - p.selection.share
    return [one_share if one else rest * w / rest_w for w, one in zip(weights, ones)]


def _epsilon(p: PrivacySpec) -> float:
    """ε of a spec that gives neither σ nor ρ: PrivacySpec's validator requires exactly one of the three."""
    assert p.epsilon is not None
    return float(p.epsilon)


def _weights(p: PrivacySpec, cliques: list[Clique]) -> list[float]:
    by_key = {weighed_attributes(k): w for k, w in p.weights.items()}
    return [float(by_key.get(frozenset(c), 1.0)) for c in cliques]


def epsilon_pld(plan: PrivacyPlan) -> float | None:
    """An upper bound on ε at the plan's δ from the composition of its discrete Gaussians' privacy-loss
    distributions (:func:`epsilon_pld_of_sigmas`). ``None`` when no noise was added, and when Φ was chosen by
    private selection: the exponential mechanism's and the noisy scores' ρ is not a discrete Gaussian's, so only
    the zCDP bound (:attr:`PrivacyPlan.epsilon`) covers the whole release."""
    if plan.noise == "none" or plan.delta is None or plan.selection_rho:
        return None
    return epsilon_pld_of_sigmas([m.sigma for m in plan.marginals], plan.delta)


def epsilon_pld_of_sigmas(sigmas: list[float], delta: float) -> float:
    """An upper bound on ε at δ for the composition of discrete Gaussians of these scales, each on a sensitivity-1
    marginal, by privacy-loss distributions.

    The zCDP conversion is an upper bound for *any* ρ-zCDP mechanism; composing the discrete Gaussians' own
    privacy-loss distributions (Google's ``dp-accounting``) is tighter — but not exact: its discretisation is
    pessimistic, so the figure is an upper bound slightly above the true ε of these mechanisms (issue 25: the
    demo's 11 tables at ε = 1, δ = 1e-5 gave 0.91558 against an exact 0.91501). One record moves one cell of each
    marginal by 1, so each marginal is a one-dimensional discrete Gaussian with sensitivity 1.
    """
    from dp_accounting.pld import privacy_loss_distribution as pld  # slow import: only when a card is made

    composed = None
    for sigma in sorted(sigmas):
        one = pld.from_discrete_gaussian_mechanism(sigma, sensitivity=SENSITIVITY)
        composed = one if composed is None else composed.compose(one)
    if composed is None:
        raise ValueError("no mechanism to compose")
    return float(composed.get_epsilon_for_delta(delta))


def add_noise(counts: np.ndarray, sigma: float) -> np.ndarray:
    """Exact integer counts + discrete Gaussian noise from OpenDP's sampler (OS randomness, no seed to store)."""
    if sigma == 0:
        return counts.astype(np.int64)
    noisy = _gaussian(float(sigma))(counts.astype(np.int64).ravel().tolist())
    return np.asarray(noisy, dtype=np.int64).reshape(counts.shape)
