"""Which pre-registered privacy-risk settings can decide anything, from the settings and the policy alone.

The interactions-beyond-Φ check (:mod:`.beyond_phi`) is a Monte-Carlo test: with B bootstrap samples its p-value is
(1 + #exceed)/(B + 1), never below 1/(B + 1). When that floor is above the policy's fail level the check can never
fail — not a calibrated test but a silent one, and a blend it exists to catch would pass. As with the
decomposability screen's K (:mod:`sdgov.audits.decomposability.calibration`), such settings are refused at
pre-flight, before any noise is drawn: at the default fail level 0.005, B ≥ 199.
"""

from __future__ import annotations

import math

from sdgov.agreement.sections.privacy_risk import DEFAULT_PARTS, PrivacyRiskSettings


def smallest_bootstrap(fail_alpha: float) -> int:
    """The smallest B whose Monte-Carlo p-value floor 1/(B + 1) reaches ``fail_alpha``."""
    return max(1, math.ceil(1 / fail_alpha - 1 - 1e-9))


def privacy_calibration_problem(section: PrivacyRiskSettings) -> tuple[str, str, str] | None:
    """(what, the field, how to fix) when a pre-registered check of the default parts can never reach its fail
    level under these settings and policy, else None."""
    st, fail = section.settings, section.policy.beyond_phi.fail_alpha
    if "beyond_phi" in DEFAULT_PARTS and 1 / (st.beyond_phi_bootstrap + 1) > fail:
        return (
            f"beyond_phi_bootstrap = {st.beyond_phi_bootstrap} is too light: the beyond-Φ p-value cannot go below "
            f"1/{st.beyond_phi_bootstrap + 1}, above its fail level {fail:g}",
            "privacy_risk.settings.beyond_phi_bootstrap",
            f"pre-register beyond_phi_bootstrap ≥ {smallest_bootstrap(fail)} (or a larger policy fail_alpha)",
        )
    return None
