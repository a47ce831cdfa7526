"""The privacy statement: what a release spent, by which accounting, and what its dataset has spent over every
release — one typed object, made once at measure time (:func:`sdgov.measurement.store.measure_once`), published
beside ψ (``privacy_statement.json``) and rendered by every surface: the card, the pause form, the CLI and the trail
all print its figures through the functions below, so none of them can say something else.

Two accountings, both upper bounds on ε at the statement's δ: the zCDP bound (any ρ-zCDP mechanism, the tight
CKS20 conversion) and privacy-loss-distribution accounting of the discrete Gaussians themselves (tighter; not
defined for private selection, whose exponential mechanism is not a Gaussian). A release measured exactly
(``noise: none``) has no finite ε, and neither has its dataset ever after: once any statistic of a dataset was
measured exactly, every later statement of it says ε = ∞ — for the dataset and for the release alike — and makes no
differential-privacy claim (the noise a later release adds is reported as ρ and σ, not as a guarantee).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from sdgov.base.model import Frozen
from sdgov.budget.accounting import PrivacyPlan, epsilon_of_rho, epsilon_pld, epsilon_pld_of_sigmas, part_plan

NO_DP = "no differential-privacy guarantee"
INFINITY = "∞"


class Epsilon(Frozen):
    """ε at one δ of a set of statistics, by both accountings. ``unbounded``: statistics of the dataset were
    measured exactly (these, or earlier ones), so no finite ε bounds what is published (ε = ∞, no DP claim)."""

    unbounded: bool = False
    rho: float | None = None  # zCDP ρ of the noise added (None: none added, or nothing measured)
    zcdp: float | None = None  # ε by the zCDP bound (None when unbounded)
    pld: float | None = None  # ε ≤ this by PLD of the discrete Gaussians (None: not only Gaussians, or unbounded)

    def words(self, pld: bool = True) -> str:
        """``ε = 1 (zCDP bound), ε ≤ 0.9156 (PLD)``, or ``ε = ∞ (…)`` when unbounded."""
        if self.unbounded:
            return f"ε = {INFINITY} (statistics of the dataset measured exactly: {NO_DP})"
        s = f"ε = {num(self.zcdp)} (zCDP bound)"
        if pld and self.pld is not None:
            s += f", ε ≤ {num(self.pld)} (PLD)"
        return s


def num(x: float | None, digits: int = 4) -> str:
    """One number as every surface prints it (``—`` for none)."""
    return "—" if x is None else f"{x:.{digits}g}"


def release_epsilon(plan: PrivacyPlan) -> Epsilon:
    """The ε of every table of a release (drawn now or reused) from its plan: the zCDP bound and the PLD of its
    discrete Gaussians (none with private selection). Also what the Φ agreement's form states before the draw."""
    if plan.noise == "none":
        return Epsilon(unbounded=True)
    return Epsilon(rho=plan.rho, zcdp=plan.epsilon, pld=epsilon_pld(plan))


def cumulative_epsilon(rho: float, sigmas: list[float] | None, delta: float | None, exact: bool) -> Epsilon:
    """A dataset's ε over every statistic its account holds: ``rho`` composed by zCDP, ``sigmas`` (each statistic's
    σ, counted once; None when a charge is not a persisted discrete Gaussian) by PLD; ∞ when any of its statistics
    was measured exactly (``exact``)."""
    if exact:
        return Epsilon(unbounded=True, rho=rho or None)
    if delta is None:
        return Epsilon()
    pld = epsilon_pld_of_sigmas(sigmas, delta) if sigmas else None
    return Epsilon(rho=rho, zcdp=epsilon_of_rho(rho, delta), pld=pld)


class OtherScale(Frozen):
    """The same table measured on the dataset at another σ: a second measurement, counted in the lifetime ρ."""

    sigma: float
    measured_at: str
    measured_in_run: str


class Origin(Frozen):
    """One statistic of the release and where it came from."""

    part: str | None = Field(default=None, exclude_if=lambda v: v is None)
    attributes: list[str]
    sigma: float
    rho: float | None  # None: measured exactly
    statistic: str  # its keyed commitment (the store key is a function of the records: never published)
    how: Literal["reused", "adopted", "drawn"]
    measured_at: str | None = None
    measured_in_run: str | None = None
    measured_in_registry: str | None = None  # another registry's draw, copied in through the authority
    earlier_releases: list[str] = Field(default_factory=list)
    other_sigmas: list[OtherScale] = Field(default_factory=list)


class ExactMeasurement(Frozen):
    """Where the dataset's statistics were measured exactly (``noise: none``): from then on no finite ε covers it."""

    time: str
    run_id: str
    registry_id: str


class Floor(Frozen):
    """The controller's noise floor and the most ε it lets this many marginals reach."""

    sigma: float
    binding: bool
    max_epsilon: float | None


class AuthorityHead(Frozen):
    """The budget authority's chain head the cumulative figures were read at: what proves them. Its hash covers rows
    naming the data's fingerprint, so it is published as a keyed commitment, which the controller opens for an
    auditor."""

    authority: str
    seq: int
    hash_hmac: str


class PrivacyStatement(Frozen):
    """Everything a release says about privacy, each figure computed once (see the module's docstring)."""

    statement_version: Literal["1"] = "1"
    dataset: str  # the declared name label
    fingerprint_hmac: str  # the dataset's content fingerprint, as a keyed commitment
    authority: str  # the controller's budget authority (its id)
    authority_head: AuthorityHead | None = None  # its chain head when this statement was made
    registries: int  # how many registries have spent on the dataset
    noise: Literal["gaussian", "none"]
    mechanism: str
    neighbours: str
    delta: float | None  # None: an exact release has no δ
    delta_source: str | None
    release: Epsilon  # all of this release's tables, drawn now or reused
    parts: dict[str, Epsilon] = Field(default_factory=dict)  # a split synthesis: each part's own tables
    selection_rho: float | None = None
    selection_method: str | None = None
    floor: Floor | None = None
    spent_rho: float  # charged to the ledger by this release (reused tables were paid before)
    spent_before_rho: float
    spent_after_rho: float
    lifetime_rho: float
    remaining_rho: float
    policy_entry: str
    policy_sha256: str
    max_epsilon_per_release: float
    cumulative: Epsilon  # the dataset over every release, in every registry of the controller
    exact_measurements: list[ExactMeasurement] = Field(default_factory=list)
    statistics: list[Origin]
    earlier_releases_sharing: list[str] = Field(default_factory=list)

    @property
    def spent(self) -> bool:
        """The dataset's privacy is spent: an exact measurement of it exists (ε = ∞)."""
        return self.cumulative.unbounded

    @property
    def exact(self) -> bool:
        """This release's own tables were measured exactly (``noise: none``)."""
        return self.noise == "none"

    @property
    def reused(self) -> int:
        """How many of its tables were reused from earlier draws."""
        return sum(s.how == "reused" for s in self.statistics)


def make_statement(
    plan: PrivacyPlan,
    *,
    dataset: str,
    fingerprint_hmac: str,
    authority: str,
    authority_head: AuthorityHead | None = None,
    registries: int,
    spent_rho: float,
    spent_after_rho: float,
    lifetime_rho: float,
    policy_entry: str,
    policy_sha256: str,
    max_epsilon_per_release: float,
    cumulative: Epsilon,
    exact_measurements: list[ExactMeasurement],
    statistics: list[Origin],
    earlier_releases_sharing: list[str],
) -> PrivacyStatement:
    """The release's statement from its plan and the dataset's account as the measure stage leaves it."""
    parts = sorted({m.part for m in plan.marginals if m.part is not None})
    spent = plan.noise == "none" or bool(exact_measurements)

    def claim(of: PrivacyPlan) -> Epsilon:  # a spent dataset: the noise added is reported, no finite ε is claimed
        return Epsilon(unbounded=True, rho=of.rho) if spent else release_epsilon(of)

    floor = (
        Floor(
            sigma=plan.sigma_floor,
            binding=plan.floor_binding,
            max_epsilon=None if spent else plan.floor_max_epsilon,
        )
        if plan.sigma_floor is not None
        else None
    )
    return PrivacyStatement(
        dataset=dataset,
        fingerprint_hmac=fingerprint_hmac,
        authority=authority,
        authority_head=authority_head,
        registries=registries,
        noise="none" if plan.noise == "none" else "gaussian",
        mechanism=plan.mechanism,
        neighbours=plan.neighbours,
        delta=plan.delta,
        delta_source=plan.delta_source,
        release=claim(plan),
        parts={p: claim(part_plan(plan, p)) for p in parts},
        selection_rho=plan.selection_rho,
        selection_method=plan.selection_method,
        floor=floor,
        spent_rho=spent_rho,
        spent_before_rho=spent_after_rho - spent_rho,
        spent_after_rho=spent_after_rho,
        lifetime_rho=lifetime_rho,
        remaining_rho=max(0.0, lifetime_rho - spent_after_rho),
        policy_entry=policy_entry,
        policy_sha256=policy_sha256,
        max_epsilon_per_release=max_epsilon_per_release,
        cumulative=Epsilon(unbounded=True, rho=cumulative.rho) if spent else cumulative,
        exact_measurements=exact_measurements,
        statistics=statistics,
        earlier_releases_sharing=earlier_releases_sharing,
    )


# ------------------------------------------------------------------------------------------------ words
# Every surface prints the statement through these: the card (its headline, table and paragraphs), the pause form
# and ``sdgov approve`` (key_facts, headline), ``sdgov budget`` and the trail (key_facts).


def key_facts(s: PrivacyStatement) -> str:
    """One line: this release's ε and δ, and the dataset's over every release (the form's and the trail's)."""
    if s.exact:
        return f"NO NOISE: exact statistics, {NO_DP}; ε = {INFINITY} for this release and the dataset's every release"
    if s.spent:
        return (
            f"ε = {INFINITY}, {NO_DP}: the dataset's privacy is spent ({_exact_words(s)}); this release adds noise "
            f"of ρ = {num(s.release.rho, 6)} (zCDP), which bounds nothing once exact statistics are out"
        )
    return f"{s.release.words()}, δ = {num(s.delta, 3)}; the dataset's ε over every release: {s.cumulative.words()}"


def _exact_words(s: PrivacyStatement) -> str:
    if not s.exact_measurements:
        return "this release measures its tables exactly"
    first = s.exact_measurements[0]
    more = f" and {len(s.exact_measurements) - 1} more" if len(s.exact_measurements) > 1 else ""
    return f"its statistics were measured exactly in run {first.run_id[:8]} ({first.time}){more}"


def headline(s: PrivacyStatement) -> str:
    """The card's headline privacy sentence (the release form's too)."""
    if s.exact:
        return (
            "NO NOISE WAS ADDED: the agreed statistics were declared public and measured exactly. This release has "
            f"{NO_DP} (ε = {INFINITY}), and neither has any release of this dataset from now on."
        )
    if s.spent:
        return (
            f"This release has {NO_DP} (ε = {INFINITY}): {_exact_words(s)}, so the dataset's privacy is spent and no "
            f"finite ε bounds what its releases reveal, this one's included. Its tables carry noise (ρ = "
            f"{num(s.release.rho, 6)}, zCDP), reported here, not claimed as a guarantee."
        )
    r = s.release
    text = (
        f"This release: (ε = {num(r.zcdp)}, δ = {num(s.delta, 3)})-DP by the zCDP bound (ρ = {num(r.rho, 6)})"
        + (f"; ε ≤ {num(r.pld)} by privacy-loss-distribution accounting (an upper bound)" if r.pld is not None else "")
        + "."
    )
    c = s.cumulative
    where = (
        "over every release so far, in every registry of this controller (its account with the controller's budget "
        "authority)"
    )
    text += f" The dataset {where}: ε = {num(c.zcdp)} by the zCDP bound (ρ = {num(c.rho, 6)})"
    if c.pld is not None:
        text += f"; ε ≤ {num(c.pld)} by privacy-loss-distribution accounting"
    return text + ", at the same δ."


def rows(s: PrivacyStatement) -> list[tuple[str, str]]:
    """The headline figures as (label, value) rows: the card's privacy table and the release-candidate artifact."""
    r, c = s.release, s.cumulative
    inf = f"{INFINITY} (statistics of the dataset measured exactly: {NO_DP})"
    return [
        ("ε of this release (zCDP bound)", inf if r.unbounded else num(r.zcdp)),
        (
            "ε of this release (privacy-loss-distribution accounting, an upper bound)",
            inf if r.unbounded else num(r.pld),
        ),
        ("δ", num(s.delta, 3)),
        ("ε of the dataset over every release (zCDP bound)", inf if c.unbounded else num(c.zcdp)),
        (
            "ε of the dataset over every release (privacy-loss-distribution accounting, an upper bound)",
            inf if c.unbounded else num(c.pld),
        ),
        ("ρ of this release (zCDP, all its tables)", "—" if s.exact else num(r.rho, 6)),
        ("ρ spent by this release (new draws; reused tables were paid before)", num(s.spent_rho, 6)),
        ("ρ of the dataset over every release (zCDP, its noisy tables)", num(s.spent_after_rho, 6)),
    ]


def plain(s: PrivacyStatement) -> str:
    """ε in plain language: how much more likely any conclusion can become because one person's record is in the
    data (this release's ε; none where it, or the dataset before it, was measured exactly)."""
    if s.exact:
        return "No guarantee: the statistics were published exactly, so nothing limits what they reveal about anyone."
    if s.spent:
        return (
            "No guarantee: statistics of this dataset were published exactly before, so nothing limits what its "
            "releases together reveal about anyone; the noise in this one does not change that."
        )
    assert s.release.zcdp is not None and s.delta is not None
    factor = math.exp(s.release.zcdp)
    text = (
        f"Whatever anyone concludes from this release, the chance of reaching that conclusion changes by at most a "
        f"factor of {factor:.3g} (e^ε) whether or not any one person's record was in the data — apart from a "
        f"probability δ = {s.delta:.3g} that this fails. So an attacker who gave 50% odds to a fact about someone "
        f"before could give it at most {100 * factor / (1 + factor):.0f}% after seeing the release."
    )
    return text


def guarantee(s: PrivacyStatement) -> str:
    """The card's privacy guarantee in words: the mechanism, ρ and the (ε, δ) it implies, where δ comes from,
    selection's share, the tighter PLD figure, the noise floor; with noise ``none``, that there is none."""
    if s.exact:
        return (
            "NO NOISE WAS ADDED. The agreed statistics were declared already public and were measured exactly; "
            f"this release carries {NO_DP}, and from now on no release of this dataset does (ε = {INFINITY})."
        )
    r = s.release
    if s.spent:
        return (
            f"The agreed statistics were measured with {s.mechanism}, at ρ = {num(r.rho, 6)} in total (zero-"
            f"concentrated DP) — but the dataset's privacy is spent: {_exact_words(s)}. Once exact statistics of a "
            f"dataset are published no finite ε bounds what its releases reveal, so this release carries {NO_DP} "
            f"(ε = {INFINITY}); its noise is reported, not claimed as a guarantee."
        )
    text = (
        f"The agreed statistics were measured with {s.mechanism}, at ρ = {num(r.rho, 6)} in total "
        f"(zero-concentrated DP), which implies (ε = {num(r.zcdp)}, δ = {num(s.delta, 3)})-DP for "
        f"neighbouring datasets that differ by {s.neighbours} (the zCDP bound: it holds for any ρ-zCDP mechanism)."
    )
    if s.delta_source:
        text += f" Where δ comes from: {s.delta_source} — never from the confidential data or its record count."
    if s.selection_rho and s.selection_method == "aim":
        text += (
            f" Φ itself was chosen by private selection (AIM): ρ = {num(s.selection_rho, 6)} of that total went to "
            "AIM's rounds — the exponential mechanism and the Gaussian measurements of the marginals it chose, which "
            "served the selection only — and the reviewers' noisy scores; the 1-way tables it measured are reused "
            "here."
        )
    elif s.selection_rho:
        text += (
            f" Φ itself was chosen by private selection (MST): ρ = {num(s.selection_rho, 6)} of that total went to "
            "the exponential mechanism and the reviewers' noisy scores; the 1-way tables it measured are reused here."
        )
    if r.pld is not None:
        text += (
            f" Composing these discrete Gaussians' privacy-loss distributions gives the smaller ε ≤ {num(r.pld)} at "
            "the same δ: also an upper bound (the accounting discretises pessimistically, so the exact ε of these "
            "mechanisms is slightly lower still)."
        )
    text += " Everything after measurement is post-processing of the noisy statistics and spends no further budget."
    if s.floor is not None:
        text += (
            f" A noise floor σ ≥ {s.floor.sigma:g} applies (the data controller's policy; ONS small-count rule)"
            f"{' and was binding' if s.floor.binding else ''}; with this many marginals it permits at most "
            f"ε = {num(s.floor.max_epsilon)} (zCDP bound)."
        )
    return text


def ledger_words(s: PrivacyStatement) -> str:
    """The lifetime ledger in words: what this release spent, what was reused, from which releases, and the
    dataset's ε over every release."""
    reused = [o for o in s.statistics if o.how == "reused"]
    text = (
        f"Dataset {s.dataset!r} (content commitment {s.fingerprint_hmac[:12]}…) had spent ρ = "
        f"{num(s.spent_before_rho, 6)} of its lifetime ρ = {num(s.lifetime_rho, 6)} before this release, over every "
        f"registry of this controller; this release spent ρ = {num(s.spent_rho, 6)}, leaving "
        f"{num(s.remaining_rho, 6)}."
    )
    c = s.cumulative
    if c.unbounded:
        text += f" Over every release so far the dataset's ε = {INFINITY}: {_exact_words(s)}."
    elif c.zcdp is not None:
        text += (
            f" Over every release so far the dataset's ρ = {num(s.spent_after_rho, 6)} gives ε = {num(c.zcdp)} "
            "(zCDP bound)"
            + (f", ε ≤ {num(c.pld)} by privacy-loss-distribution accounting" if c.pld is not None else "")
            + f" at δ = {num(s.delta, 3)}; a table measured once and reused counts once."
        )
    if reused:
        text += (
            " The guarantee above covers all of this release's tables; those reused from earlier draws were paid "
            f"then. {len(reused)} of its {len(s.statistics)} tables were measured before at the same σ and are "
            "reused as they were drawn (post-processing: no new noise, no new spend): "
            + "; ".join(
                " × ".join(r.attributes)
                + f" (drawn {r.measured_at} in run {(r.measured_in_run or '')[:8]}"
                + (f" of registry {r.measured_in_registry[:8]}" if r.measured_in_registry else "")
                + (f", released in {', '.join(r.earlier_releases)}" if r.earlier_releases else "")
                + ")"
                for r in reused
            )
            + "."
        )
    rescaled = [o for o in s.statistics if o.other_sigmas]
    if rescaled:
        text += (
            " Measured before on this dataset at another noise scale, so two measurements that both count in the "
            "lifetime ρ: "
            + "; ".join(
                " × ".join(r.attributes)
                + f" (σ = {r.sigma:.4g} now; before: "
                + ", ".join(f"σ = {o.sigma:.4g} on {o.measured_at}" for o in r.other_sigmas)
                + ")"
                for r in rescaled
            )
            + "."
        )
    if s.earlier_releases_sharing:
        text += " Earlier releases sharing measurements with this one: " + ", ".join(s.earlier_releases_sharing) + "."
    return text
