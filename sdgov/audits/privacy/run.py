"""Run the whole privacy-risk audit for a generator on a dataset (or a release spec) — no orchestrator here.

Data use (all from the confidential data, on the controller's side, like the utility report):

* **targets** — :data:`sdgov.audits.privacy.base.OUTLIER_RULE` outliers plus random records;
* **reference** — every other record: the attacker's population sample, disjoint from the targets; shadow
  training sets (linkability, attribute inference) and the canary audit's base data are drawn from it;
* **record checks** — three disjoint parts of the reference: a training part the generator is fitted on once
  (its synthetic output is checked), a real holdout and an independent real sample (the baselines; see
  :mod:`sdgov.audits.privacy.disclosure`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from sdgov.agreement.sections.privacy_risk import DEFAULT_PARTS, PARTS, RiskPolicy, RiskSettings
from sdgov.audits.generator_protocol import AuditError, load_generator
from sdgov.audits.privacy.base import OUTLIER_RULE, GeneratorRef, Progress, Target, seed_of, select_targets
from sdgov.audits.privacy.beyond_phi import BeyondPhiResult, beyond_phi_audit
from sdgov.audits.privacy.canary import CanaryResult, Metric, canary_audit
from sdgov.audits.privacy.disclosure import DisclosureResult, disclosure_checks, verbatim_audit
from sdgov.audits.privacy.memorisation import MemorisationResult, memorisation_audit
from sdgov.audits.privacy.mia import (
    TargetRisk,
    dp_adv_bound,
    epsilon_from_membership_advantage,
    linkability,
    membership_adv_bound,
)
from sdgov.audits.privacy.one_run import OneRunResult, one_run_audit
from sdgov.audits.privacy.policy import PolicyCheck, apply_policy, worst
from sdgov.base.executor import Executor
from sdgov.base.model import Frozen
from sdgov.engines.recordset import sample_frame

_T = TypeVar("_T")


def check_privacy_parts(parts: tuple[str, ...]) -> None:
    """Refuse a part that is not one of :data:`PARTS` — the CLI before it loads any data, the audit before it runs."""
    bad = [p for p in parts if p not in PARTS]
    if bad:
        raise AuditError(f"unknown audit part(s) {bad}", "privacy audit", f"choose from {list(PARTS)}")


class PrivacyAuditResult(Frozen):
    spec_name: str
    generator: str
    generator_params: dict[str, Any]
    attributes: list[str]
    records: int
    claimed_epsilon: float | None
    claimed_delta: float | None
    dp_adv_bound: float | None  # e^ε − 1 (capped at 1)
    dp_adv_bound_tight: float | None  # the game's tight bound: (e^2ε − 1 + 2δ')/(e^2ε + 1), δ' = (1 + e^ε)δ
    settings: dict[str, Any]
    policy: str
    outlier_rule: str
    sensitive: str | None
    targets: list[TargetRisk]
    canary: CanaryResult | None
    one_run: OneRunResult | None = None
    memorisation: MemorisationResult | None = None
    beyond_phi: BeyondPhiResult | None = None
    disclosure: DisclosureResult | None
    checks: list[PolicyCheck]
    verdict: str
    epsilon_lower: float | None
    epsilon_lower_pure: float | None
    epsilon_lower_confidence: float | None = None  # 1 − β of the canary bounds
    epsilon_lower_membership: float | None = None  # from the shadow models' scores (see result())
    min_privacy_gain: float | None
    exact_matches: int | None
    seconds: float
    timing: dict[str, float]


@dataclass(frozen=True)
class _Pool:
    """What every phase draws from: the generator, the targets and the reference records (all but the targets)."""

    ref: GeneratorRef
    targets: list[Target]
    reference: np.ndarray
    sensitive: str
    sizes: list[int]


@dataclass(frozen=True)
class _Findings:
    risks: list[TargetRisk]
    canary: CanaryResult | None
    one_run: OneRunResult | None
    memorisation: MemorisationResult | None
    disclosure: DisclosureResult | None
    beyond_phi: BeyondPhiResult | None = None


@dataclass(frozen=True, kw_only=True)
class PrivacyAuditRun:
    """The privacy-risk audit of ``generator`` on ``real`` (codes, one column per attribute): its inputs as fields,
    :meth:`run` runs the :data:`PARTS` asked in ``parts`` — one method each — and judges them by ``policy``.

    The claimed (ε, δ) are the release's; ``labels`` name the codes for the targets' report, ``numeric`` the numeric
    attributes (an attribute-inference target among them is scored as a number)."""

    real: np.ndarray
    attributes: list[str]
    domain: dict[str, int]
    cliques: list[tuple[str, ...]]
    generator: str
    params: dict[str, Any]
    settings: RiskSettings
    policy: RiskPolicy
    claimed_epsilon: float | None
    claimed_delta: float | None
    spec_name: str = ""
    labels: dict[str, list[str]] | None = None
    numeric: set[str] | None = None
    parts: tuple[str, ...] = DEFAULT_PARTS
    canary_metric: Metric = "unit"
    progress: Progress | None = None
    executor: Executor | None = None

    def run(self) -> PrivacyAuditResult:
        """The asked parts in a fixed order (the canary audit before the one-run audit, which halves its β when both
        bounds are reported), each timed, then the policy's checks."""
        t0 = time.perf_counter()
        pool = self.pool()
        timing = {"targets": time.perf_counter() - t0}
        asked = self.parts
        mia = "mia" in asked and bool(pool.targets)
        risks = self._timed(timing, "membership_and_attribute", lambda: self.mia(pool)) if mia else []
        canary = self._timed(timing, "canary", lambda: self.canary(pool), "canary audit") if "canary" in asked else None
        one_run = (
            self._timed(timing, "one_run", lambda: self.one_run(pool, canary), "one-run canary audit")
            if "one_run" in asked
            else None
        )
        memo = self._timed(timing, "memorisation", lambda: self.memorisation(pool)) if "memorisation" in asked else None
        beyond = (
            self._timed(timing, "beyond_phi", lambda: self.beyond_phi(pool), "interactions beyond Φ")
            if "beyond_phi" in asked
            else None
        )
        disclosure = (
            self._timed(timing, "disclosure", lambda: self.disclosure(pool), "record checks")
            if "disclosure" in asked
            else None
        )
        return self.result(pool, _Findings(risks, canary, one_run, memo, disclosure, beyond), t0, timing)

    def _timed(self, timing: dict[str, float], key: str, phase: Callable[[], _T], done: str | None = None) -> _T:
        t, cpu = time.perf_counter(), time.process_time()
        out = phase()
        timing[key] = time.perf_counter() - t
        timing[f"{key}_cpu"] = time.process_time() - cpu  # this process only (a shared machine's wall time misleads)
        if done and self.progress:
            self.progress(1, 1, done)
        return out

    def pool(self) -> _Pool:
        """Fail fast on a bad generator path or part; pick the targets (outliers and random records) and shuffle the
        rest into the reference records."""
        load_generator(self.generator)  # fail fast on a name that is not registered
        check_privacy_parts(self.parts)
        st, attributes = self.settings, self.attributes
        real = np.asarray(self.real, dtype=np.int64)
        ref = GeneratorRef(
            path=self.generator,
            cliques=tuple(tuple(c) for c in self.cliques),
            domain=dict(self.domain),
            params=dict(self.params),
        )
        sizes = [self.domain[a] for a in attributes]
        targets = select_targets(real, attributes, sizes, st.n_outliers, st.n_random, st.seed, self.labels)
        mask = np.ones(len(real), bool)
        mask[[t.index for t in targets]] = False
        reference = real[mask][np.random.default_rng(seed_of(st.seed, 1)).permutation(int(mask.sum()))]
        sensitive = st.sensitive if st.sensitive is not None else attributes[-1]
        if sensitive not in attributes:
            raise AuditError(f"sensitive attribute {sensitive!r} is not audited", "--sensitive", f"one of {attributes}")
        return _Pool(ref, targets, reference, sensitive, sizes)

    def mia(self, pool: _Pool) -> list[TargetRisk]:
        """Membership and attribute inference against each target (linkability)."""
        st = self.settings
        return linkability(
            pool.ref,
            pool.reference,
            pool.targets,
            st,
            pool.sensitive if st.ai_sets > 0 else None,
            pool.sensitive in (self.numeric or set()),
            self.progress,
            self.executor,
        )

    def canary(self, pool: _Pool) -> CanaryResult:
        """The nearest-neighbour canary audit's ε lower bound."""
        st, reference = self.settings, pool.reference
        m = st.canaries or default_canaries(st.train_rows, st.beta, self.claimed_delta)
        n_base = st.canary_base_rows if st.canary_base_rows is not None else st.train_rows - m
        base = reference[
            np.random.default_rng(seed_of(st.seed, 2)).choice(
                len(reference), size=max(0, min(n_base, len(reference))), replace=False
            )
        ]
        return canary_audit(
            pool.ref,
            base,
            m,
            st.m,
            seed_of(st.seed, 3),
            st.beta,
            self.claimed_delta or 0.0,
            self.canary_metric,
            st.canary_runs,
        )

    def one_run(self, pool: _Pool, canary: CanaryResult | None) -> OneRunResult:
        """The one-run canary audit's ε lower bound (β halved when the canary bound is reported too)."""
        st = self.settings
        return one_run_audit(
            pool.ref,
            pool.reference,
            st.one_run_canaries,
            st.one_run_base_rows if st.one_run_base_rows is not None else st.train_rows,
            st.one_run_synth_factor,
            seed_of(st.seed, 7),
            st.beta / (2 if canary is not None else 1),  # both bounds reported: Bonferroni over the two
            self.claimed_delta or 0.0,
        )

    def memorisation(self, pool: _Pool) -> MemorisationResult:
        """How often the generator copies a training record rather than generalising."""
        st, mp = self.settings, self.policy.memorisation
        return memorisation_audit(
            pool.ref,
            pool.reference,
            st.memorisation_pairs,
            st.memorisation_rows,
            st.memorisation_synth_factor,
            seed_of(st.seed, 8),
            st.confidence,
            (1 - mp.warn_alpha, 1 - mp.fail_alpha),
            self.progress,
            self.executor,
        )

    def beyond_phi(self, pool: _Pool) -> BeyondPhiResult:
        """Whether the output carries interactions its own Φ tables do not imply (no record is looked at)."""
        st = self.settings
        return beyond_phi_audit(
            pool.ref,
            pool.reference,
            st.beyond_phi_rows,
            st.beyond_phi_synth_rows,
            st.beyond_phi_bootstrap,
            seed_of(st.seed, 9),
        )

    def disclosure(self, pool: _Pool) -> DisclosureResult:
        """The record checks: one fit on a training part, its synthetic output against a holdout and an independent
        real sample."""
        st, reference = self.settings, pool.reference
        n_train = st.disclosure_rows or min(len(reference) // 3, 25_000)
        if 3 * n_train > len(reference):
            raise AuditError(
                f"disclosure_rows = {n_train}: three disjoint parts of that size do not fit in the "
                f"{len(reference)} reference records",
                "privacy audit",
                "lower disclosure_rows",
            )
        train, holdout, independent = (reference[i * n_train : (i + 1) * n_train] for i in range(3))
        synth = pool.ref.fit_sample(train, seed_of(st.seed, 4), n_train, [seed_of(st.seed, 5)])[0]
        verbatim = (
            verbatim_audit(
                pool.ref,
                reference,
                st.verbatim_rounds,
                st.train_rows,
                st.verbatim_samples,
                seed_of(st.seed, 10),
                st.verbatim_flag_level,
                self.progress,
                self.executor,
            )
            if st.verbatim_rounds > 0
            else None
        )
        found = disclosure_checks(
            train,
            holdout,
            independent,
            synth,
            self.attributes,
            pool.sizes,
            [tuple(c) for c in self.cliques],
            self.policy.small_cells.threshold,
            st.dcr_sample,
            seed_of(st.seed, 6),
        )
        return found.model_copy(update={"verbatim": verbatim})

    def result(self, pool: _Pool, found: _Findings, t0: float, timing: dict[str, float]) -> PrivacyAuditResult:
        """The policy's checks on the findings, and the verdict."""
        st, risks, disclosure = self.settings, found.risks, found.disclosure
        # the game replaces a record (two add/remove steps): the advantage the claim allows is at (2ε, (1 + e^ε)δ)
        tight = membership_adv_bound(self.claimed_epsilon, self.claimed_delta)
        bounds = [b for b in (found.canary, found.one_run) if b is not None]
        eps_lower = max((b.epsilon_lower for b in bounds), default=None)
        eps_pure = max((b.epsilon_lower_pure for b in bounds), default=None)
        # the shadow models' scores as a bound too: every target's advantage interval holds jointly at the audit's
        # confidence (Bonferroni), so the largest ε their lower ends need is a lower bound on ε at that confidence —
        # reported beside ε_lower, not part of it (docs/privacy_risk.md, "ε_lower and its confidence")
        eps_mia = max(
            (epsilon_from_membership_advantage(r.advantage_ci[0], self.claimed_delta) for r in risks), default=None
        )
        checks = apply_policy(
            self.policy,
            claimed_epsilon=self.claimed_epsilon,
            epsilon_lower=eps_lower,
            targets=risks,
            dp_bound=tight,
            disclosure=disclosure,
            epsilon_lower_pure=eps_pure,
            epsilon_confidence=1 - st.beta,  # both bounds at β/2 when both ran: their maximum holds at 1 − β
            epsilon_lower_membership=eps_mia,
            membership_confidence=st.confidence,
            n_worlds=st.n_shadow,
            memorisation=found.memorisation,
            beyond_phi=found.beyond_phi,
        )
        seconds = time.perf_counter() - t0
        timing["total"] = seconds
        return PrivacyAuditResult(
            spec_name=self.spec_name,
            generator=self.generator,
            generator_params=dict(self.params),
            attributes=list(self.attributes),
            records=len(self.real),
            claimed_epsilon=self.claimed_epsilon,
            claimed_delta=self.claimed_delta,
            dp_adv_bound=dp_adv_bound(self.claimed_epsilon),
            dp_adv_bound_tight=tight,
            settings={**st.model_dump(mode="json"), "canary_metric": self.canary_metric, "parts": list(self.parts)},
            policy=self.policy.name,
            outlier_rule=OUTLIER_RULE,
            sensitive=pool.sensitive if st.ai_sets > 0 else None,
            targets=risks,
            canary=found.canary,
            one_run=found.one_run,
            memorisation=found.memorisation,
            beyond_phi=found.beyond_phi,
            disclosure=disclosure,
            checks=checks,
            verdict=worst([c.level for c in checks]) if checks else "pass",
            epsilon_lower=eps_lower,
            epsilon_lower_pure=eps_pure,
            epsilon_lower_confidence=1 - st.beta if bounds else None,
            epsilon_lower_membership=eps_mia,
            min_privacy_gain=min((r.privacy_gain for r in risks), default=None),
            exact_matches=disclosure.exact_matches if disclosure else None,
            seconds=seconds,
            timing=timing,
        )


def default_canaries(train_rows: int, beta: float, delta: float | None) -> int:
    """n/2 canaries, but at most β/(20·δ): picking the best canary multiplies δ by m in the bound."""
    m = max(1, train_rows // 2)
    return min(m, max(1, int(beta / (20 * delta)))) if delta else m


def audit_spec_privacy(
    spec_path: str | Path,
    generator: str | None = None,
    settings: RiskSettings | None = None,
    policy: RiskPolicy | None = None,
    data_path: str | Path | None = None,
    params: dict[str, Any] | None = None,
    parts: tuple[str, ...] = DEFAULT_PARTS,
    canary_metric: Metric = "unit",
    progress: Progress | None = None,
) -> PrivacyAuditResult:
    """:func:`audit_spec_privacy_parts` of a spec with one model (a split spec is refused in one line)."""
    from sdgov.agreement.load import check_unsplit, load_spec

    check_unsplit(load_spec(spec_path), "the privacy-risk audit of one result")
    return audit_spec_privacy_parts(
        spec_path, generator, settings, policy, data_path, params, parts, canary_metric, progress
    )[None]


def audit_spec_privacy_parts(
    spec_path: str | Path,
    generator: str | None = None,
    settings: RiskSettings | None = None,
    policy: RiskPolicy | None = None,
    data_path: str | Path | None = None,
    params: dict[str, Any] | None = None,
    parts: tuple[str, ...] = DEFAULT_PARTS,
    canary_metric: Metric = "unit",
    progress: Progress | None = None,
) -> dict[str | None, PrivacyAuditResult]:
    """The audit for a release spec file (the CLI): see :func:`agreement_audit_run` — once per part of a split
    synthesis, each on that part's agreement, records and own plan (:func:`~sdgov.budget.accounting.part_plan`:
    the ε its share of ρ claims), as the release's audit stage runs it; keyed by part (``None``: the one model). The
    claimed (ε, δ) come from the spec's :class:`~sdgov.budget.accounting.PrivacyPlan` (at the fixed default δ)."""
    from sdgov.agreement.load import load_spec
    from sdgov.audits.parts import audited_units, in_part
    from sdgov.budget.accounting import part_plan, plan_agreement
    from sdgov.engines import load_encoded

    loaded = load_spec(spec_path)
    records = load_encoded(Path(data_path) if data_path else loaded.data_path, loaded.schema_)
    plan = plan_agreement(loaded.agreement)  # the fixed default δ, never N
    results: dict[str | None, PrivacyAuditResult] = {}
    for part, ag in audited_units(loaded.agreement):
        codes = loaded.agreement.records_of(part, records).reset_index(drop=True)
        unit_plan = plan if part is None else part_plan(plan, part)
        with in_part(part):
            results[part] = agreement_audit_run(
                ag,
                loaded.schema_,
                codes,
                unit_plan,
                generator,
                settings,
                policy,
                params,
                parts,
                canary_metric,
                progress,
            ).run()
    return results


def agreement_audit_run(
    agreement: Any,
    schema: Any,
    codes: Any,
    plan: Any,
    generator: str | None = None,
    settings: RiskSettings | None = None,
    policy: RiskPolicy | None = None,
    params: dict[str, Any] | None = None,
    parts: tuple[str, ...] = DEFAULT_PARTS,
    canary_metric: Metric = "unit",
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> PrivacyAuditRun:
    """The audit for an agreement, built but not run (``.run()`` runs it): its attributes, Φ
    and privacy plan (``plan``: the claimed ε, δ and σ).

    The default generator is the honest audit variant of the agreement's generator (:mod:`sdgov.audits.generators`)
    with the plan's noise scale (the smallest σ if they differ) — a simulation of the release mechanism with seeded
    Gaussian noise at the same σ, hence the same ρ. Shipped generators (``sdgov.audits.generators``,
    ``sdgov.audits.privacy.leaky``: :func:`~sdgov.agreement.code_names.is_shipped`) get ``sigma``/``iterations``
    from the agreement where ``params`` do not set them; a plug-in's get only ``params``.
    """
    from sdgov.agreement.code_names import is_shipped
    from sdgov.audits.generators import honest_variant

    gen = generator or honest_variant(agreement.generator.name)
    if is_shipped(gen):  # the release's own noise scale and iterations, unless overridden
        sig = min((m.sigma for m in plan.marginals), default=0.0)
        params = {
            "sigma": 0.0 if plan.noise == "none" else float(sig),
            "iterations": agreement.generator.iterations,
            **(params or {}),
        }
    params = dict(params or {})
    settings = settings or RiskSettings()
    attrs = list(agreement.attributes)
    codes = sample_frame(codes, settings.population_rows, settings.seed)  # the pool: all records up to the limit
    domain = schema.domain(attrs)
    labels = {a: [str(x) for x in schema.by_name[a].labels()] for a in attrs}
    numeric = {a for a in attrs if schema.by_name[a].kind == "numeric"}
    return PrivacyAuditRun(
        real=codes[attrs].to_numpy(),
        attributes=attrs,
        domain=domain,
        cliques=[tuple(c) for c in agreement.cliques],
        generator=gen,
        params=params,
        settings=settings,
        policy=policy or RiskPolicy(),
        claimed_epsilon=plan.epsilon,
        claimed_delta=plan.delta,
        spec_name=agreement.spec_name,
        labels=labels,
        numeric=numeric,
        parts=parts,
        canary_metric=canary_metric,
        progress=progress,
        executor=executor,
    )


def summary(result: PrivacyAuditResult) -> dict[str, Any]:
    """The CLI's JSON contract: verdict, epsilon_lower, min_privacy_gain, exact_matches, seconds (+ details)."""
    fin = lambda x: None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x
    d = result.disclosure
    return {
        "ok": True,
        "test": "privacy",
        "verdict": result.verdict,
        "epsilon_lower": fin(result.epsilon_lower),
        "epsilon_lower_pure": fin(result.epsilon_lower_pure),
        "epsilon_lower_confidence": result.epsilon_lower_confidence,
        "epsilon_lower_membership": fin(result.epsilon_lower_membership),
        "claimed_epsilon": result.claimed_epsilon,
        "claimed_delta": result.claimed_delta,
        "min_privacy_gain": result.min_privacy_gain,
        "exact_matches": result.exact_matches,
        "exact_matches_unique": d.unique.synthetic if d else None,
        "exact_matches_unique_baseline": d.unique.independent if d else None,
        "exact_matches_unique_holdout": d.unique.synthetic_holdout if d else None,
        "unique_match_p_value": d.unique.p_value if d else None,
        "verbatim_p_value": d.verbatim.p_value if d and d.verbatim else None,
        "copy_share": result.memorisation.copy_share if result.memorisation else None,
        "copy_share_ci": list(result.memorisation.copy_share_ci) if result.memorisation else None,
        "beyond_phi_p_value": result.beyond_phi.p_value if result.beyond_phi and result.beyond_phi.ran else None,
        "seconds": result.seconds,
        "generator": result.generator,
        "generator_params": result.generator_params,
        "dp_adv_bound": result.dp_adv_bound,
        "dp_adv_bound_tight": result.dp_adv_bound_tight,
        "targets": [
            {
                "index": r.target.index,
                "kind": r.target.kind,
                "privacy_gain": r.privacy_gain,
                "privacy_gain_ci": list(r.privacy_gain_ci),
                "advantage": r.advantage,
                "feature": r.feature,
                "attribute_advantage": r.attribute.advantage if r.attribute else None,
            }
            for r in result.targets
        ],
        "checks": [c.model_dump() for c in result.checks],
        "timing": result.timing,
    }
