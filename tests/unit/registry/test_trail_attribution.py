"""The trail names each hash for what it is and each act for who did it, when (issue 25): the text trail, the HTML
trail and the PROV export agree (sdgov/registry/trail.py)."""

from __future__ import annotations

import uuid

import pytest

from sdgov.governance.decisions import Pause, record_timeout
from sdgov.governance.site import Site
from sdgov.governance.standing import load_approvals
from sdgov.registry.log import Registry
from sdgov.registry.trail import build_trail, render_text, to_prov
from tests.conftest import make_demo_inputs
from tests.governance import controller_registry, sign_standing_approval


@pytest.fixture(scope="module")
def trail(tmp_path_factory) -> dict:
    """A signed standing approval applied by a run (agree, measure under the ledger, release sign-off), then a
    pause on the agreement that timed out."""
    from sdgov.flows.release import standing_release_signoff
    from tests.conftest import agree
    from sdgov.tasks.measure import measure

    tmp = tmp_path_factory.mktemp("trail")
    root = tmp / "registry"
    keys = controller_registry(root, tmp / "keys")
    spec = make_demo_inputs(tmp / "in", rows=200, phi={"marginals": [["Age", "Sex"]]}, privacy={"rho": 0.03})
    sign_standing_approval(spec, root, keys)
    agreed = agree(spec, Site.resolve(str(root)))
    measure.fn(agreed, Site.resolve(str(root)))
    reg = Registry(root)
    standing_release_signoff(reg, load_approvals(agreed.approvals.verified()), agreed, "cd" * 32)
    pause = Pause(
        reg, reg.registry_id(), "flow", "run", agreed.agreement_sha256, "agreement", agreed.agreement_sha256, 1, "n"
    )
    record_timeout(pause, "no decision")
    return {"trail": build_trail(reg), "agreed": agreed}


def _row(t: dict, event: str) -> dict:
    return next(r for r in t["events"] if r["event"] == event)


def test_the_agreement_hash_is_labelled_as_such_and_the_file_hash_as_the_files(trail) -> None:
    text, sha = render_text(trail["trail"]), trail["agreed"].agreement_sha256
    assert f"agreement hash: {sha}" in text  # the timeout names the agreement hash (not agreement.json's bytes)
    assert f"agreement.json (file sha256): {trail['agreed'].agreement.sha256}" in text
    assert f"agreement.json (file sha256): {sha}" not in text and "agreement.json (file):" not in text


def test_a_budget_spend_is_no_decision(trail) -> None:
    spent = _row(trail["trail"], "budget_spent")
    assert spent["decision"] == ""
    assert to_prov(trail["trail"])["activity"][f"event:{spent['seq']}"]["sdgov:decision"] == ""


def test_a_standing_approval_is_signed_at_its_time_and_applied_by_sdgov(trail) -> None:
    t = trail["trail"]
    approved = _row(t, "release_approved")
    signed_at = approved["artifacts"]["standing_approval_signed"]
    assert signed_at <= approved["time"]
    lines = render_text(t).splitlines()
    line = next(x for x in lines if f"#{approved['seq']} " in x)
    assert "sdgov (system) applied the standing approval of the release candidate signed by Carl Controller " in line
    assert f"at {signed_at}" in line
    prov = to_prov(t)
    act = f"event:{approved['seq']}"
    assoc = {r["prov:agent"] for r in prov["wasAssociatedWith"].values() if r["prov:activity"] == act}
    assert assoc == {"agent:sdgov"}
    signing = prov["activity"][f"{act}_signed"]
    assert signing["prov:startTime"] == signed_at
    assert any(
        r["prov:activity"] == f"{act}_signed" and r["prov:agent"] == "agent:Carl_Controller"
        for r in prov["wasAssociatedWith"].values()
    )


def test_prov_and_the_text_trail_agree_that_sdgov_published() -> None:
    row = {
        "seq": 7, "time": "2026-11-25T23:00:00Z", "who": "Carl Controller", "role": "controller", "event": "released",
        "what": "published the release", "dataset": "d", "agreement_sha256": "ab" * 32, "release_id": "r1",
        "run_id": "x", "decision": "", "comment": "", "artifacts": {}, "hash": "h", "prev": "p",
    }  # fmt: skip
    t = {"events": [row], "verified": True}
    text = render_text({**t, "root": "/r", "problems": [], "dataset": None, "total_events": 1})
    assert "  sdgov (system) published the release, approved by Carl Controller (controller)" in text
    prov = to_prov(t)
    assert [r["prov:agent"] for r in prov["wasAssociatedWith"].values()] == ["agent:sdgov"]
    assert prov["agent"]["agent:sdgov"]["prov:type"]["$"] == "prov:SoftwareAgent"
    [deleg] = prov["actedOnBehalfOf"].values()
    assert (deleg["prov:delegate"], deleg["prov:responsible"]) == ("agent:sdgov", "agent:Carl_Controller")


def test_the_run_log_says_rejected() -> None:
    from sdgov.governance.decisions import decided_message
    from sdgov.governance.signoff import SignOff

    s = SignOff(name="Carl Controller", role="controller", subject="release", decision="reject")
    assert decided_message(s, "release", "ab" * 32) == f"Carl Controller rejected the release {'ab' * 6}…"
    approve = s.model_copy(update={"decision": "approve"})
    assert decided_message(approve, "release", "ab" * 32).startswith("Carl Controller approved the release")


def test_every_event_has_words_and_a_refusal_by_sdgov_approve_names_the_agreement_hash(trail):
    """Issue 39: ``approvers_changed`` had no label; ``sdgov approve``'s refusal of an agreement decision logged the
    agreement hash, which the trail called a file sha256; and ``sdgov runs`` lists the runs the log saw end."""
    from sdgov.registry.trail import WHAT, artifact_label, finished_runs

    t = trail["trail"]
    assert {r["event"] for r in t["events"]} <= set(WHAT)  # approvers_changed among them: every event in words
    assert "approvers registry" in WHAT["approvers_changed"]
    sha = trail["agreed"].agreement_sha256
    cli_refusal = {"event": "approval_refused", "agreement_sha256": "", "artifacts": {"agreement": sha}}
    assert artifact_label(cli_refusal, "agreement", sha) == "agreement hash"
    signed = next(r for r in t["events"] if r["event"] == "agreement_signed")
    assert artifact_label(signed, "agreement", signed["artifacts"]["agreement"]) == "agreement.json (file sha256)"
    [ended] = finished_runs(Registry(t["root"]).verified_events())
    assert (ended["run_id"], ended["outcome"]) == ("run", "timed out awaiting a decision") and not ended["who"]
