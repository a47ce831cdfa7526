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
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import Field

from sdgov.agreement.sections.privacy_risk import DEFAULT_PARTS, PARTS, RiskPolicy, RiskSettings
from sdgov.audits.generator_protocol import AuditError, load_generator
from sdgov.audits.privacy.base import OUTLIER_RULE, GeneratorRef, Progress, seed_of, select_targets
from sdgov.audits.privacy.beyond_phi import BeyondPhiResult
from sdgov.audits.privacy.canary import CanaryResult, Metric
from sdgov.audits.privacy.cost import planned_fits
from sdgov.audits.privacy.disclosure import DisclosureResult
from sdgov.audits.privacy.memorisation import MemorisationResult
from sdgov.audits.privacy.mia import TargetRisk, dp_adv_bound, membership_adv_bound
from sdgov.audits.privacy.one_run import OneRunResult
from sdgov.audits.privacy.part import AuditFrame, PrivacyPart
from sdgov.audits.privacy.planner import fit_all
from sdgov.audits.privacy.policy import PolicyCheck, epsilon_check, worst
from sdgov.audits.privacy.registry import parts_named
from sdgov.base.errors import InternalError
from sdgov.base.executor import Executor, executor_for
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
    other_parts: dict[str, Any] = Field({}, exclude_if=lambda v: not v)  # parts without a field of their own
    fits: dict[str, int] = {}  # the generator fits each part made (a shared fit counted once, for its first part)
    checks: list[PolicyCheck]
    verdict: str
    epsilon_lower: float | None
    epsilon_lower_pure: float | None
    epsilon_lower_confidence: float | None = None  # 1 − β: every refuting bound at its share of β
    epsilon_lower_membership: float | None = None  # from the shadow models' scores (see result())
    min_privacy_gain: float | None
    exact_matches: int | None
    seconds: float
    timing: dict[str, float]


@dataclass(frozen=True, kw_only=True)
class PrivacyAuditRun:
    """The privacy-risk audit of ``generator`` on ``real`` (codes, one column per attribute): its inputs as fields,
    :meth:`run` runs the parts asked in ``parts`` (:data:`~sdgov.audits.privacy.registry.PRIVACY_PARTS`) — their
    fits planned together, each shared fit made once — and judges each under its own section of ``policy``.

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
        """Every asked part's fits in one plan (:func:`~sdgov.audits.privacy.planner.fit_all`: a fit two parts share is
        made once), then each part in the registry's order, timed, then the checks: the DP lower bound first, then
        each part's own."""
        t0 = time.perf_counter()
        frame = self.frame()
        timing = {"targets": time.perf_counter() - t0}
        asked = parts_named(self.parts)
        requests = {p.name: p.requests(frame) for p in asked}
        for p in asked:  # what planned_fits counted is what the parts ask for: the audit's cost is known beforehand
            if {r.key for r in requests[p.name]} != set(p.fit_keys(self.settings, frame.shape())):
                raise InternalError(f"privacy-audit part {p.name!r} asks for other fits than it plans")
        flat = [r for p in asked for r in requests[p.name]]
        fitted = self._timed(timing, "fits", lambda: fit_all(frame.ref, flat, frame.executor, self.progress))
        results: dict[str, Any] = {}
        for p in asked:
            mine, fitted = fitted[: len(requests[p.name])], fitted[len(requests[p.name]) :]
            results[p.name] = self._timed(timing, p.name, partial(p.run, frame, mine), p.name)
        return self.result(frame, asked, results, t0, timing)

    def _timed(self, timing: dict[str, float], key: str, phase: Callable[[], _T], done: str | None = None) -> _T:
        t, cpu = time.perf_counter(), time.process_time()
        out = phase()
        timing[key] = time.perf_counter() - t
        timing[f"{key}_cpu"] = time.process_time() - cpu  # this process only (a shared machine's wall time misleads)
        if done and self.progress:
            self.progress(1, 1, done)
        return out

    def frame(self) -> AuditFrame:
        """Fail fast on a bad generator path or part; pick the targets (outliers and random records) and shuffle the
        rest into the reference records: what every part is handed."""
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
        return AuditFrame(
            ref=ref,
            targets=targets,
            reference=reference,
            sizes=sizes,
            sensitive=sensitive,
            numeric_sensitive=sensitive in (self.numeric or set()),
            settings=st,
            policy=self.policy,
            claimed_epsilon=self.claimed_epsilon,
            claimed_delta=self.claimed_delta,
            executor=self.executor or executor_for(st.n_jobs),
            progress=self.progress,
            canary_metric=self.canary_metric,
            refuting_parts=sum(p.splits_beta for p in parts_named(self.parts)),
        )

    def result(
        self,
        frame: AuditFrame,
        asked: list[PrivacyPart],
        results: dict[str, Any],
        t0: float,
        timing: dict[str, float],
    ) -> PrivacyAuditResult:
        """The checks — the DP lower bound from the parts' bounds, then each part's own — and the verdict."""
        st = self.settings
        bounds = [p.bound(results[p.name], frame) for p in asked]
        refuting = [b for b in bounds if b is not None and b.refutes]
        reported = [b for b in bounds if b is not None and not b.refutes]
        first = epsilon_check(self.policy, self.claimed_epsilon, refuting, reported)
        checks = ([first] if first else []) + [c for p in asked for c in p.checks(results[p.name], frame)]
        known = PrivacyAuditResult.model_fields
        fields = {p.result_field: results[p.name] for p in asked if p.result_field in known}
        other = {p.name: results[p.name] for p in asked if p.result_field not in known}
        risks: list[TargetRisk] = fields.get("targets", [])
        disclosure: DisclosureResult | None = fields.get("disclosure")
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
            dp_adv_bound_tight=membership_adv_bound(self.claimed_epsilon, self.claimed_delta),
            settings={**st.model_dump(mode="json"), "canary_metric": self.canary_metric, "parts": list(self.parts)},
            policy=self.policy.name,
            outlier_rule=OUTLIER_RULE,
            sensitive=frame.sensitive if st.ai_sets > 0 else None,
            targets=risks,
            canary=fields.get("canary"),
            one_run=fields.get("one_run"),
            memorisation=fields.get("memorisation"),
            beyond_phi=fields.get("beyond_phi"),
            disclosure=disclosure,
            other_parts=other,
            fits=planned_fits(st, self.parts, frame.shape()),
            checks=checks,
            verdict=worst([c.level for c in checks]) if checks else "pass",
            epsilon_lower=max((b.epsilon_lower for b in refuting), default=None),
            epsilon_lower_pure=max(
                (b.epsilon_lower if b.epsilon_lower_pure is None else b.epsilon_lower_pure for b in refuting),
                default=None,
            ),
            epsilon_lower_confidence=1 - st.beta if refuting else None,
            epsilon_lower_membership=max((b.epsilon_lower for b in reported), default=None),
            min_privacy_gain=min((r.privacy_gain for r in risks), default=None),
            exact_matches=disclosure.exact_matches if disclosure else None,
            seconds=seconds,
            timing=timing,
        )


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
    claimed (ε, δ) come from the spec's :class:`~sdgov.budget.accounting.PrivacyPlan` (at the fixed default δ). The
    trials run on the Dask cluster when the spec's engine is Dask (``SDGOV_DASK_SCHEDULER``, else a local cluster;
    the same result), else in ``settings.n_jobs`` worker processes."""
    from sdgov.agreement.load import load_spec
    from sdgov.audits.parts import audited_units, in_part
    from sdgov.budget.accounting import part_plan, plan_agreement
    from sdgov.engines import cluster_trials, load_encoded

    loaded = load_spec(spec_path)
    records = load_encoded(Path(data_path) if data_path else loaded.data_path, loaded.schema_)
    plan = plan_agreement(loaded.agreement)  # the fixed default δ, never N
    results: dict[str | None, PrivacyAuditResult] = {}
    with cluster_trials(loaded.spec.engine) as cluster:  # engine: dask → the trials on the Dask cluster
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
                    cluster,
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
