"""The privacy-risk audit's settings: one model that is both the spec's pre-registered ``privacy_risk:`` section and
what the audit runs with."""

from __future__ import annotations

from pydantic import Field

from sdgov.audits.privacy.base import RiskSettings
from sdgov.audits.privacy.policy import Policy
from sdgov.model import Frozen


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
        description="import path 'module:callable'; default: the honest "
        "audit variant of the spec's generator at the plan's σ",
    )
    generator_params: dict[str, float | int | str | bool | list[str]] | None = Field(
        default=None, description="shipped generators: the plan's σ and the spec's iterations unless set here"
    )
    settings: RiskSettings = RiskSettings()
    policy: Policy = Policy()
