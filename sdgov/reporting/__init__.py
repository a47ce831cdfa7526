"""What people read: the generator card, its draft, the evidence report, approvers' summaries, the audit
verdict, the selection card and publishing into the registry.

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "Card": "card",
    "Drafted": "draft",
    "ReleaseCandidate": "publish",
    "agreement_md": "approver_summaries",
    "audit_sections": "draft",
    "budget_md": "approver_summaries",
    "check_releasable": "publish",
    "epsilon_rows": "card",
    "existing": "approver_summaries",
    "key_facts": "approver_summaries",
    "log_blocked": "publish",
    "log_failed": "publish",
    "overall_verdict": "verdict",
    "privacy_headline": "card",
    "publish_release": "publish",
    "release_md": "approver_summaries",
    "write_draft": "draft",
}
__all__ = [
    "Card",
    "Drafted",
    "ReleaseCandidate",
    "agreement_md",
    "audit_sections",
    "budget_md",
    "check_releasable",
    "epsilon_rows",
    "existing",
    "key_facts",
    "log_blocked",
    "log_failed",
    "overall_verdict",
    "privacy_headline",
    "publish_release",
    "release_md",
    "write_draft",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
