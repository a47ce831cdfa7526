"""What people read: the generator card, its draft, the evidence report, approvers' summaries, the audit
verdict, the selection card and publishing into the registry.

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "Card": "card",
    "Drafted": "draft",
    "Facts": "approver_summaries",
    "ReleaseCandidate": "publish",
    "agreement_facts": "approver_summaries",
    "agreement_md": "approver_summaries",
    "audit_sections": "draft",
    "budget_md": "approver_summaries",
    "check_releasable": "publish",
    "existing": "approver_summaries",
    "form_fields": "approver_summaries",
    "hash_lines": "approver_summaries",
    "log_blocked": "publish",
    "log_failed": "publish",
    "overall_verdict": "verdict",
    "publish_release": "publish",
    "release_facts": "approver_summaries",
    "release_md": "approver_summaries",
    "write_draft": "draft",
}
__all__ = [
    "Card",
    "Drafted",
    "Facts",
    "ReleaseCandidate",
    "agreement_facts",
    "agreement_md",
    "audit_sections",
    "budget_md",
    "check_releasable",
    "existing",
    "form_fields",
    "hash_lines",
    "log_blocked",
    "log_failed",
    "overall_verdict",
    "publish_release",
    "release_facts",
    "release_md",
    "write_draft",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
