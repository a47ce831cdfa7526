"""Measuring Φ on the confidential data: noisy marginals drawn once per statistic per dataset (the
store), and private selection of Φ (MST, AIM, the stakeholder review).

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "DECISION": "selection.review",
    "EdgeChange": "selection.review",
    "EdgeReview": "selection.review",
    "Proposal": "selection.mst",
    "ReviewLimits": "selection.review",
    "STATEMENT": "store",
    "SUBJECT": "selection.review",
    "SelectionRecord": "selection.review",
    "SignedReview": "selection.review",
    "SplitSelectionRecord": "selection.review",
    "account_privacy": "store",
    "assemble_logged": "store",
    "changes_text": "selection.review",
    "check_draft": "selection.store",
    "check_reviewer": "selection.review",
    "decide_review": "selection.review",
    "format_pairs": "selection.review",
    "load_selection_records": "selection.review",
    "marginal_counts": "marginals",
    "measure_agreement": "marginals",
    "measure_once": "store",
    "min_selection_records": "selection.feasibility",
    "noisy_measurements": "marginals",
    "parse_pairs": "selection.review",
    "proposals_md": "selection.review",
    "review_md": "selection.review",
    "review_sha256": "selection.review",
    "select_once": "selection.store",
    "selection_records": "selection.review",
    "selection_units": "selection.store",
}
__all__ = [
    "DECISION",
    "EdgeChange",
    "EdgeReview",
    "Proposal",
    "ReviewLimits",
    "STATEMENT",
    "SUBJECT",
    "SelectionRecord",
    "SignedReview",
    "SplitSelectionRecord",
    "account_privacy",
    "assemble_logged",
    "changes_text",
    "check_draft",
    "check_reviewer",
    "decide_review",
    "format_pairs",
    "load_selection_records",
    "marginal_counts",
    "measure_agreement",
    "measure_once",
    "min_selection_records",
    "noisy_measurements",
    "parse_pairs",
    "proposals_md",
    "review_md",
    "review_sha256",
    "select_once",
    "selection_records",
    "selection_units",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
