"""Who may decide what: roles and sign-offs, the approvers registry, the controller's signed files and
policy, standing approvals, and the budget ledger that every spend composes in.

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "APPROVERS": "controller",
    "Account": "ledger",
    "ApprovalRefused": "approvers",
    "Approver": "approvers",
    "Approvers": "approvers",
    "Challenge": "approvers",
    "REQUIRED_ROLE": "approvers",
    "SignOff": "signoff",
    "StandingApproval": "standing",
    "agreement_signoffs": "standing",
    "check_controller_files": "controller",
    "check_decision": "approvers",
    "check_plan_allowed": "policy",
    "check_release": "policy",
    "commit": "controller",
    "controller_approvers": "controller",
    "controller_files": "controller",
    "init": "controller",
    "ledger_summary": "ledger",
    "load_approvals": "standing",
    "load_config": "controller",
    "load_policy": "policy",
    "planned": "policy",
    "registry_id": "controller",
    "release_signoff": "standing",
    "sign_standing": "standing",
    "write_pinned": "standing",
}
__all__ = [
    "APPROVERS",
    "Account",
    "ApprovalRefused",
    "Approver",
    "Approvers",
    "Challenge",
    "REQUIRED_ROLE",
    "SignOff",
    "StandingApproval",
    "agreement_signoffs",
    "check_controller_files",
    "check_decision",
    "check_plan_allowed",
    "check_release",
    "commit",
    "controller_approvers",
    "controller_files",
    "init",
    "ledger_summary",
    "load_approvals",
    "load_config",
    "load_policy",
    "planned",
    "registry_id",
    "release_signoff",
    "sign_standing",
    "write_pinned",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
