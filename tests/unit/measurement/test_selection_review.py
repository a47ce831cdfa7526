"""Stakeholders' review of a Φ proposal: edits within the limits, each logged with who and why, signed."""

from __future__ import annotations

import pytest

from sdgov.base.clock import utcnow
from sdgov.base.errors import SpecError
from sdgov.governance.approvers import ApprovalRefused, Challenge, load_approvers
from sdgov.identity.statements import SignOffStatement, encode_statement
from sdgov.measurement.selection.review import (
    EdgeReview,
    apply_review,
    check_reviewer,
    parse_pairs,
    review_md,
    review_sha256,
    selection_graph,
)
from tests.fixtures.review_record import ATTRS, PAIRS, SIZES, mst_proposal, reviewed_record
from tests.governance import write_approvers


def test_a_review_drops_and_forces_pairs_and_says_who_and_why():
    review = EdgeReview(reviewer="Ada Analyst", drop=[["c", "b"]], force=[["a", "c"]], reason="known from 2001")
    pairs, changes = apply_review(PAIRS, review, ATTRS, SIZES, 10**4)
    assert sorted(map(tuple, pairs)) == [("a", "b"), ("a", "c"), ("c", "d")]
    assert [(c.action, c.pair, c.reviewer, c.reason) for c in changes] == [
        ("drop", ["c", "b"], "Ada Analyst", "known from 2001"),
        ("force", ["a", "c"], "Ada Analyst", "known from 2001"),
    ]
    graph = {frozenset(e.pair): e.status for e in selection_graph(mst_proposal(), changes)}
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
        return encode_statement(SignOffStatement(**fields), keys[key])

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


def test_pairs_are_named_as_a_b_separated_by_semicolons():
    assert parse_pairs(" a,b ; c, d;", "--drop") == [["a", "b"], ["c", "d"]]
    assert parse_pairs("a,b,c; c,d", "--drop") == [["a", "b", "c"], ["c", "d"]]  # a proposed triple, to drop
    assert parse_pairs("", "--drop") == []
    for bad in ("a", "a,b,c,d", "a,"):
        with pytest.raises(SpecError, match="is not a pair"):
            parse_pairs(bad, "--drop")


def test_a_proposed_triple_can_be_dropped_and_a_pair_inside_it_is_not_forced_again():
    """A selection with triples proposes 3-way cliques: a reviewer may drop one (then its pairs are gone with it) —
    and forcing a pair a proposed triple already holds is refused, as the agreement refuses nested marginals."""
    proposed = [["a", "b", "c"], ["c", "d"]]
    after, changes = apply_review(
        proposed, EdgeReview(reviewer="x", drop=[["c", "b", "a"]], reason="r"), ATTRS, SIZES, 10**4
    )
    assert after == [["c", "d"]] and changes[0].action == "drop" and changes[0].pair == ["c", "b", "a"]
    with pytest.raises(SpecError, match="inside one of its triples"):
        apply_review(proposed, EdgeReview(reviewer="x", force=[["a", "c"]], reason="r"), ATTRS, SIZES, 10**4)
    with pytest.raises(SpecError, match="not a pair of Φ's attributes"):  # a triple is proposed, never forced
        apply_review([["c", "d"]], EdgeReview(reviewer="x", force=[["a", "b", "c"]], reason="r"), ATTRS, SIZES, 10**4)


def test_the_reviewers_read_the_scores_the_changes_and_the_budget():
    rec = reviewed_record()
    text = review_md(rec.proposal, rec.pairs, rec.changes, rho_budget=0.4)
    assert "ρ = 0.1** (25.0% of the release's ρ = 0.4)" in text
    assert "| a × c | forced by a reviewer | 42 |" in text  # its noisy score, from the near-threshold list
    assert "Dropped: b × c" in text
    assert "| drop | b × c | Cora Compliance | spurious \\| odd |" in text  # a '|' cannot break the table


def test_the_card_draws_selected_forced_and_dropped_edges_and_the_budget_share():
    from sdgov.agreement.spec import PrivacySpec, SelectionSpec
    from sdgov.budget.accounting import plan_privacy
    from sdgov.reporting.card import _env
    from sdgov.reporting.selection import STYLE, card_selection, draw_selection

    plan = plan_privacy(PrivacySpec(rho=0.4, selection=SelectionSpec()), [("a",), ("b",), ("a", "b")], delta=1e-3)
    sel = card_selection(reviewed_record(), b"{}", plan)
    assert sel.share == pytest.approx(0.1 / plan.rho)
    assert {frozenset(e.pair): e.status for e in sel.edges} == {
        frozenset("ab"): "forced in the draft",
        frozenset("bc"): "dropped by a reviewer",
        frozenset("cd"): "selected",
        frozenset("ac"): "forced by a reviewer",
    }
    fig = draw_selection(sel)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == [s[3] for s in STYLE.values()]
    widths = {tuple(line.get_xydata().round(6).ravel()): line.get_linewidth() for line in fig.axes[0].lines[:4]}
    assert sorted(widths.values()) == [1.2, 1.6, 3.4, 3.4]  # dropped thin, selected, two forced bold
    md = (
        _env()
        .get_template("selection.md.j2")
        .render(c=type("C", (), {"selection": sel, "part_selections": []}), selection_svgs=[""])
    )
    assert "| b × c | dropped by a reviewer |" in md and "- drop **b × c** by Cora Compliance: spurious | odd" in md
    assert f"**ρ = 0.1**, {100 * 0.1 / plan.rho:.1f}% of this release's ρ" in md


def test_a_spec_whose_phi_differs_from_its_reviewed_selection_is_refused_before_any_draw(tmp_path, capsys):
    import yaml

    from sdgov.commands import main
    from tests.conftest import make_demo_inputs

    spec = make_demo_inputs(tmp_path, rows=300)
    raw = yaml.safe_load(spec.read_text())
    raw["phi"] = {"marginals": [["Age"], ["Sex"], ["Health"], ["Age", "Sex"], ["Age", "Health"]]}
    raw["privacy"] = {"epsilon": 1.0, "selection": {}}
    record = reviewed_record().model_copy(update={"pairs": [["Age", "Sex"]]})
    (tmp_path / "phi_review.json").write_text(record.model_dump_json())
    raw["selection_review"] = "phi_review.json"
    spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert main(["validate", "--spec", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "Φ's pairs differ from the reviewed selection it names (Age × Health)" in err
    assert err.count("sdgov: error:") == 1


def test_review_without_select_is_one_line(capsys):
    from sdgov.commands import main

    assert main(["propose", "--review", "--spec", "draft.yaml", "--as", "Ada Analyst"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--review reviews a private selection" in err and "add --select mst" in err
