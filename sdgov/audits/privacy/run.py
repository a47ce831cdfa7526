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
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from sdgov.agreement.sections.privacy_risk import RiskPolicy, RiskSettings
from sdgov.audits.generator_protocol import AuditError, load_generator
from sdgov.audits.privacy.base import OUTLIER_RULE, GeneratorRef, Progress, seed_of, select_targets
from sdgov.audits.privacy.canary import CanaryResult, Metric, canary_audit
from sdgov.audits.privacy.disclosure import DisclosureResult, disclosure_checks
from sdgov.audits.privacy.memorisation import MemorisationResult, memorisation_audit
from sdgov.audits.privacy.mia import TargetRisk, dp_adv_bound, dp_adv_bound_tight, linkability
from sdgov.audits.privacy.one_run import OneRunResult, one_run_audit
from sdgov.audits.privacy.policy import PolicyCheck, evaluate, worst
from sdgov.base.executor import Executor
from sdgov.engines.recordset import sample_frame

SHIPPED_PREFIXES = ("sdgov.audits.generators:", "sdgov.audits.privacy.leaky:")
PARTS = ("mia", "one_run", "memorisation", "disclosure", "canary")
DEFAULT_PARTS = ("mia", "one_run", "memorisation", "disclosure")  # "canary": the nearest-neighbour bound, on request


class PrivacyAuditResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    spec_name: str
    generator: str
    generator_params: dict[str, Any]
    attributes: list[str]
    records: int
    claimed_epsilon: float | None
    claimed_delta: float | None
    dp_adv_bound: float | None  # e^ε − 1 (capped at 1)
    dp_adv_bound_tight: float | None  # (e^ε − 1 + 2δ)/(e^ε + 1)
    settings: dict[str, Any]
    policy: str
    outlier_rule: str
    sensitive: str | None
    targets: list[TargetRisk]
    canary: CanaryResult | None
    one_run: OneRunResult | None = None
    memorisation: MemorisationResult | None = None
    disclosure: DisclosureResult | None
    checks: list[PolicyCheck]
    verdict: str
    epsilon_lower: float | None
    epsilon_lower_pure: float | None
    min_privacy_gain: float | None
    exact_matches: int | None
    seconds: float
    timing: dict[str, float]


def audit_privacy(
    real: np.ndarray,
    attributes: list[str],
    domain: dict[str, int],
    cliques: list[tuple[str, ...]],
    generator: str,
    params: dict[str, Any],
    settings: RiskSettings,
    policy: RiskPolicy,
    claimed_epsilon: float | None,
    claimed_delta: float | None,
    *,
    spec_name: str = "",
    labels: dict[str, list[str]] | None = None,
    numeric: set[str] | None = None,
    parts: tuple[str, ...] = DEFAULT_PARTS,
    canary_metric: Metric = "unit",
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> PrivacyAuditResult:
    t0 = time.perf_counter()
    timing: dict[str, float] = {}
    load_generator(generator)  # fail fast on a bad import path
    bad = [p for p in parts if p not in PARTS]
    if bad:
        raise AuditError(f"unknown audit part(s) {bad}", "privacy audit", f"choose from {list(PARTS)}")
    st = settings
    real = np.asarray(real, dtype=np.int64)
    ref = GeneratorRef(
        path=generator, cliques=tuple(tuple(c) for c in cliques), domain=dict(domain), params=dict(params)
    )
    sizes = [domain[a] for a in attributes]
    N = len(real)

    targets = select_targets(real, attributes, sizes, st.n_outliers, st.n_random, st.seed, labels)
    mask = np.ones(N, bool)
    mask[[t.index for t in targets]] = False
    reference = real[mask][np.random.default_rng(seed_of(st.seed, 1)).permutation(int(mask.sum()))]
    sensitive = st.sensitive if st.sensitive is not None else attributes[-1]
    if sensitive not in attributes:
        raise AuditError(f"sensitive attribute {sensitive!r} is not audited", "--sensitive", f"one of {attributes}")
    timing["targets"] = time.perf_counter() - t0

    risks: list[TargetRisk] = []
    if "mia" in parts and targets:
        t = time.perf_counter()
        risks = linkability(
            ref,
            reference,
            targets,
            st,
            sensitive if st.ai_sets > 0 else None,
            sensitive in (numeric or set()),
            progress,
            executor,
        )
        timing["membership_and_attribute"] = time.perf_counter() - t

    canary: CanaryResult | None = None
    if "canary" in parts:
        t = time.perf_counter()
        m = st.canaries or default_canaries(st.train_rows, st.beta, claimed_delta)
        n_base = st.canary_base_rows if st.canary_base_rows is not None else st.train_rows - m
        base = reference[
            np.random.default_rng(seed_of(st.seed, 2)).choice(
                len(reference), size=max(0, min(n_base, len(reference))), replace=False
            )
        ]
        canary = canary_audit(
            ref, base, m, st.m, seed_of(st.seed, 3), st.beta, claimed_delta or 0.0, canary_metric, st.canary_runs
        )
        timing["canary"] = time.perf_counter() - t
        if progress:
            progress(1, 1, "canary audit")

    one_run: OneRunResult | None = None
    if "one_run" in parts:
        t = time.perf_counter()
        one_run = one_run_audit(
            ref,
            reference,
            st.one_run_canaries,
            st.one_run_base_rows if st.one_run_base_rows is not None else st.train_rows,
            st.one_run_synth_factor,
            seed_of(st.seed, 7),
            st.beta / (2 if canary is not None else 1),  # both bounds reported: Bonferroni over the two
            claimed_delta or 0.0,
        )
        timing["one_run"] = time.perf_counter() - t
        if progress:
            progress(1, 1, "one-run canary audit")

    memo: MemorisationResult | None = None
    if "memorisation" in parts:
        t = time.perf_counter()
        memo = memorisation_audit(
            ref,
            reference,
            st.memorisation_pairs,
            st.memorisation_rows,
            st.memorisation_synth_factor,
            seed_of(st.seed, 8),
            st.confidence,
            (1 - policy.memorisation.warn_alpha, 1 - policy.memorisation.fail_alpha),
            progress,
            executor,
        )
        timing["memorisation"] = time.perf_counter() - t

    disclosure: DisclosureResult | None = None
    if "disclosure" in parts:
        t = time.perf_counter()
        n_train = st.disclosure_rows or min(len(reference) // 3, 25_000)
        if 3 * n_train > len(reference):
            raise AuditError(
                f"disclosure_rows = {n_train}: three disjoint parts of that size do not fit in the "
                f"{len(reference)} reference records",
                "privacy audit",
                "lower disclosure_rows",
            )
        train, holdout, independent = (reference[i * n_train : (i + 1) * n_train] for i in range(3))
        synth = ref.fit_sample(train, seed_of(st.seed, 4), n_train, [seed_of(st.seed, 5)])[0]
        disclosure = disclosure_checks(
            train,
            holdout,
            independent,
            synth,
            attributes,
            sizes,
            [tuple(c) for c in cliques],
            policy.small_cells.threshold,
            st.dcr_sample,
            seed_of(st.seed, 6),
        )
        timing["disclosure"] = time.perf_counter() - t
        if progress:
            progress(1, 1, "record checks")

    tight = dp_adv_bound_tight(claimed_epsilon, claimed_delta)
    bounds = [b for b in (canary, one_run) if b is not None]
    eps_lower = max((b.epsilon_lower for b in bounds), default=None)
    eps_pure = max((b.epsilon_lower_pure for b in bounds), default=None)
    checks = evaluate(
        policy,
        claimed_epsilon=claimed_epsilon,
        epsilon_lower=eps_lower,
        targets=risks,
        dp_bound=tight,
        disclosure=disclosure,
        epsilon_lower_pure=eps_pure,
        n_worlds=st.n_shadow,
        memorisation=memo,
    )
    seconds = time.perf_counter() - t0
    timing["total"] = seconds
    return PrivacyAuditResult(
        spec_name=spec_name,
        generator=generator,
        generator_params=dict(params),
        attributes=list(attributes),
        records=N,
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
        dp_adv_bound=dp_adv_bound(claimed_epsilon),
        dp_adv_bound_tight=tight,
        settings={**st.model_dump(mode="json"), "canary_metric": canary_metric, "parts": list(parts)},
        policy=policy.name,
        outlier_rule=OUTLIER_RULE,
        sensitive=sensitive if st.ai_sets > 0 else None,
        targets=risks,
        canary=canary,
        one_run=one_run,
        memorisation=memo,
        disclosure=disclosure,
        checks=checks,
        verdict=worst([c.level for c in checks]) if checks else "pass",
        epsilon_lower=eps_lower,
        epsilon_lower_pure=eps_pure,
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
    """The audit for a release spec file (the CLI): see :func:`audit_agreement_privacy`. The claimed (ε, δ) come
    from the spec's :class:`~sdgov.agreement.accounting.PrivacyPlan` on the full data."""
    from sdgov.agreement.accounting import plan_privacy
    from sdgov.agreement.load import check_unsplit, load_spec
    from sdgov.engines import load_encoded

    loaded = load_spec(spec_path)
    check_unsplit(loaded, "the privacy-risk audit")
    codes = load_encoded(Path(data_path) if data_path else loaded.data_path, loaded.schema_)
    plan = plan_privacy(loaded.agreement.privacy, loaded.agreement.cliques, len(codes))
    return audit_agreement_privacy(
        loaded.agreement,
        loaded.schema_,
        codes,
        plan,
        generator,
        settings,
        policy,
        params,
        parts,
        canary_metric,
        progress,
    )


def audit_agreement_privacy(
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
) -> PrivacyAuditResult:
    """The audit for an agreement: its attributes, Φ and privacy plan (``plan``: the claimed ε, δ and σ).

    The default generator is the honest audit variant of the agreement's generator (:mod:`sdgov.audits.generators`)
    with the plan's noise scale (the smallest σ if they differ) — a simulation of the release mechanism with seeded
    Gaussian noise at the same σ, hence the same ρ. Shipped generators (``sdgov.audits.generators``,
    ``sdgov.audits.privacy.leaky``) get ``sigma``/``iterations`` from the agreement where ``params`` do not set them; a
    third party's get only ``params``.
    """
    from sdgov.audits.generators import honest_variant

    gen = generator or honest_variant(agreement.generator.name)
    if gen.startswith(SHIPPED_PREFIXES):  # the release's own noise scale and iterations, unless overridden
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
    return audit_privacy(
        codes[attrs].to_numpy(),
        attrs,
        domain,
        [tuple(c) for c in agreement.cliques],
        gen,
        params,
        settings,
        policy or RiskPolicy(),
        plan.epsilon,
        plan.delta,
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
        "claimed_epsilon": result.claimed_epsilon,
        "claimed_delta": result.claimed_delta,
        "min_privacy_gain": result.min_privacy_gain,
        "exact_matches": result.exact_matches,
        "exact_matches_unique": d.unique.synthetic if d else None,
        "exact_matches_unique_baseline": d.unique.independent if d else None,
        "exact_matches_unique_holdout": d.unique.synthetic_holdout if d else None,
        "unique_match_p_value": d.unique.p_value if d else None,
        "copy_share": result.memorisation.copy_share if result.memorisation else None,
        "copy_share_ci": list(result.memorisation.copy_share_ci) if result.memorisation else None,
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
