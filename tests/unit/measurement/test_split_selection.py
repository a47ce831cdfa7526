"""Issue 26 item 3: private selection per part of a split synthesis — each part selects its own Φ (MST/AIM) on its own
records at its own share of ρ, every part's selection composed in the ledger as an unsplit selection's, the reviewed
Φ and the card per part, and the pre-flight refusing a part too small for its selection before any draw."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from sdgov.budget.accounting import part_plan, plan_agreement
from sdgov.governance import ledger
from sdgov.governance.site import Site
from sdgov.registry.log import Registry
from tests.fixtures.drafts import ATTRS, RHO, SHARES, captured_cli, split_draft
from tests.governance import controller_registry, sign_standing_approval, signed_proposal


def test_each_parts_selection_takes_its_share_and_the_parts_add_up_to_the_specs_budget():
    """The plan of a split draft + its selected pairs: each part's selection ρ is share × its part's ρ, each part's
    own plan (what its audits claim) holds its selection, and the parts' ρ add up to the spec's ρ — no more."""
    from sdgov.agreement.resolve import resolve
    from sdgov.agreement.spec import ReleaseSpec
    from sdgov.data.schema import load_schema
    from sdgov.demo import inputs

    schema = load_schema(inputs() / "schema.yaml")
    parts = [
        {"name": n, "codes": [c], "share": s, "phi": {"marginals": [[a] for a in ATTRS] + [["Age", "Health"]]}}
        for (n, s), c in zip(SHARES.items(), (1, 2))
    ]
    spec = ReleaseSpec.model_validate(
        {
            "name": "x",
            "dataset": {"name": "d", "path": "d.csv"},
            "schema": "s.yaml",
            "split": {"attribute": "Sex", "parts": parts},
            "privacy": {"rho": RHO, "selection": {"share": 0.5, "one_way": 0.4}},
            "seed": 1,
        }
    )
    plan = plan_agreement(resolve(spec, schema))
    total = sum(SHARES.values())
    assert plan.part_selection_rho == pytest.approx(
        {n: RHO * s / total * 0.5 * (1 - 0.4) for n, s in SHARES.items()}, rel=1e-12
    )
    assert plan.selection_rho == pytest.approx(math.fsum(plan.part_selection_rho.values()), rel=1e-12)
    own = {n: part_plan(plan, n) for n in SHARES}
    for n, p in own.items():
        assert p.selection_rho == plan.part_selection_rho[n]
        assert p.rho == pytest.approx(math.fsum(m.rho or 0 for m in p.marginals) + p.selection_rho, rel=1e-12)
        assert p.rho == pytest.approx(RHO * SHARES[n] / total, rel=1e-9)
    assert math.fsum(p.rho or 0 for p in own.values()) == pytest.approx(plan.rho, rel=1e-12)
    assert plan.rho == pytest.approx(RHO, rel=1e-9) and plan.rho <= RHO * (1 + 1e-9)
    from sdgov.synthesis.split import privacy_summary

    table = privacy_summary(plan)["parts"]  # the card's split table: each part's ρ holds its selection's
    assert {n: p["rho"] for n, p in table.items()} == pytest.approx({n: p.rho for n, p in own.items()}, rel=1e-12)


def test_each_part_selects_on_its_own_records_then_the_release_reuses_its_one_ways(tmp_path, monkeypatch):
    """propose --select (task code) on a split draft: each part's selection reads only that part's records and
    spends only its share; every part's selection is reserved in one spend after the parts' 1-ways; the release of
    the proposed spec reuses every part's 1-ways, draws each part's pairs, and the ledger then holds the spec's ρ."""
    import sdgov.measurement.selection.store as store
    from sdgov.tasks.measure import measure
    from sdgov.tasks.select_phi import propose_selection, write_proposed_spec
    from tests.conftest import agree

    seen: list[set[int]] = []
    counts = store.marginal_counts

    def spy(codes, schema, clique):  # what the selection's mechanisms read: which Sex codes are among its records
        seen.append(set(codes["Sex"].unique().tolist()))
        return counts(codes, schema, clique)

    monkeypatch.setattr(store, "marginal_counts", spy)
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = split_draft(tmp_path)
    proposals, summary = propose_selection(
        str(draft), Site.resolve(root), "sel1", "Ada Analyst", None, None, signed_proposal(root, draft, keys)
    )
    assert list(proposals) == ["men", "women"] and summary["how"] == "drawn"
    assert seen and all(len(s) == 1 for s in seen)  # every table a selection read held one part's records only
    assert {frozenset(s) for s in seen} == {frozenset({0}), frozenset({1})}  # Sex cells: men 0, women 1
    for part, p in proposals.items():
        assert p.attributes == ATTRS and p.selected[0].how == "forced" and len(p.selected) == len(ATTRS) - 1
        assert summary["parts"][part]["selection_rho"] == pytest.approx(
            RHO * SHARES[part] / sum(SHARES.values()) * 0.5 * (1 - 0.5), rel=1e-9
        )
    events = Registry(root).events()
    spends = [e for e in events if e.event == ledger.SPENT]
    assert len(spends) == 2  # the parts' 1-ways in one, the parts' selections in one — each checked before its draw

    again, summary2 = propose_selection(
        str(draft), Site.resolve(root), "sel2", "Ada Analyst", None, None, signed_proposal(root, draft, keys)
    )
    assert summary2["how"] == "reused" and {k: v.pairs for k, v in again.items()} == {
        k: v.pairs for k, v in proposals.items()
    }
    assert [e.event for e in Registry(root).events()].count(ledger.SPENT) == 2  # no second selection, no spend

    proposed = write_proposed_spec(draft, {k: v.pairs for k, v in proposals.items()}, draft.with_name("proposed.yaml"))
    raw = yaml.safe_load(proposed.read_text())
    raw["approvals"] = "approvals.yaml"
    proposed.write_text(yaml.safe_dump(raw, sort_keys=False))
    sign_standing_approval(proposed, root, keys)
    agreed = agree(proposed, Site.resolve(str(root)), "rel1")
    measured = measure.fn(agreed, Site.resolve(str(root)))
    budget = json.loads(Path(measured.statement.path).read_text())
    hows = {(s["part"], tuple(s["attributes"])): s["how"] for s in budget["statistics"]}
    assert {p for p, _ in hows} == {"men", "women"}
    assert all(h == "reused" for (_, c), h in hows.items() if len(c) == 1)
    assert all(h == "drawn" for (_, c), h in hows.items() if len(c) == 2)
    plan = json.loads((Path(agreed.run_dir) / "privacy_plan.json").read_text())
    assert plan["part_selection_rho"] == pytest.approx({k: v["selection_rho"] for k, v in summary["parts"].items()})
    acct = ledger.account(Site.resolve(root), agreed.data.name, agreed.data.fingerprint)
    assert acct.spent_rho == pytest.approx(plan["rho"], rel=1e-9)
    # the plan spends the spec's ρ, less what the controller's σ floor leaves unspent where it raises a σ: here the
    # women's Age × Health, which its cells weigh most (privacy.weights), from 9.9 to the floor of 10
    raised = [m for m in plan["marginals"] if m["sigma"] == plan["sigma_floor"]]
    assert plan["floor_binding"] and [(m["part"], m["clique"]) for m in raised] == [("women", ["Age", "Health"])]
    assert RHO * 0.99 < plan["rho"] < RHO


def test_a_part_too_small_for_its_selection_is_refused_in_one_line_before_any_draw(tmp_path, capsys):
    """A part whose share of ρ leaves its selection's noise above anything its records could show is refused by the
    pre-flight, in one line naming the part, with nothing spent or written; the same draft with fair shares passes."""
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = split_draft(tmp_path, shares={"men": 1e-6, "women": 1.0})
    code, _, err = captured_cli(capsys, "propose", "--select", "mst", "--spec", str(draft), "--as", "Ada Analyst",
                        "--key", str(keys["Ada Analyst"]), "--root", str(root))  # fmt: skip
    assert code == 2 and err.count("\n") == 1, err
    assert "privacy.selection (split part(s) 'men')" in err and "private selection" in err and "'women'" not in err
    assert ledger.SPENT not in [e.event for e in Registry(root).events()] and not (root / "measurements").exists()
    fair = split_draft(tmp_path / "fair")
    assert captured_cli(capsys, "validate", "--spec", str(fair))[0] == 0


def test_a_review_of_a_split_names_the_part_it_edits_and_the_reviewers_see_every_part(tmp_path):
    """The reviewers read every part's proposal under its part's name; a drop or force must name a part (one line
    otherwise) and edits that part's Φ only; the reviewed record checks each part's Φ against the spec."""
    from sdgov.base.errors import SpecError
    from sdgov.measurement.selection.review import (
        EdgeReview,
        load_selection_records,
        proposals_md,
        review_target,
        selection_records,
    )
    from tests.fixtures.review_record import reviewed_record

    proposal = reviewed_record().proposal
    proposals = {"men": proposal, "women": proposal}
    pairs = {k: p.pairs for k, p in proposals.items()}
    md = proposals_md(proposals, pairs, [], rho_budget=0.4)
    assert "of split part 'men'" in md and "of split part 'women'" in md
    review = EdgeReview(reviewer="Cora Compliance", drop=[proposal.pairs[0]], reason="spurious")
    with pytest.raises(SpecError, match="without naming the part"):
        review_target(review, list(pairs))
    assert review_target(review.model_copy(update={"part": "women"}), list(pairs)) == "women"
    with pytest.raises(SpecError, match="which the split has not"):
        review_target(review.model_copy(update={"part": "nobody"}), list(pairs))
    with pytest.raises(SpecError, match="one model's"):
        review_target(review.model_copy(update={"part": "men"}), [None])
    assert "part" not in review.model_dump(mode="json")  # an unsplit review hashes as before

    record = selection_records("d" * 64, proposals, pairs)
    path = tmp_path / "phi_review.json"
    path.write_text(record.model_dump_json())
    assert [r.part for r in load_selection_records(path)] == ["men", "women"]


def test_a_split_spec_whose_part_differs_from_its_reviewed_selection_is_refused_in_one_line(tmp_path, capsys):
    """The reviewed record a split spec names is checked part by part before any draw: a part's Φ edited by hand
    after the review (women's pair added) is one line naming that part, exit 2."""
    from sdgov.measurement.selection.review import selection_records
    from sdgov.tasks.select_phi import write_proposed_spec
    from tests.fixtures.review_record import reviewed_record

    draft = split_draft(tmp_path)
    proposal = reviewed_record().proposal
    record = tmp_path / "phi_review.json"
    reviewed = {"men": [["Age", "Health"]], "women": [["Age", "Health"]]}
    record.write_text(selection_records("d" * 64, {"men": proposal, "women": proposal}, reviewed).model_dump_json())
    edited = {"men": [["Age", "Health"]], "women": [["Age", "Health"], ["Region", "Education"]]}
    spec = write_proposed_spec(draft, edited, draft.with_name("proposed.yaml"), record)
    code, _, err = captured_cli(capsys, "validate", "--spec", str(spec))
    assert code == 2 and err.count("\n") == 1, err
    assert "selection_review (split part 'women')" in err and "Education × Region" in err and "'men'" not in err
    assert captured_cli(capsys, "validate", "--spec", str(write_proposed_spec(draft, reviewed, spec, record)))[0] == 0
