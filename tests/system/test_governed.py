"""Governed releases against the real (session) Prefect server: pauses, refusals, separation of duties, sign-off.

The flow runs in a thread of the test process (with the test's Prefect settings context) and pauses; the test
plays the approvers through ``sdgov approve`` / ``sdgov runs`` and through the raw resume API (what the UI form
posts).
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path
from uuid import UUID

import pytest
import yaml

import sdgov.flows.governed
import sdgov.flows.schedule  # noqa: F401
from sdgov.commands import main
from sdgov.identity.keys import keygen
from sdgov.registry.log import Registry
from sdgov.reporting.approver_summaries import hash_lines
from tests.fixtures.cli import cli
from tests.fixtures.governed import CONTROLLER_EVENTS, FlowThread, decisions, raw_resume, setup_registry, wait_paused
from tests.governance import signed_proposal, write_approvers


def proposed(spec: Path, root: Path, keys: dict[str, Path], **kw) -> FlowThread:
    """The governed flow on Ada's signed proposal of ``spec`` to ``root``, in a thread (300 s, polled every second)."""
    return FlowThread(
        **{
            "spec_path": str(spec),
            "registry_root": str(root),
            "proposer": "Ada Analyst",
            "timeout_s": 300,
            "poll_interval": 1,
            "proposal": signed_proposal(root, spec, keys),
            **kw,
        }
    )


def pause_state(run_id: str):
    from prefect import get_client

    with get_client(sync_client=True) as c:
        return c.read_flow_run(UUID(run_id)).state


def test_pause_refuse_approve_release(tmp_path, prefect_server):
    spec, root, keys = setup_registry(tmp_path)
    t = proposed(spec, root, keys)
    t.start()
    run = wait_paused(root, "agreement", thread=t)
    rid = run["run_id"]
    assert run["eligible"] == ["Carl Controller"] and run["proposer"] == "Ada Analyst"
    key = pause_state(rid).state_details.pause_key

    # not in the registry / the proposer (or a look-alike) / wrong role: one-line refusals, never resumed
    for who, signer, why in [
        ("Mallory", "Ada Analyst", "'Mallory' is not in the approvers registry"),
        ("ada  analyst", "Ada Analyst", "proposed this agreement and cannot approve or reject it"),
        ("\u0410da Analyst", "Ada Analyst", "separation of duties"),
        ("Cora Compliance", "Cora Compliance", "deciding on the agreement needs role 'controller'"),
        ("Carl Controller", "Cora Compliance", "does not verify with 'Carl Controller''s registered key"),
    ]:
        code, _, err = cli("approve", rid, "--as", who, "--key", str(keys[signer]))
        assert code == 2 and why in err and len(err.strip().splitlines()) == 1, (who, err)
        st = pause_state(rid)
        assert st.is_paused() and st.state_details.pause_key == key

    # Carl's statement for THIS pause, printed by `sdgov sign` (what he would paste into the form)
    code, first_token, err = cli("sign", rid, "--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
    assert code == 0 and first_token.startswith("sdgov1."), err

    # the form cannot be sent without a decision or a signature (required fields): the server refuses it
    assert raw_resume(rid, approver="Carl Controller") == "REJECT"
    assert raw_resume(rid, approver="Carl Controller", decision="approve") == "REJECT"
    assert pause_state(rid).is_paused()
    # the attack: a raw resume naming the controller, unsigned (a blank) → refused, logged, paused again
    assert raw_resume(rid, approver="Carl Controller", decision="approve", signature=" ") == "ACCEPT"
    again = wait_paused(root, "agreement", attempt=2, thread=t)
    assert "is not signed" in again["note"] and "paused again" in again["note"]
    # Carl's statement from the first pause, replayed: its nonce is spent → refused, paused again
    assert raw_resume(rid, approver="Carl Controller", decision="approve", signature=first_token.strip()) == "ACCEPT"
    again = wait_paused(root, "agreement", attempt=3, thread=t)
    assert "nonce differ" in again["note"] and "replayed or stale" in again["note"]
    # a forged statement (right fields, signed by Ada's key) → refused
    code, forged, _ = cli("sign", rid, "--as", "Carl Controller", "--key", str(keys["Ada Analyst"]))
    assert code == 2 and forged == ""  # sdgov sign refuses too: nothing to paste

    # the UI path, done right: paste the statement from `sdgov sign` into the form
    code, fresh, err = cli("sign", rid, "--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
    assert code == 0, err
    assert raw_resume(rid, approver="Carl Controller", decision="approve", comment="Φ is fine", signature=fresh) == (
        "ACCEPT"
    )

    rel = wait_paused(root, "release", thread=t)
    from prefect import get_client

    with get_client(sync_client=True) as c:
        desc = json.loads(
            c.read_flow_run_input(UUID(rid), f"paused-{pause_state(rid).state_details.pause_key}-description")
        )
    for needle in (
        "**Audit rows (computed without the confidential data):**",
        "**Overall verdict:** **PASS**",
        "**Privacy:**",
        hash_lines(rel["sha256"]),  # the full hash, in groups that wrap
        "draft-card",
        "evidence report",  # where it is, in the registry; not its figures
        "ε ≤ ",  # the PLD bound beside the zCDP one, as the card headlines them
        "The dataset over every release so far",
    ):
        assert needle in desc, needle
    # every holder of the Prefect login reads this text: nothing computed on the confidential data without noise
    for secret in ("TVD", "real vs synthetic", "fingerprint", "Fitness statement"):
        assert secret not in desc, secret
    from sdgov.budget.statement import PrivacyStatement, headline, key_facts

    draft = json.loads(Path(rel["summary"]["draft_card"]).with_name("card.json").read_text())
    statement = PrivacyStatement.model_validate(draft["statement"])  # every ε and δ the form states: the card's
    assert key_facts(statement) in desc and rel["summary"]["privacy"] == key_facts(statement)
    headline = headline(statement)
    assert headline in desc and headline in Path(rel["summary"]["draft_card_md"]).read_text()
    assert rel["summary"]["privacy_headline"] == headline
    assert rel["summary"]["verdict"] == "pass" and Path(rel["summary"]["draft_card"]).is_file()
    code, out, _ = cli("runs")  # the full hash, the verdict and the draft card, not a shortened hash
    assert code == 0 and f"release hash: {rel['sha256']}" in out and "overall verdict: pass" in out, out
    assert rel["summary"]["draft_card"] in out
    code, _, err = cli("approve", rid, "--as", "Cora Compliance", "--key", str(keys["Cora Compliance"]))
    assert code == 2 and "needs role 'controller'" in err
    carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
    # sdgov approve asks for the first 8 characters of the candidate hash: none (no terminal), or wrong → not sent
    code, _, err = cli("approve", rid, *carl)
    assert code == 2 and "needs the first 8 characters" in err and rel["sha256"] in err, err
    code, _, err = cli("approve", rid, *carl, "--yes", "--hash", "00000000")
    assert code == 2 and "is not the first 8 characters" in err and rel["sha256"] in err, err  # summary shown
    assert pause_state(rid).is_paused() and wait_paused(root, "release", thread=t)["attempt"] == 1
    # the form's field, typed wrong (a signed statement, all else right): refused, logged, paused again
    code, token, err = cli("sign", rid, *carl)
    assert code == 0, err
    assert (
        raw_resume(
            rid, approver="Carl Controller", decision="approve", signature=token.strip(), confirm_hash="deadbeef"
        )
        == "ACCEPT"
    )
    again = wait_paused(root, "release", attempt=2, thread=t)
    assert "is not the first 8 characters of the candidate hash" in again["note"], again
    code, out, err = cli(
        "approve", rid, *carl, "--comment", "ship it", "--yes", "--hash", rel["sha256"][:8].upper(), "--json"
    )
    assert code == 0, err
    assert json.loads(out)["decision"] == "approve" and json.loads(out)["signed"]
    assert rel["sha256"] in err and "draft card" in err  # the summary sdgov approve printed

    t.join(240)
    assert not t.is_alive() and t.error is None, t.error
    out = t.result
    assert out.status == "released", out
    card = json.loads(Path(out.release.card_json).read_text())
    signs = [(s["name"], s["subject"], s["decision"]) for s in card["signoffs"]]
    assert signs == [
        ("Ada Analyst", "agreement", "approve"),
        ("Carl Controller", "agreement", "approve"),
        ("Carl Controller", "release", "approve"),
    ]
    assert card["signoffs"][2]["subject_sha256"] == rel["sha256"] and card["signoffs"][2]["comment"] == "ship it"
    assert all(s["identity_verified"] for s in card["signoffs"][1:])
    assert "identity verified: Ed25519 signature" in card["signoffs"][1]["via"]
    html = Path(out.release.card_html).read_text()
    assert "Carl Controller" in html and "ship it" in html and rel["sha256"] in html
    assert "ship it" in Path(out.release.card_md).read_text()
    assert decisions(root) == [
        ("agreement_proposed", "Ada Analyst"),
        ("approval_refused", "Mallory"),  # the five refused by sdgov approve, the run never resumed
        ("approval_refused", "ada  analyst"),
        ("approval_refused", "\u0410da Analyst"),
        ("approval_refused", "Cora Compliance"),
        ("approval_refused", "Carl Controller"),
        ("approval_refused", "Carl Controller"),  # the raw resumes, refused by the flow
        ("approval_refused", "Carl Controller"),
        ("approval_refused", "Carl Controller"),  # sdgov sign with Ada's key
        ("agreement_approved", "Carl Controller"),
        ("budget_spent", "sdgov"),
        ("measured", "sdgov"),
        ("approval_refused", "Cora Compliance"),  # sdgov approve: wrong role
        ("approval_refused", "Carl Controller"),  # the form's hash typed wrong
        ("release_approved", "Carl Controller"),
        ("released", "Carl Controller"),
    ], decisions(root)
    events = Registry(root).events()
    everything_refused = [e for e in events if e.event == "approval_refused"]
    refused = [e for e in everything_refused if "refused_by" not in e.artifacts]  # by the flow, after a resume
    assert "is not signed" in refused[0].comment and "replayed or stale" in refused[1].comment
    by_cli = [e for e in everything_refused if "refused_by" in e.artifacts]
    assert len(by_cli) == 7 and all("refused by sdgov before the run was resumed" in e.comment for e in by_cli)
    assert "proposed this agreement" in by_cli[1].comment and "registered key" in by_cli[4].comment
    approved = [e for e in events if e.event.endswith("_approved")]
    nonces = [e.artifacts["nonce"] for e in refused + approved]
    assert len(set(nonces)) == len(nonces) == 5  # a fresh nonce for every pause
    assert all(e.artifacts["identity_verified"] == "true" and e.artifacts["statement"] for e in approved)
    # the trail names who made a refused attempt when their signature held (not "unverified"), and no one else
    roles = [(e.actor, e.role, e.artifacts["identity_verified"]) for e in everything_refused]
    assert roles[0] == ("Mallory", "unverified", "false") and roles[3] == ("Cora Compliance", "compliance", "true")
    assert roles[4] == ("Carl Controller", "unverified", "false")  # signed with Cora's key
    assert roles[5] == ("Carl Controller", "unverified", "false")  # the blank signature
    assert roles[-1] == ("Carl Controller", "controller", "true")  # signed, the confirmation typed wrong
    trail = cli("trail", "--root", str(root))[1]
    assert trail.count("agreement.json (file sha256)") == 1, trail  # the proposal's file; refusals name the hash
    assert f"agreement hash: {run['sha256']}" in trail
    code, out, _ = cli("runs", "--root", str(root))  # the run, finished, and how
    assert code == 0 and f"released {card['release_id']} by Carl Controller" in out, out
    code, out, _ = cli("registry", "list", "--root", str(root))  # each release names its dataset
    assert code == 0 and f"dataset {card['dataset']['name']}" in out, out
    assert Registry(root).verify() == []
    assert pause_state(rid).is_completed()


def test_a_statement_signed_for_run_a_is_refused_in_run_b(tmp_path, prefect_server):
    spec, root, keys = setup_registry(tmp_path, rows=800)
    carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
    a = proposed(spec, root, keys)
    a.start()
    run_a = wait_paused(root, "agreement", thread=a)["run_id"]
    b = proposed(spec, root, keys)
    b.start()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        _, out, _ = cli("runs", "--json")
        others = [r for r in json.loads(out)["paused"] if r["registry"] == str(root) and r["run_id"] != run_a]
        if others:
            break
        time.sleep(0.5)
    run_b = others[0]["run_id"]
    code, token_a, err = cli("sign", run_a, *carl)
    assert code == 0, err
    assert raw_resume(run_b, approver="Carl Controller", decision="approve", signature=token_a.strip()) == "ACCEPT"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(e.event == "approval_refused" for e in Registry(root).events()):
        time.sleep(0.5)
    [refused] = [e for e in Registry(root).events() if e.event == "approval_refused"]
    assert "run_id" in refused.comment and "replayed or stale" in refused.comment
    assert refused.artifacts["flow_run_id"] == run_b
    deadline = time.monotonic() + 120  # the refusal is logged, then run B pauses again (a moment later under load)
    while time.monotonic() < deadline and not pause_state(run_b).is_paused():
        time.sleep(0.5)
    assert pause_state(run_b).is_paused() and pause_state(run_a).is_paused()
    # a writer with API access copies run B's challenge into run A's pending input, hoping Carl signs "run A"
    # and hands over a statement good for run B: sdgov sign/approve sign the registry's record of run A's pause
    from prefect import get_client

    from sdgov.flows.governed import PENDING_PREFIX

    with get_client(sync_client=True) as c:
        key_a = PENDING_PREFIX + pause_state(run_a).state_details.pause_key
        key_b = PENDING_PREFIX + pause_state(run_b).state_details.pause_key
        a_input, b_input = c.read_flow_run_input(UUID(run_a), key_a), c.read_flow_run_input(UUID(run_b), key_b)
        c.delete_flow_run_input(UUID(run_a), key_a)
        c.create_flow_run_input(UUID(run_a), key_a, b_input)
    code, out, err = cli("sign", run_a, *carl, "--root", str(root))
    assert code == 0 and "input on the Prefect server was rewritten" in err, err
    from sdgov.identity.statements import SignOffStatement, decode_statement

    stmt, _ = decode_statement(out.strip(), SignOffStatement)
    assert stmt.run_id == run_a and stmt.run_id != run_b  # signed for run A, as the registry recorded its pause
    with get_client(sync_client=True) as c:  # put run A's own challenge back (its in-memory nonce is unchanged)
        c.delete_flow_run_input(UUID(run_a), key_a)
        c.create_flow_run_input(UUID(run_a), key_a, a_input)
    for run, thread in ((run_a, a), (run_b, b)):  # both end, rejected by Carl, with nothing released
        code, _, err = cli("approve", run, *carl, "--reject", "--wait", "60")
        assert code == 0, err
        thread.join(120)
        assert thread.result.status == "rejected"
    assert not (root / "releases").exists()


def test_the_sandbox_switch_allows_unsigned_ui_decisions_and_the_card_says_identity_was_not_verified(
    tmp_path, prefect_server
):
    from sdgov.governance.controller import commit

    spec, root, keys = setup_registry(tmp_path, rows=800)
    (root / "controller.yaml").write_text("allow_unsigned_ui_approvals: true\n")
    # the switch is the controller's: written but not signed, it stops the release before anything runs
    code, _, err = cli("propose", "--spec", str(spec), "--as", "Ada Analyst", "--root", str(root))
    assert code == 2 and "controller.yaml" in err and "changed without a signed commit" in err
    commit(Registry(root), "Carl Controller", keys["Carl Controller"])
    t = FlowThread(
        spec_path=str(spec),
        registry_root=str(root),
        proposer="Ada Analyst",
        timeout_s=300,
        poll_interval=1,
        # unsigned: the sandbox accepts the proposal too, as identity not verified
    )
    t.start()
    rid = wait_paused(root, "agreement", thread=t)["run_id"]
    assert raw_resume(rid, approver="Carl Controller", decision="approve") == "ACCEPT"
    prefix = wait_paused(root, "release", thread=t)["sha256"][:8]
    # a signature that is present must still verify, sandbox or not
    assert (
        raw_resume(rid, approver="Carl Controller", decision="approve", signature="sdgov1.e30.AA", confirm_hash=prefix)
        == "ACCEPT"
    )
    wait_paused(root, "release", attempt=2, thread=t)
    assert raw_resume(rid, approver="Carl Controller", decision="approve", confirm_hash=prefix) == "ACCEPT"
    t.join(240)
    assert t.result.status == "released", t.result
    card = json.loads(Path(t.result.release.card_json).read_text())
    carl = [s for s in card["signoffs"] if s["name"] == "Carl Controller"]
    assert [s["identity_verified"] for s in carl] == [False, False]
    [ada] = [s for s in card["signoffs"] if s["name"] == "Ada Analyst"]
    assert ada["identity_verified"] is False and "identity NOT verified" in ada["via"]
    assert "identity NOT verified" in Path(t.result.release.card_html).read_text()
    assert "identity NOT verified" in Path(t.result.release.card_md).read_text()
    approved = [e for e in Registry(root).events() if e.event.endswith("_approved")]
    assert [e.artifacts["identity_verified"] for e in approved] == ["false", "false"]


def test_the_proposer_cannot_choose_the_approvers_registry(tmp_path, prefect_server):
    import inspect

    from sdgov.flows.governed import governed_release_flow

    spec, root, keys = setup_registry(tmp_path, rows=800)
    mine = tmp_path / "my-approvers.yaml"  # Ada's own registry naming a made-up controller whose key she holds
    write_approvers(tmp_path / "elsewhere", tmp_path / "ada-keys", [("Ada Analyst", "analyst"), ("Max", "controller")])
    mine.write_text((tmp_path / "elsewhere" / "approvers.yaml").read_text())
    # no command line or flow parameter names an approvers registry any more
    propose = ("propose", "--spec", str(spec), "--as", "Ada Analyst", "--root", str(root))
    err_stream = io.StringIO()
    with contextlib.redirect_stderr(err_stream), pytest.raises(SystemExit) as exit_:
        main([*propose, "--approvers", str(mine)])
    assert exit_.value.code == 2 and "unrecognized arguments: --approvers" in err_stream.getvalue()
    assert not any("approvers" in p for p in inspect.signature(governed_release_flow.fn).parameters)
    # writing it over the controller's file does not help: unsigned, it stops every release (one line)
    (root / "approvers.yaml").write_text(mine.read_text())
    code, _, err = cli(*propose)
    assert code == 2 and "approvers.yaml" in err and "changed without a signed commit" in err, err
    assert len(err.strip().splitlines()) == 1
    max_key = str(tmp_path / "ada-keys" / "max.pem")
    code, _, err = cli("approvers", "commit", "--as", "Max", "--key", max_key, "--root", str(root))
    assert code == 2 and "'Max' is not a data controller of the approvers registry in force" in err
    out = proposed(spec, root, keys, timeout_s=60, poll_interval=10)
    out.run()
    assert "changed without a signed commit" in str(out.error)
    assert not (root / "releases").exists() and not (root / "runs").exists()


def test_an_unsigned_change_to_the_approvers_while_paused_blocks_decisions_until_a_controller_signs_it(
    tmp_path, prefect_server
):
    spec, root, keys = setup_registry(tmp_path, rows=800)
    carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
    t = proposed(spec, root, keys)
    t.start()
    rid = wait_paused(root, "agreement", thread=t)["run_id"]
    code, token, err = cli("sign", rid, *carl)
    assert code == 0, err
    doc = yaml.safe_load((root / "approvers.yaml").read_text())  # someone adds a person while the run waits
    doc["approvers"].append({"name": "Dana Controller", "role": "controller", "public_key": keygen(tmp_path / "d.pem")})
    (root / "approvers.yaml").write_text(yaml.safe_dump(doc))
    code, _, err = cli("approve", rid, *carl)
    assert code == 2 and "changed without a signed commit" in err  # refused before resuming
    assert raw_resume(rid, approver="Carl Controller", decision="approve", signature=token.strip()) == "ACCEPT"
    again = wait_paused(root, "agreement", attempt=2, thread=t)
    assert "changed without a signed commit" in again["note"] and again["eligible"] == []
    code, _, err = cli("approvers", "commit", *carl, "--root", str(root))  # Carl reviews and signs the change
    assert code == 0, err
    code, _, err = cli("approve", rid, *carl, "--reject", "--comment", "start again")
    assert code == 0, err
    t.join(120)
    assert t.result.status == "rejected"
    assert [e for e, _ in decisions(root)] == ["agreement_proposed", "approval_refused", "agreement_rejected"]


def test_rejection_ends_the_run_with_nothing_released_and_no_noise(tmp_path, prefect_server):
    spec, root, keys = setup_registry(tmp_path, rows=800)
    t = proposed(spec, root, keys)
    t.start()
    rid = wait_paused(root, "agreement", thread=t)["run_id"]
    code, _, err = cli(
        "approve", rid, "--as", "Carl Controller", "--key", str(keys["Carl Controller"]), "--reject",
        "--comment", "too many marginals",
    )  # fmt: skip
    assert code == 0, err
    t.join(120)
    assert t.result.status == "rejected" and "nothing was released" in t.result.message
    st = pause_state(rid)
    assert st.name == "Rejected" and st.is_completed()
    assert not (root / "releases").exists() and not (root / "measurements").exists()
    assert [e for e, _ in decisions(root)] == ["agreement_proposed", "agreement_rejected"]


def test_timeout_ends_the_run_cleanly_and_says_so(tmp_path, prefect_server):
    spec, root, keys = setup_registry(tmp_path, rows=800)
    t = proposed(spec, root, keys, timeout_s=4)
    t.start()
    t.join(120)
    # Prefect's server turns a pause that timed out into Failed, with a message that says so; on a loaded machine the
    # 4 s may be gone before the pause, and the flow ends the run itself, saying so
    said = str(t.error) if t.error else t.result.message
    assert "timed out and never resumed" in said or "within the timeout" in said, said
    events = [e for e in Registry(root).events() if e.event not in CONTROLLER_EVENTS]
    assert [e.event for e in events] == ["agreement_proposed", "approval_timeout"]
    assert "within the timeout" in events[-1].comment
    st = pause_state(str(UUID(events[0].run_id)))
    paused = "timed out and never resumed" in said  # else the deadline passed before the pause: the flow ended it
    assert (
        (st.is_failed() and st.message == "The flow was timed out and never resumed.")
        if paused
        else st.name == ("Timed out")
    )
    assert not (root / "releases").exists()


def test_evidence_changed_after_the_pause_ends_the_run_when_the_decision_arrives(tmp_path, prefect_server):
    """An approver's own account may not read the controller-only evidence report, so its ``sdgov approve`` cannot
    hash-check it: the flow, which can, checks every shown file again when a decision arrives. Evidence rewritten
    after the pause (here after Carl signed) ends the run Blocked, logged ``run_tampered``, nothing released."""
    spec, root, keys = setup_registry(tmp_path, rows=800)
    carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
    t = proposed(spec, root, keys)
    t.start()
    agreement = wait_paused(root, "agreement", thread=t)
    rid = agreement["run_id"]
    code, _, err = cli("approve", rid, *carl, "--yes", "--hash", agreement["sha256"][:8])
    assert code == 0, err
    rel = wait_paused(root, "release", thread=t)
    code, token, err = cli("sign", rid, *carl)  # signed while the evidence is the one shown
    assert code == 0, err
    evidence = Path(rel["summary"]["evidence_report"])
    evidence.write_text(evidence.read_text().replace("</body>", "<p>every check passed</p></body>"))
    sent = raw_resume(
        rid, approver="Carl Controller", decision="approve", signature=token.strip(), confirm_hash=rel["sha256"][:8]
    )
    assert sent == "ACCEPT"
    t.join(240)
    assert not t.is_alive() and t.error is None, t.error
    assert t.result.status == "blocked" and "was changed after the flow showed it" in t.result.message, t.result
    assert not (root / "releases").exists()
    tampered = [e for e in Registry(root).events() if e.event == "run_tampered"]
    assert tampered and "evidence.html was changed" in tampered[-1].comment
    assert "release_approved" not in [e for e, _ in decisions(root)]
