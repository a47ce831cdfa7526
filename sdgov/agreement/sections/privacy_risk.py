"""The privacy-risk audit's settings: one model that is both the spec's pre-registered ``privacy_risk:`` section and
what the audit runs with.

The knobs (:class:`RiskSettings`) and the thresholds (:class:`RiskPolicy`) live here, beside the section, so that
reading a spec never loads the audit's numpy/pandas machinery (:mod:`sdgov.audits.privacy`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from sdgov.agreement.code_names import validated_name
from sdgov.base.model import Frozen, unstated_at_default

FEATURE_SETS = ("naive", "hist", "corr", "query")
PARTS = ("mia", "one_run", "memorisation", "beyond_phi", "disclosure", "canary")  # sdgov.audits.privacy.registry
DEFAULT_PARTS = ("mia", "one_run", "memorisation", "beyond_phi", "disclosure")  # "canary": on request
MEMORISATION_WORLDS = 31
REMOVED = {  # settings of an earlier audit design: refused with the way to the current one
    "memorisation_pairs": "memorisation_pairs (P pairs of disjoint training sets, 2·P fits) was replaced by "
    "memorisation_worlds (W training sets, every pair of them compared: W = P + 1 gives at least the precision of P "
    f"disjoint pairs; default {MEMORISATION_WORLDS}) — write memorisation_worlds instead",
}
POPULATION_ROWS = 1_000_000  # the default pool of confidential records the audit draws from (census scale: 55M)


class RiskSettings(Frozen):
    """Every knob of the privacy-risk audit (all have defaults; the policy file holds the thresholds)."""

    @model_validator(mode="before")
    @classmethod
    def _no_removed_setting(cls, data: Any) -> Any:
        """A setting of an earlier design is refused with the way to the current one (not as an unknown key)."""
        if isinstance(data, dict):
            for key, why in REMOVED.items():
                if key in data:
                    raise ValueError(why)
        return data

    n_outliers: int = Field(5, ge=0, description="targets chosen by the outlier rule (see select_targets)")
    n_random: int = Field(5, ge=0, description="targets drawn uniformly at random from the remaining records")
    n_shadow: int = Field(
        30,
        ge=2,
        description="shadow worlds per target: pairs of datasets sharing a base, every target in one of each pair "
        "and out of the other, 2·n_shadow fits shared by all targets (30: a per-target Bonferroni interval of about "
        "±0.2 on Adv, narrow enough to decide against the DP bound; see sdgov.audits.privacy.worlds)",
    )
    n_synth: int = Field(5, ge=1, description="synthetic sets sampled from every shadow fit")
    train_rows: int = Field(1000, ge=10, description="records in every shadow training set (n)")
    synth_rows: int | None = Field(None, ge=1, description="records per synthetic set (m); default train_rows")
    folds: int = Field(5, ge=2, description="grouped cross-validation folds over shadow worlds")
    rf_trees: int = Field(50, ge=1, description="trees of the attacker's random forest")
    features: tuple[str, ...] = FEATURE_SETS
    confidence: float = Field(0.95, gt=0, lt=1, description="level of every confidence interval")
    sensitive: str | None = Field(None, description="attribute-inference target; default the last audited one")
    ai_sets: int = Field(1, ge=0, description="synthetic sets per fit used for attribute inference (0: off)")
    ai_trees: int = Field(30, ge=1)
    canaries: int | None = Field(
        None,
        ge=1,
        description="canaries m in the DP lower-bound audit; default n/2, "
        "capped at β/(20·δ) so that the δ term leaves room to refute (sdgov.audits.privacy.canary)",
    )
    canary_base_rows: int | None = Field(
        None, ge=0, description="reference records trained beside the canaries; default train_rows − m"
    )
    canary_runs: int = Field(1, ge=1, description="independent canary runs (Bonferroni-combined)")
    one_run_canaries: int = Field(200, ge=2, description="canaries of the one-run audit (at most; see one_run)")
    one_run_base_rows: int | None = Field(None, ge=0, description="base records beside them; default train_rows")
    one_run_synth_factor: int = Field(
        10, ge=1, description="synthetic samples of the training size drawn from the one-run fit (see one_run)"
    )
    memorisation_worlds: int = Field(
        MEMORISATION_WORLDS,
        ge=3,
        description="training sets of the memorisation check, one fit each, every pair of them compared (31: at "
        "least the precision of the 30 disjoint pairs, 60 fits, it replaced; see sdgov.audits.privacy.memorisation)",
    )
    memorisation_rows: int = Field(10_000, ge=10, description="records per training set (at most half the reference)")
    memorisation_synth_factor: int = Field(
        50, ge=1, description="synthetic rows per training record (50: a 2 % memoriser caught on App 1, 70 non-Φ dims)"
    )
    beyond_phi_rows: int = unstated_at_default(  # new fields at their defaults leave a section's hash as it was
        10_000,
        ge=10,
        description="training records of the interactions-beyond-Φ check's one fit (at most the reference data); "
        "equal to memorisation_rows (the default), it is memorisation's first fit",
    )
    beyond_phi_synth_rows: int = unstated_at_default(
        4_000_000,
        ge=100,
        description="synthetic records sampled from that fit (post-processing: more rows, sharper interactions; 4M "
        "since issue 37's third pass: App 2's 2 % unseeded blend caught 10/10 against 3/10 at 1M, App 3's check "
        "+4 CPU-s)",
    )
    beyond_phi_sets: int = unstated_at_default(
        20,
        ge=10,
        description="independent sample sets the beyond-Φ check draws those records as (its sign-flip test's units: "
        "the null is read from the output's own spread, whatever the generator's sampler; ≥ 10, so that 2^(S−1) "
        "flips resolve the fail level)",
    )
    beyond_phi_bootstrap: int = unstated_at_default(
        199,
        ge=19,
        description="random sign flips of the sets' residuals drawn for the beyond-Φ p-value (it resolves to "
        "1/(B + 1): 199 lets the policy fail at 0.005, beyond every flip)",
    )
    beta: float = Field(0.05, gt=0, lt=1, description="ε_lower holds with confidence 1 − β")
    disclosure_rows: int | None = Field(
        None,
        ge=10,
        description="size n of each of the three parts of the record "
        "checks (training, holdout, independent sample); default a third of the "
        "reference data, at most 25,000",
    )
    verbatim_rounds: int = unstated_at_default(
        16,
        ge=0,
        description="fits of the verbatim-copy test, each on train_rows records with as many held out (0: off; its "
        "power grows with the distinct copied records, i.e. with the rounds; see sdgov.audits.privacy.disclosure)",
    )
    verbatim_samples: int = unstated_at_default(
        25,
        ge=1,
        description="synthetic sets of train_rows rows sampled from each verbatim-copy fit (a copy recurs in each)",
    )
    verbatim_flag_level: float = unstated_at_default(
        0.01,
        gt=0,
        lt=1,
        description="a record is over-represented when P[Poisson(e) ≥ its count] is at most this, e the count the "
        "output's own Φ tables predict (calibration does not depend on it: the holdout baseline does that)",
    )
    small_cell_threshold: int = Field(10, ge=1)
    dcr_sample: int = Field(5000, ge=10)
    n_jobs: int = Field(2, description="parallel workers for attack trials (joblib; -1: all cores)")
    seed: int = Field(0, ge=0)
    population_rows: int = unstated_at_default(
        POPULATION_ROWS,
        ge=100,
        description="confidential records the audit draws its shadow datasets, targets and canaries from: all of "
        "them up to this many, a fixed uniform sample beyond (it simulates the mechanism on datasets of train_rows "
        "records: a larger pool changes nothing but the memory, 4 bytes per cell)",
    )

    @property
    def m(self) -> int:
        """Records per synthetic set (m): ``synth_rows``, else ``train_rows``."""
        return self.synth_rows or self.train_rows


class EpsilonPolicy(Frozen):
    fail_above_claimed: bool = Field(True, description="fail when ε_lower exceeds the claimed ε (claim refuted)")
    warn_fraction: float = Field(0.5, ge=0, description="warn when ε_lower exceeds this fraction of the claim")


class MembershipPolicy(Frozen):
    """On per-target intervals Bonferroni-adjusted over targets × feature sets (:mod:`sdgov.audits.privacy.mia`)."""

    warn_below_pg: float = Field(
        0.8,
        description="warn when a target's PG upper CI bound is below this (point "
        "estimates of the worst of many targets are biased low; CIs are not)",
    )
    fail_below_pg: float = Field(0.5, description="fail when a target's PG upper CI bound is below this")
    fail_above_dp_bound: bool = Field(
        True,
        description="fail when a target's Adv lower CI bound exceeds the largest advantage (ε, δ)-DP allows when one "
        "record is replaced, (2ε, (1 + e^ε)δ) by group privacy (sdgov.audits.privacy.mia.membership_adv_bound)",
    )
    min_worlds: int = Field(5, ge=2, description="with fewer shadow worlds the CIs are unreliable: warn, never fail")


class AttributePolicy(Frozen):
    warn_above_adv: float = Field(0.1, description="on the lower CI bound (Bonferroni over targets)")
    fail_above_adv: float = Field(0.3, description="on the lower CI bound of the attribute-inference advantage")


class MemorisationPolicy(Frozen):
    """Copy share beyond Φ (:mod:`sdgov.audits.privacy.memorisation`): 0 for a Φ-only release, f for a release that
    copies a fraction f of its rows. The rule is a one-sided test of f > ``min_share`` over independent pairs, so
    its false-alarm rate on an honest generator is the level itself."""

    warn_alpha: float = Field(0.01, gt=0, lt=1, description="warn when the (1 − warn_alpha) lower bound > min_share")
    fail_alpha: float = Field(0.001, gt=0, lt=1, description="fail when the (1 − fail_alpha) lower bound > min_share")
    min_share: float = Field(0.0, ge=0, description="copy shares up to this are tolerated")


class BeyondPhiPolicy(Frozen):
    """Interactions beyond Φ (:mod:`sdgov.audits.privacy.beyond_phi`): a Monte-Carlo test of the output's non-Φ
    tables against the Φ-only model of its own Φ tables, so its false-alarm rate on an honest generator is the
    level itself."""

    warn_alpha: float = Field(0.01, gt=0, lt=1, description="warn when the p-value is at most this")
    fail_alpha: float = Field(
        0.005, gt=0, lt=1, description="fail when the p-value is at most this (at B = 199: beyond every sample)"
    )


class ExactMatchPolicy(Frozen):
    """Real-unique records reproduced (see :mod:`sdgov.audits.privacy.disclosure`). The rate ratio (training
    vs never-seen holdout records) of an honest DP generator sits near 1; (ε, δ)-DP would permit up to about e^ε in
    the worst case, so this policy is stricter than the DP claim — a memorisation rule, as a controller may set
    one. The claim itself is tested by the canary bound."""

    warn_ratio: float = Field(1.25, description="warn: rate ratio (training vs holdout) above this, significant")
    fail_ratio: float = Field(2.0, description="fail: the same with this threshold")
    alpha: float = Field(0.001, gt=0, lt=1, description="one-sided binomial test, training vs holdout matches")
    warn_alpha: float = Field(0.01, gt=0, lt=1, description="the test's level for a warning")
    min_count: int = Field(5, ge=0, description="no warn/fail below this many synthetic unique matches")


class VerbatimPolicy(Frozen):
    """Verbatim copies (:func:`sdgov.audits.privacy.disclosure.verbatim_audit`): an exact test that the records the
    output over-represents are training records no more often than a random split makes them, so its false-alarm
    rate on a generator that does not single out its training records is at most the level itself."""

    warn_alpha: float = Field(0.01, gt=0, lt=1, description="warn when the exact p-value is at most this")
    fail_alpha: float = Field(0.001, gt=0, lt=1, description="fail when the exact p-value is at most this")


class DCRPolicy(Frozen):
    """Share of records at distance 0 from a training record, synthetic vs real holdout, with a one-sided
    two-proportion test (level ``alpha``): a ratio above the threshold by chance does not warn."""

    warn_zero_ratio: float = Field(1.5, description="share of synthetic DCR = 0 / share of holdout DCR = 0")
    fail_zero_ratio: float = 3.0
    alpha: float = Field(0.001, gt=0, lt=1)


class SmallCellPolicy(Frozen):
    threshold: int = Field(10, ge=1)
    warn_above: int | None = Field(
        None,
        ge=0,
        description="warn when more small synthetic cells than this; default: report only (a DP release has small "
        "cells by design: its noise, not their size, protects them)",
    )


class RiskPolicy(Frozen):
    """The pass / warn / fail thresholds of every privacy-risk check (the built-in defaults where omitted)."""

    name: str = "default"
    epsilon_lower: EpsilonPolicy = EpsilonPolicy()
    membership: MembershipPolicy = MembershipPolicy()
    attribute: AttributePolicy = AttributePolicy()
    exact_matches: ExactMatchPolicy = ExactMatchPolicy()
    memorisation: MemorisationPolicy = MemorisationPolicy()
    beyond_phi: BeyondPhiPolicy = unstated_at_default(BeyondPhiPolicy())
    dcr: DCRPolicy = DCRPolicy()
    small_cells: SmallCellPolicy = SmallCellPolicy()
    verbatim: VerbatimPolicy = unstated_at_default(VerbatimPolicy())


class PrivacyRiskSettings(Frozen):
    """Pre-registered privacy-risk audit (:mod:`sdgov.audits.privacy`): attacks, DP lower bound and record checks.

    Like the ``audit:`` section, part of the agreement hash when given, and run inside the release's audit stage
    unless ``enabled: false``; a "fail" under the policy blocks the release. ``settings`` are
    :class:`~sdgov.audits.privacy.base.RiskSettings` fields, ``policy`` the thresholds (inline; the built-in defaults
    where omitted). The claimed (ε, δ) are the release's own privacy plan.
    """

    enabled: bool = True
    generator: str | None = Field(
        default=None,
        description="a registered audit generator's name (sdgov.agreement.code_names); default: the honest "
        "audit variant of the spec's generator at the plan's σ",
    )
    generator_params: dict[str, float | int | str | bool | list[str]] | None = Field(
        default=None, description="shipped generators: the plan's σ and the spec's iterations unless set here"
    )

    @field_validator("generator")
    @classmethod
    def _registered(cls, name: Any) -> Any:
        """Code is named by its registered name, looked up exactly (nothing is imported here)."""
        return validated_name(name)

    @field_validator("generator_params")
    @classmethod
    def _registered_base(cls, params: Any) -> Any:
        """A wrapped control's ``base`` generator is code too: a registered name."""
        if isinstance(params, dict) and params.get("base") is not None:
            validated_name(params["base"])
        return params

    settings: RiskSettings = RiskSettings()
    policy: RiskPolicy = RiskPolicy()
