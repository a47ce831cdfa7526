"""Stakeholders' review of a Φ proposal: edits within the limits, each logged with who and why, signed."""

from __future__ import annotations

import pytest

from sdgov.approvers import ApprovalRefused, Challenge, load_approvers
from sdgov.contracts import utcnow
from sdgov.errors import SpecError
from sdgov.selection import Proposal, SelectedEdge, SelectionBudget
from sdgov.selection_review import (
    EdgeReview,
    apply_review,
    check_reviewer,
    review_sha256,
    selection_graph,
)
from sdgov.statements import SignOffStatement, encode
from tests.governance import write_approvers

ATTRS = ["a", "b", "c", "d"]
SIZES = {"a": 2, "b": 3, "c": 4, "d": 500}
PAIRS = [["a", "b"], ["b", "c"], ["c", "d"]]


def _proposal() -> Proposal:
    budget = SelectionBudget(rho=0.1, rho_mechanism=0.1, rho_scores=0, rounds=2, gumbel_scale=1.0, score_sigma=None)
    return Proposal(
        method="mst",
        mechanism="test",
        attributes=ATTRS,
        selected=[
            SelectedEdge(pair=["a", "b"], cells=6, noisy_score=None, how="forced"),
            SelectedEdge(pair=["b", "c"], cells=12, noisy_score=None, how="selected", round=1),
            SelectedEdge(pair=["c", "d"], cells=2000, noisy_score=None, how="selected", round=2),
        ],
        near_threshold=[],
        excluded=[],
        over_cell_limit=[],
        budget=budget,
    )


def test_a_review_drops_and_forces_pairs_and_says_who_and_why():
    review = EdgeReview(reviewer="Ada Analyst", drop=[["c", "b"]], force=[["a", "c"]], reason="known from 2001")
    pairs, changes = apply_review(PAIRS, review, ATTRS, SIZES, 10**4)
    assert sorted(map(tuple, pairs)) == [("a", "b"), ("a", "c"), ("c", "d")]
    assert [(c.action, c.pair, c.reviewer, c.reason) for c in changes] == [
        ("drop", ["c", "b"], "Ada Analyst", "known from 2001"),
        ("force", ["a", "c"], "Ada Analyst", "known from 2001"),
    ]
    graph = {frozenset(e.pair): e.status for e in selection_graph(_proposal(), changes)}
    assert graph == {
        frozenset("ab"): "forced in the draft",
        frozenset("bc"): "dropped by a reviewer",
        frozenset("cd"): "selected",
        frozenset("ac"): "forced by a reviewer",
    }


@pytest.mark.parametrize(
    ("review", "message"),
    [
        (EdgeReview(reviewer="x", drop=[["a", "c"]], reason="r"), "not in the proposed Φ"),
        (EdgeReview(reviewer="x", force=[["a", "zz"]], reason="r"), "not a pair of Φ's attributes"),
        (EdgeReview(reviewer="x", force=[["b", "a"]], reason="r"), "already in Φ"),
        (EdgeReview(reviewer="x", force=[["b", "d"]], reason="r"), "1,500 cells, over the limit of 1,000"),
    ],
)
def test_a_bad_edit_is_refused_naming_it(review, message):
    with pytest.raises(SpecError, match=message):
        apply_review(PAIRS, review, ATTRS, SIZES, 1000)


def test_a_review_that_breaks_the_domain_limit_is_refused():
    review = EdgeReview(reviewer="x", force=[["a", "c"]], reason="r")
    with pytest.raises(SpecError, match="exceeds the domain limit"):
        apply_review(PAIRS, review, ATTRS, SIZES, 10**4, fits=lambda pairs: len(pairs) <= 3)


def test_a_review_counts_only_signed_by_the_reviewers_registered_key(tmp_path):
    keys = write_approvers(tmp_path / "reg", tmp_path / "keys")
    approvers = load_approvers(tmp_path / "reg" / "approvers.yaml")
    review = EdgeReview(reviewer="Cora Compliance", drop=[["b", "c"]], reason="spurious")
    challenge = Challenge(
        registry_id="r1", run_id="run1", nonce="n1", subject="phi_review", sha256=review_sha256(review)
    )

    def token(who: str, key: str, **over) -> str:
        fields = {**challenge.model_dump(), "decision": "review", "approver": who, "time": utcnow(), **over}
        return encode(SignOffStatement(**fields), keys[key])

    who, verified = check_reviewer(approvers, review, challenge, token("Cora Compliance", "Cora Compliance"))
    assert who.name == "Cora Compliance" and verified
    with pytest.raises(ApprovalRefused, match="does not verify"):  # signed with someone else's key
        check_reviewer(approvers, review, challenge, token("Cora Compliance", "Ada Analyst"))
    with pytest.raises(ApprovalRefused, match="nonce differ"):  # a statement from another pause
        check_reviewer(approvers, review, challenge, token("Cora Compliance", "Cora Compliance", nonce="old"))
    edited = review.model_copy(update={"drop": [["a", "b"]]})  # the review changed after it was signed
    with pytest.raises(ApprovalRefused, match="not for this review"):
        check_reviewer(approvers, edited, challenge, token("Cora Compliance", "Cora Compliance"))
    with pytest.raises(ApprovalRefused, match="not signed"):
        check_reviewer(approvers, review, challenge, "")
    assert check_reviewer(approvers, review, challenge, "", allow_unsigned=True)[1] is False
