"""Pass / warn / fail thresholds of the privacy-risk audit, from a policy file (YAML or JSON), and the rules shared
by the parts.

Every section is optional; a missing value takes the default (``examples/privacy_policy.yaml`` spells all of them
out). Each part of the audit judges its own result under its own section(s) (its ``checks``,
:mod:`sdgov.audits.privacy.part`); the "DP lower bound" row combines the bounds of several parts
(:func:`epsilon_check`). The verdict is the worst level of any check: one ``fail`` blocks the release.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sdgov.agreement.sections.privacy_risk import RiskPolicy
from sdgov.audits.generator_protocol import AuditError
from sdgov.base.loading import load_model_file
from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.audits.privacy.part import EpsilonBound

Level = Literal["pass", "warn", "fail"]


def load_risk_policy(path: str | Path | None) -> RiskPolicy:
    """The thresholds from a policy file (YAML or JSON), or the built-in defaults without one."""
    if path is None:
        return RiskPolicy()
    return load_model_file(RiskPolicy, path, AuditError, "privacy policy")


class PolicyCheck(Frozen):
    name: str
    level: Level
    detail: str


def worst(levels: list[Level]) -> Level:
    """The worst of the levels: fail over warn over pass (pass for none)."""
    return "fail" if "fail" in levels else "warn" if "warn" in levels else "pass"


def level_of(fail: bool, warn: bool) -> Level:
    """``fail`` if the fail rule holds, else ``warn`` if the warn rule does, else ``pass``."""
    return "fail" if fail else "warn" if warn else "pass"


def epsilon_check(
    policy: RiskPolicy, claimed_epsilon: float | None, bounds: list[EpsilonBound], reported: list[EpsilonBound]
) -> PolicyCheck | None:
    """The "DP lower bound" row, under ``policy.epsilon_lower``: ε_lower, the largest of the parts' refuting
    ``bounds`` (each at its share of β, so their maximum holds at 1 − β: ``confidence``), against the claimed ε;
    ``reported`` bounds (the membership scores') are shown beside it. None when no part offers a refuting bound."""
    if not bounds:
        return None
    eps = max(b.epsilon_lower for b in bounds)
    if claimed_epsilon is None:
        return PolicyCheck(
            name="DP lower bound", level="warn", detail=f"ε_lower = {eps:.3g}, but the release claims no ε (no noise)"
        )
    p = policy.epsilon_lower
    pure = max(b.epsilon_lower if b.epsilon_lower_pure is None else b.epsilon_lower_pure for b in bounds)
    confidence = 1 - sum(1 - b.confidence for b in bounds)
    beside = "".join(
        f"; from the shadow models' scores ε ≥ {r.epsilon_lower:.3g} (confidence {r.confidence:.0%}, all targets "
        "jointly)"
        for r in reported
    )
    return PolicyCheck(
        name="DP lower bound",
        level=level_of(
            p.fail_above_claimed and eps > claimed_epsilon, max(eps, pure) > p.warn_fraction * claimed_epsilon
        ),
        detail=f"ε_lower = {eps:.3g} (δ-aware; pure-ε reading {pure:.3g}; confidence {confidence:.0%}) vs claimed "
        f"ε = {claimed_epsilon:.3g}{beside}" + (" — the privacy claim is REFUTED" if eps > claimed_epsilon else ""),
    )


def two_proportion_p(x1: float, n1: int, x2: float, n2: int) -> float:
    """One-sided p-value of share x1/n1 > x2/n2 (pooled two-proportion z-test)."""
    import math

    from scipy import stats

    if n1 <= 0 or n2 <= 0:
        return 1.0
    pool = (x1 + x2) / (n1 + n2)
    se = math.sqrt(max(pool * (1 - pool) * (1 / n1 + 1 / n2), 0.0))
    if se == 0:
        return 1.0 if x1 / n1 <= x2 / n2 else 0.0
    return float(stats.norm.sf((x1 / n1 - x2 / n2) / se))
