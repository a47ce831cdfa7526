"""Stakeholders review a private selection of Φ on a real Prefect server, then the reviewed Φ is agreed and released.

propose (select, spend the selection share) → pause → Cora drops a pair, Ada forces another and closes the review
(each signed with their key; an unsigned resume is refused and logged) → Carl agrees Φ → measure (the selection's
1-ways reused) → release. The card and the trail show both changes with who and why, and the selection's budget.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from sdgov.agreement.load import load_spec
from sdgov.agreement.weights import cells_weight
from sdgov.governance import ledger
from sdgov.governance.site import Site
from sdgov.registry.log import Registry
from tests.conftest import make_demo_inputs
from tests.fixtures.cli import cli
from tests.fixtures.governed import FlowThread as _FlowThread
from tests.fixtures.governed import raw_resume, wait_paused
from tests.governance import controller_registry, signed_proposal

ATTRS = ["Region", "Sex", "Age", "Education", "Health"]


class FlowThread(_FlowThread):
    def run(self) -> None:
        from sdgov.flows.phi_review import phi_review_flow

        try:
            self.result = self.ctx.run(phi_review_flow, **self.kw)
        except BaseException as exc:
            self.error = exc


def selection_draft(tmp: Path) -> Path:
    spec = make_demo_inputs(tmp / "in", rows=1500)
    raw = yaml.safe_load(spec.read_text())
    raw.pop("approvals", None)
    raw["phi"] = {"all_kway": [{"k": 1, "attributes": ATTRS}]}
    # the tree alone (the default now adds pairs and triples): a selected pair to drop, a near one to force
    sel = {"share": 0.5, "force": [["Age", "Health"]], "triples": False, "extra": 0}
    raw["privacy"] = {"epsilon": 1.0, "selection": sel}
    raw["generator"] = {"name": "pgm", "iterations": 50}
    draft = tmp / "in" / "draft.yaml"
    draft.write_text(yaml.safe_dump(raw, sort_keys=False))
    return draft


def _artifact(run_id: str, key: str) -> str:
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as c:
        found = c.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    mine = [a for a in found if str(a.flow_run_id) == run_id]
    return max(mine, key=lambda a: a.created).data


def test_review_drop_and_force_then_agree_and_release(tmp_path, prefect_server):
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = selection_draft(tmp_path)
    t = FlowThread(
        draft_path=str(draft),
        registry_root=str(root),
        proposer="Ada Analyst",
        timeout_s=300,
        poll_interval=1,
        proposal=signed_proposal(root, draft, keys),
    )
    t.start()
    run = wait_paused(root, "phi_review", thread=t)
    rid = run["run_id"]
    proposal = json.loads(next((root / "runs").glob("select-*/phi_proposal.json")).read_text())["proposal"]
    drop = next(e["pair"] for e in proposal["selected"] if e["how"] == "selected")
    force = proposal["near_threshold"][0]["pair"]
    assert f"ρ = {proposal['budget']['rho']:.6g}" in _artifact(rid, "phi-proposal")  # the proposal, on the run

    # a resume is no review: unsigned, it is refused, logged, and the run pauses again
    assert raw_resume(rid, reviewer="Cora Compliance", reason="x", drop=",".join(drop)) == "ACCEPT"
    again = wait_paused(root, "phi_review", attempt=2, thread=t)
    assert "is not signed" in again["note"]
    # signed with someone else's key: refused before anything is sent
    cora = ("--as", "Cora Compliance", "--key", str(keys["Cora Compliance"]))
    code, _, err = cli("review", rid, "--as", "Cora Compliance", "--key", str(keys["Ada Analyst"]), "--why", "x",
                       "--drop", ",".join(drop))  # fmt: skip
    assert code == 2 and "does not verify" in err and len(err.strip().splitlines()) == 1, err
    code, _, err = cli("review", rid, *cora, "--why", "x", "--drop", ",".join(force))  # not in Φ: nothing sent
    assert code == 2 and "it is not in the proposed Φ" in err, err

    cora_why = "the association is an artefact of the 2021 coding change"
    code, out, err = cli("review", rid, *cora, "--drop", ",".join(drop), "--why", cora_why, "--wait", "60")
    assert code == 0 and "now paused for the phi_review" in out, (out, err)
    wait_paused(root, "phi_review", attempt=3, thread=t)
    ada_why = "known from the 2011 census: these move together"
    ada = ("--as", "Ada Analyst", "--key", str(keys["Ada Analyst"]))
    code, out, err = cli("review", rid, *ada, "--force", ",".join(force), "--why", ada_why, "--close", "--wait", "60")
    assert code == 0 and "now paused for the agreement" in out, (out, err)
    artifact = _artifact(rid, "phi-proposal")
    assert cora_why in artifact and ada_why in artifact and "| drop |" in artifact and "| force |" in artifact

    agreement = wait_paused(root, "agreement", thread=t)
    assert " × ".join(force) in agreement["summary"]["phi"] and " × ".join(drop) not in agreement["summary"]["phi"]
    carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
    code, _, err = cli("approve", rid, *carl, "--yes", "--hash", agreement["sha256"][:8])
    assert code == 0, err
    rel = wait_paused(root, "release", thread=t)
    code, _, err = cli("approve", rid, *carl, "--yes", "--hash", rel["sha256"][:8])
    assert code == 0, err
    t.join(240)
    assert not t.is_alive() and t.error is None, t.error
    assert t.result.status == "released", t.result

    # the card: the selection graph with both changes (who, why) and the selection's budget
    card = json.loads(Path(t.result.release.card_json).read_text())
    sel = card["selection"]
    status = {frozenset(e["pair"]): e["status"] for e in sel["edges"]}
    assert status[frozenset(drop)] == "dropped by a reviewer" and status[frozenset(force)] == "forced by a reviewer"
    assert status[frozenset(("Age", "Health"))] == "forced in the draft"
    assert [(c["action"], c["reviewer"], c["reason"]) for c in sel["changes"]] == [
        ("drop", "Cora Compliance", cora_why),
        ("force", "Ada Analyst", ada_why),
    ]
    assert all(r["identity_verified"] for r in sel["reviewers"])
    assert sel["rho"] == card["privacy"]["selection_rho"] and sel["share"] == sel["rho"] / card["privacy"]["rho"]
    md = Path(t.result.release.card_md).read_text()
    html = Path(t.result.release.card_html).read_text()
    for text in (md, html):
        assert "How Φ was selected" in text and cora_why in text and ada_why in text
        assert f"{sel['rho']:.6g}" in text and f"{100 * sel['share']:.1f}% of this release's ρ" in text
    assert html.count("<svg") >= 3  # the TVD plot, the synthesis graph and the selection graph

    # the trail: each review with who, what and why; the refused resume too
    events = Registry(root).events()
    reviews = [(e.actor, e.decision, e.comment) for e in events if e.event == "phi_reviewed"]
    assert reviews == [
        ("Cora Compliance", "review", f"drop {' × '.join(drop)} — why: {cora_why}"),
        ("Ada Analyst", "close", f"force {' × '.join(force)} — why: {ada_why}"),
    ]
    assert [e.actor for e in events if e.event == "phi_review_refused"] == ["Cora Compliance"]
    code, out, _ = cli("trail", "--root", str(root))
    assert code == 0 and cora_why in out and ada_why in out

    # no double spend: the release reused the selection's 1-ways; the ledger holds each statistic once
    hows = {tuple(s["attributes"]): s["how"] for s in card["statement"]["statistics"]}
    assert {h for c, h in hows.items() if len(c) == 1} == {"reused"} and len(hows) == len(ATTRS) + 4
    assert {h for c, h in hows.items() if len(c) == 2} == {"drawn"}
    # the ledger's account is keyed by the unkeyed fingerprint, kept controller-side (the card has its commitment)
    fp = next(json.loads(e.comment)["fingerprint"] for e in events if e.event == "budget_spent")
    acct = ledger.account(Site.resolve(root), card["dataset"]["name"], fp)
    assert abs(acct.spent_rho - card["privacy"]["rho"]) <= 1e-9 * card["privacy"]["rho"]
    assert [e.event for e in events].count("budget_spent") == 3  # 1-ways, selection, the agreed pairs

    # the card's σ of each reviewed pair, the reviewer's forced one included, follows its weight, its cells^(1/3): the
    # selected marginals split what the selection leaves by weight (sdgov/agreement/weights.py)
    sizes = load_spec(draft).schema_.domain(ATTRS)
    pairs = [m for m in card["privacy"]["marginals"] if len(m["clique"]) == 2]
    assert frozenset(force) in {frozenset(m["clique"]) for m in pairs}
    for m in pairs:
        assert m["weight"] == cells_weight(sizes[m["clique"][0]] * sizes[m["clique"][1]], 1 / 3)
    scaled = [m["sigma"] * m["weight"] ** 0.5 for m in pairs]  # σ ∝ 1/√weight
    assert max(scaled) - min(scaled) <= 1e-9 * max(scaled) and len({m["sigma"] for m in pairs}) > 1


def test_a_split_drafts_parts_are_selected_reviewed_by_part_and_released(tmp_path, prefect_server):
    """Issue 26 item 3: a split draft through the same flow — each part selects its Φ on its own records at its share
    of ρ; the reviewers see both parts by name; a drop that names no part is refused before anything is sent; a
    review edits the part it names; the card shows each part's selection, its changes and its ρ."""
    from tests.fixtures.drafts import split_draft

    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = split_draft(tmp_path, shares={"men": 1.0, "women": 1.0}, rows=1500)
    t = FlowThread(
        draft_path=str(draft),
        registry_root=str(root),
        proposer="Ada Analyst",
        timeout_s=300,
        poll_interval=1,
        proposal=signed_proposal(root, draft, keys),
    )
    t.start()
    run = wait_paused(root, "phi_review", thread=t)
    rid = run["run_id"]
    parts = json.loads(next((root / "runs").glob("select-*/phi_proposal.json")).read_text())["parts"]
    assert list(parts) == ["men", "women"] and set(run["summary"]["parts"]) == {"men", "women"}
    shown = _artifact(rid, "phi-proposal")
    assert "of split part 'men'" in shown and "of split part 'women'" in shown
    drop = next(e["pair"] for e in parts["women"]["proposal"]["selected"] if e["how"] == "selected")

    cora = ("--as", "Cora Compliance", "--key", str(keys["Cora Compliance"]))
    code, _, err = cli("review", rid, *cora, "--why", "x", "--drop", ",".join(drop))
    assert code == 2 and "--part" in err and len(err.strip().splitlines()) == 1, err
    why = "an artefact of how the part of the women was coded"
    code, out, err = cli("review", rid, *cora, "--part", "women", "--drop", ",".join(drop), "--why", why, "--close",
                         "--wait", "60")  # fmt: skip
    assert code == 0 and "now paused for the agreement" in out, (out, err)
    carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
    agreement = wait_paused(root, "agreement", thread=t)
    assert cli("approve", rid, *carl, "--yes", "--hash", agreement["sha256"][:8])[0] == 0
    rel = wait_paused(root, "release", thread=t)
    assert cli("approve", rid, *carl, "--yes", "--hash", rel["sha256"][:8])[0] == 0
    t.join(240)
    assert not t.is_alive() and t.error is None, t.error
    assert t.result.status == "released", t.result

    card = json.loads(Path(t.result.release.card_json).read_text())
    assert "selection" not in card or card["selection"] is None
    sels = {s["part"]: s for s in card["part_selections"]}
    assert list(sels) == ["men", "women"]
    status = {frozenset(e["pair"]): e["status"] for e in sels["women"]["edges"]}
    assert status[frozenset(drop)] == "dropped by a reviewer"
    assert [(c["action"], c["part"], c["reason"]) for c in sels["women"]["changes"]] == [("drop", "women", why)]
    assert sels["men"]["changes"] == [] and "dropped by a reviewer" not in {e["status"] for e in sels["men"]["edges"]}
    for name, sel in sels.items():
        assert sel["rho"] == parts[name]["selection_rho"]
    assert abs(card["privacy"]["selection_rho"] - sum(s["rho"] for s in sels.values())) <= 1e-12
    table = {p["name"]: p for p in card["split"]["parts"]}  # each part's ρ holds its selection's; they add up
    assert all(abs(table[n]["selection_rho"] - sels[n]["rho"]) <= 1e-12 for n in sels)
    assert abs(sum(p["rho"] for p in table.values()) - card["privacy"]["rho"]) <= 1e-9 * card["privacy"]["rho"]
    html = Path(t.result.release.card_html).read_text()
    assert html.count("How Φ was selected: split part") == 2 and why in html
    # each part's 1-ways reused, its pairs drawn; the ledger holds the spec's ρ once
    hows = {(s["part"], tuple(s["attributes"])): s["how"] for s in card["statement"]["statistics"]}
    assert {h for (_, c), h in hows.items() if len(c) == 1} == {"reused"}
    assert [e.event for e in Registry(root).events()].count("budget_spent") == 3  # 1-ways, selections, pairs
