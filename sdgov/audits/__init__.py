"""Release audits: the checks that decide whether a synthetic release may be published.

``protocol``          what an audit check is (:class:`AuditCheck`), what it is given and what it returns
``registry``          :data:`AUDITS`, the ordered checks the audit stage runs; ``run`` runs them
``parts``             a split synthesis's pre-registered checks, run once per part and composed
``context``           the checks' :class:`AuditContext`, read from the earlier stages' contracts
``executor``          where independent trials run (serial, processes; the stage passes a Prefect one)
``checks``            the structural and provenance checks (what the generator was handed, fitted and wrote)
``decomposability``   the black-box test that the generator reads only Φ (Houssiau et al. 2022)
``privacy``           privacy-risk evidence: membership/attribute inference, a DP lower bound, record checks
``generators``        the honest and dishonest generators the audits fit (controls included), speaking
                      ``generator_protocol``

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "AuditContext": "protocol",
    "AuditError": "generator_protocol",
    "AuditReport": "protocol",
    "Check": "protocol",
    "CheckGenerator": "protocol",
    "GeneratorCrash": "generator_protocol",
    "NotTestable": "generator_protocol",
    "NotTestableResult": "generator_protocol",
    "audit_context": "context",
    "audit_spec": "decomposability.procedure",
    "audit_spec_parts": "decomposability.procedure",
    "audit_spec_privacy": "privacy.run",
    "audit_spec_privacy_parts": "privacy.run",
    "audited_units": "parts",
    "calibration_problem": "decomposability.calibration",
    "privacy_calibration_problem": "privacy.calibration",
    "records_needed": "privacy.cost",
    "check_privacy_parts": "privacy.run",
    "check_sample": "generator_protocol",
    "decomposability_section": "decomposability.report",
    "fit_generator": "generator_protocol",
    "load_generator": "generator_protocol",
    "load_risk_policy": "privacy.policy",
    "make_generator": "generator_protocol",
    "part_label": "parts",
    "privacy_section": "privacy.report",
    "run_audits": "run",
    "settings_of": "protocol",
    "summary": "privacy.run",
    "worst_of_parts": "parts",
}
__all__ = [
    "AuditContext",
    "AuditError",
    "AuditReport",
    "Check",
    "CheckGenerator",
    "GeneratorCrash",
    "NotTestable",
    "NotTestableResult",
    "audit_context",
    "audit_spec",
    "audit_spec_parts",
    "audit_spec_privacy",
    "audit_spec_privacy_parts",
    "audited_units",
    "calibration_problem",
    "check_privacy_parts",
    "check_sample",
    "decomposability_section",
    "fit_generator",
    "load_generator",
    "load_risk_policy",
    "make_generator",
    "part_label",
    "privacy_calibration_problem",
    "privacy_section",
    "records_needed",
    "run_audits",
    "settings_of",
    "summary",
    "worst_of_parts",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
