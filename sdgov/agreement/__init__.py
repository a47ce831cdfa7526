"""What was agreed before any data is read: the release spec and its sections, loading and resolving it into the
hashed :class:`~sdgov.agreement.spec.Agreement` (its privacy plan and statement are :mod:`sdgov.budget`'s).

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "AgreedPart": "spec",
    "AgreedSplit": "spec",
    "Agreement": "spec",
    "ClassifierTask": "sections.tasks",
    "DEFAULT_PARTS": "sections.privacy_risk",
    "DecomposabilitySettings": "sections.decomposability",
    "GapTask": "sections.tasks",
    "LoadedSpec": "load",
    "MAX_K": "sections.decomposability",
    "MAX_ROWS": "spec",
    "ModelCardSpec": "spec",
    "PARTS": "sections.privacy_risk",
    "Params": "sections.decomposability",
    "PrivacyRiskSettings": "sections.privacy_risk",
    "PrivacySpec": "spec",
    "RegressionTask": "sections.tasks",
    "ReleaseSpec": "spec",
    "RiskPolicy": "sections.privacy_risk",
    "RiskSettings": "sections.privacy_risk",
    "SECTIONS": "sections",
    "SelectionSpec": "spec",
    "TableTask": "sections.tasks",
    "audit_generator_names": "code_names",
    "cells_weight": "weights",
    "check_code_name": "code_names",
    "check_named_code": "code_names",
    "check_unsplit": "load",
    "is_shipped": "code_names",
    "load_spec": "load",
    "resolved": "load",
}
__all__ = [
    "AgreedPart",
    "AgreedSplit",
    "Agreement",
    "ClassifierTask",
    "DEFAULT_PARTS",
    "DecomposabilitySettings",
    "GapTask",
    "LoadedSpec",
    "MAX_K",
    "MAX_ROWS",
    "ModelCardSpec",
    "PARTS",
    "Params",
    "PrivacyRiskSettings",
    "PrivacySpec",
    "RegressionTask",
    "ReleaseSpec",
    "RiskPolicy",
    "RiskSettings",
    "SECTIONS",
    "SelectionSpec",
    "TableTask",
    "audit_generator_names",
    "cells_weight",
    "check_code_name",
    "check_named_code",
    "check_unsplit",
    "is_shipped",
    "load_spec",
    "resolved",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
