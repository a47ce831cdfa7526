"""Test helper: a release's privacy statement from its plan alone, as the measure stage would make it for the first
release of a dataset (nothing spent before, every table drawn now) — or after ``before`` ρ, or after an exact
measurement (``exact``)."""

from __future__ import annotations

from sdgov.budget.accounting import PrivacyPlan
from sdgov.budget.statement import (
    Epsilon,
    ExactMeasurement,
    Origin,
    PrivacyStatement,
    cumulative_epsilon,
    make_statement,
)

EXACT_RUN = ExactMeasurement(time="2026-11-01T00:00:00Z", run_id="e" * 32, registry_id="r" * 32)


def statement_of(
    plan: PrivacyPlan,
    before: float = 0.0,
    exact: bool = False,
    cumulative: Epsilon | None = None,
    sharing: list[str] | None = None,
) -> PrivacyStatement:
    rho = 0.0 if plan.noise == "none" else (plan.rho or 0.0)
    total = before + rho
    if cumulative is None:
        sigmas = None if plan.selection_rho or before else [m.sigma for m in plan.marginals]
        cumulative = cumulative_epsilon(total, sigmas, plan.delta, exact)
    return make_statement(
        plan,
        dataset="toyland_census",
        fingerprint_hmac="f" * 64,
        authority="a" * 32,
        registries=1,
        spent_rho=rho,
        spent_after_rho=total,
        lifetime_rho=1.0,
        policy_entry="defaults",
        policy_sha256="p" * 64,
        max_epsilon_per_release=2.0,
        cumulative=cumulative,
        exact_measurements=[EXACT_RUN] if exact else [],
        statistics=[
            Origin(
                part=m.part,
                attributes=list(m.clique),
                sigma=m.sigma,
                rho=m.rho,
                statistic="s" * 64,
                how="reused" if sharing else "drawn",
                earlier_releases=sharing or [],
            )
            for m in plan.marginals
        ],
        earlier_releases_sharing=sharing or [],
    )
