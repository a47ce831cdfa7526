"""What was agreed before any data is read: the release spec ψ and its sections, loading and resolving it
into the hashed :class:`~sdgov.agreement.spec.Agreement`, and the privacy plan (zCDP accounting).

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "AgreedPart": "spec",
    "AgreedSplit": "spec",
    "Agreement": "spec",
    "ClassifierTask": "sections.tasks",
    "DEFAULT_DELTA": "accounting",
    "DecomposabilitySettings": "sections.decomposability",
    "GapTask": "sections.tasks",
    "GeneratorSpec": "spec",
    "LoadedSpec": "load",
    "MAX_K": "sections.decomposability",
    "MAX_ROWS": "spec",
    "ModelCardSpec": "spec",
    "PrivacyPlan": "accounting",
    "PrivacyRiskSettings": "sections.privacy_risk",
    "RegressionTask": "sections.tasks",
    "ReleaseSpec": "spec",
    "RiskPolicy": "sections.privacy_risk",
    "RiskSettings": "sections.privacy_risk",
    "SECTIONS": "sections",
    "SelectionSpec": "spec",
    "TableTask": "sections.tasks",
    "add_noise": "accounting",
    "check_unsplit": "load",
    "epsilon_pld": "accounting",
    "load_spec": "load",
    "plan_agreement": "accounting",
    "plan_privacy": "accounting",
    "resolved": "load",
    "rho_of_sigma": "accounting",
    "selection_budget": "accounting",
}
__all__ = [
    "AgreedPart",
    "AgreedSplit",
    "Agreement",
    "ClassifierTask",
    "DEFAULT_DELTA",
    "DecomposabilitySettings",
    "GapTask",
    "GeneratorSpec",
    "LoadedSpec",
    "MAX_K",
    "MAX_ROWS",
    "ModelCardSpec",
    "PrivacyPlan",
    "PrivacyRiskSettings",
    "RegressionTask",
    "ReleaseSpec",
    "RiskPolicy",
    "RiskSettings",
    "SECTIONS",
    "SelectionSpec",
    "TableTask",
    "add_noise",
    "check_unsplit",
    "epsilon_pld",
    "load_spec",
    "plan_agreement",
    "plan_privacy",
    "resolved",
    "rho_of_sigma",
    "selection_budget",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
