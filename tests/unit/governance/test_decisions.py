"""The rules of a human decision on a paused run, and what the log records (sdgov.governance.decisions), without
Prefect: the governed flow only pauses, polls and shows the form; everything checked here is what it then calls."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sdgov.governance import decisions
from sdgov.governance.approvers import ApprovalRefused
from sdgov.governance.decisions import Pause, Refused, Submitted
from sdgov.governance.signoff import SignOff
from sdgov.identity.statements import SignOffStatement, encode_statement
from sdgov.measurement.selection.review import EdgeReview, ReviewLimits, accept_review, review_sha256
from sdgov.registry.log import Event, Registry
from tests.fixtures.pauses import AGREEMENT, HASH, pause
from tests.governance import PEOPLE

PROPOSER = "Ada Analyst"


def statement(p: Pause, key: Path, approver: str, decision: str = "approve", **change: str) -> str:
    fields = {**p.challenge().model_dump(), "decision": decision, "approver": approver, **change}
    return encode_statement(SignOffStatement(**fields, time="2026-01-01T00:00:00Z"), key)


def submitted(p: Pause, key: Path | None, approver: str = "Carl Controller", decision: str = "approve", **kw: str):
    signature = statement(p, key, approver, decision) if key is not None else ""
    confirm = p.sha256[: decisions.CONFIRM_CHARS] if p.subject == "release" else ""
    fields = {"confirm_hash": confirm, "comment": "looks right", **kw}
    return Submitted(approver=approver, decision=decision, signature=signature, **fields)


def last(registry: Registry) -> Event:
    return registry.events()[-1]


def test_a_signed_approval_counts_becomes_a_signoff_and_is_logged_with_its_statement(governed) -> None:
    registry, keys = governed
    p = pause(registry)
    form = submitted(p, keys["Carl Controller"])
    s = decisions.decide(p, form, PROPOSER)
    assert isinstance(s, SignOff)
    assert (s.name, s.role, s.subject, s.decision, s.subject_sha256) == (
        "Carl Controller",
        "controller",
        "release",
        "approve",
        HASH,
    )
    assert s.identity_verified is True and s.comment == "looks right"
    assert s.via == (
        "Prefect resume form / sdgov approve (flow run flow-run-1), identity verified: Ed25519 signature with "
        "Carl Controller's registered key"
    )
    e = last(registry)
    assert (e.event, e.actor, e.role, e.decision, e.run_id, e.agreement_sha256) == (
        "release_approved",
        "Carl Controller",
        "controller",
        "approve",
        "run-1",
        AGREEMENT,
    )
    assert e.artifacts == {
        "release": HASH,
        "nonce": p.nonce,
        "flow_run_id": "flow-run-1",
        "identity_verified": "true",
        "statement": form.signature,
    }


@pytest.mark.parametrize(
    ("subject", "event"),
    [("agreement", "agreement_approved"), ("budget", "budget_retry_approved")],
)
def test_agreement_and_budget_approvals_are_signed_off_as_agreement_decisions(governed, subject, event) -> None:
    registry, keys = governed
    p = pause(registry, subject)
    s = decisions.decide(p, submitted(p, keys["Carl Controller"]), PROPOSER)
    assert isinstance(s, SignOff) and s.subject == "agreement"
    assert last(registry).event == event and last(registry).artifacts[subject] == HASH


def test_a_rejection_counts_is_logged_as_rejected_and_says_nothing_was_released(governed) -> None:
    registry, keys = governed
    p = pause(registry, "agreement")
    s = decisions.decide(p, submitted(p, keys["Carl Controller"], decision="reject", comment="too wide"), PROPOSER)
    assert isinstance(s, SignOff) and s.decision == "reject"
    assert last(registry).event == "agreement_rejected"
    assert decisions.rejection_message(p, s) == (
        f"Carl Controller (controller) rejected the agreement {HASH[:12]}…: nothing was released — too wide"
    )


def refused(
    registry: Registry, outcome: SignOff | Refused, match: str, attempt: int = 1, role: str = "unverified"
) -> Event:
    """The refusal, logged as the typed name — under their role when their signature held (issue 39), else
    unverified."""
    assert isinstance(outcome, Refused), outcome
    assert match in outcome.error.what
    assert outcome.note == (
        f"Attempt {attempt} by 'Carl Controller' was refused: {outcome.error.what}. The run is paused again."
    )
    e = last(registry)
    assert (e.event, e.actor, e.role) == ("approval_refused", "Carl Controller", role)
    assert e.artifacts["identity_verified"] == str(role != "unverified").lower()
    assert e.comment == f"{outcome.error.what} | comment: looks right"
    return e


def test_a_decision_signed_with_another_persons_key_is_refused_and_logged(governed) -> None:
    registry, keys = governed
    p = pause(registry)
    outcome = decisions.decide(p, submitted(p, keys["Vic Controller"]), PROPOSER)  # Vic's key, Carl's name
    e = refused(registry, outcome, "does not verify with 'Carl Controller'")
    assert e.artifacts == {"release": HASH, "nonce": p.nonce, "flow_run_id": "flow-run-1", "identity_verified": "false"}


def test_an_unsigned_decision_is_refused_unless_the_sandbox_switch_is_on(governed) -> None:
    registry, _ = governed
    p = pause(registry)
    refused(registry, decisions.decide(p, submitted(p, None), PROPOSER), "is not signed")


def test_a_replayed_nonce_is_refused(governed) -> None:
    registry, keys = governed
    p = pause(registry)
    form = submitted(p, keys["Carl Controller"])
    assert isinstance(decisions.decide(p, form, PROPOSER), SignOff)
    refused(
        registry, decisions.decide(p, form, PROPOSER), "the nonce of this pause was already used", role="controller"
    )
    with pytest.raises(ApprovalRefused):
        decisions.check_nonce_unused(registry, p.nonce)
    decisions.check_nonce_unused(registry, pause(registry).nonce)  # a fresh pause's nonce is unused


def test_a_statement_signed_for_an_earlier_pause_is_stale(governed) -> None:
    registry, keys = governed
    earlier, now = pause(registry, attempt=1), pause(registry, attempt=2)
    form = submitted(earlier, keys["Carl Controller"])
    refused(registry, decisions.decide(now, form, PROPOSER), "nonce differ", attempt=2)


def test_the_proposer_cannot_decide_and_is_not_eligible(governed) -> None:
    registry, keys = governed
    p = pause(registry)
    outcome = decisions.decide(p, submitted(p, keys["Carl Controller"]), "Carl Controller")
    refused(registry, outcome, "proposed this release and cannot approve or reject it", role="controller")
    assert decisions.eligible(registry, exclude="Carl Controller") == (["Vic Controller"], "")
    assert decisions.eligible(registry, exclude=PROPOSER) == (["Carl Controller", "Vic Controller"], "")
    everyone = [name for name, _ in PEOPLE] + ["Vic Controller"]
    assert decisions.eligible(registry, role=None) == (everyone, "")


def test_an_approvers_file_changed_without_a_signed_commit_leaves_nobody_eligible(governed) -> None:
    registry, keys = governed
    (registry.root / "approvers.yaml").write_text((registry.root / "approvers.yaml").read_text() + "\n# edited\n")
    people, problem = decisions.eligible(registry, exclude=PROPOSER)
    assert people == [] and "changed without a signed commit" in problem
    p = pause(registry)
    refused(registry, decisions.decide(p, submitted(p, keys["Carl Controller"]), PROPOSER), "without a signed")


def test_a_release_approval_needs_the_hash_typed_back(governed) -> None:
    registry, keys = governed
    p = pause(registry)
    wrong = submitted(p, keys["Carl Controller"], confirm_hash="00000000")
    e = refused(registry, decisions.decide(p, wrong, PROPOSER), "is not the first 8 characters", role="controller")
    assert e.artifacts["statement"] == wrong.signature  # Carl's own signed attempt: his, verified
    again = pause(registry, attempt=2)  # a refusal spends its pause's nonce too: the flow pauses again with a new one
    typed = submitted(again, keys["Carl Controller"], confirm_hash=f" {HASH[:8].upper()} ")  # case, spaces forgiven
    assert isinstance(decisions.decide(again, typed, PROPOSER), SignOff)
    decisions.check_confirmation("release", HASH, "reject", "")  # a rejection needs none
    decisions.check_confirmation("agreement", HASH, "approve", None)  # nor does another subject


def test_no_decision_in_time_is_logged_as_a_timeout(governed) -> None:
    registry, _ = governed
    p = pause(registry, "agreement")
    msg = decisions.timeout_message("agreement", HASH)
    assert (
        msg
        == f"no decision on the agreement {HASH[:12]}… within the timeout: the run ends here and nothing was released"
    )
    decisions.record_timeout(p, msg)
    e = last(registry)
    assert (e.event, e.actor, e.role, e.decision, e.comment) == ("approval_timeout", "sdgov", "system", "timeout", msg)
    assert e.artifacts == {"agreement": HASH} and e.agreement_sha256 == AGREEMENT


def test_a_signed_review_counts_and_a_refused_one_is_logged(governed) -> None:
    registry, keys = governed
    p = pause(registry, "phi_review")
    review = EdgeReview(
        reviewer="Cora Compliance", drop=[["a", "b"]], reason="a and b are one question", proposal_sha256=p.sha256
    )
    fields = {**p.challenge("phi_review", review_sha256(review)).model_dump(), "decision": "review"}
    signature = encode_statement(
        SignOffStatement(**fields, approver="Cora Compliance", time="2026-01-01T00:00:00Z"),
        keys["Cora Compliance"],
    )
    limits = ReviewLimits(attributes=["a", "b", "c"], sizes={"a": 2, "b": 2, "c": 2}, max_marginal_cells=100)
    who, verified, pairs, changes = accept_review(p, review, signature, [["a", "b"], ["b", "c"]], limits)
    assert who.name == "Cora Compliance" and verified and pairs == [["b", "c"]] and len(changes) == 1
    decisions.record_review(
        p, who, verified, review_sha256="h", close=False, comment="drop a × b", drop="a,b", force="", signature="s"
    )
    e = last(registry)
    assert (e.event, e.actor, e.role, e.decision) == ("phi_reviewed", "Cora Compliance", "compliance", "review")
    assert e.artifacts["nonce"] == p.nonce and e.artifacts["identity_verified"] == "true"
    with pytest.raises(ApprovalRefused, match="already used"):  # the pause's nonce is spent
        accept_review(p, review, signature, [["a", "b"]], limits)
    other = pause(registry, "phi_review")  # the same review, signed, submitted to a pause on another proposal
    other = dataclasses.replace(other, sha256="9" * 64)
    with pytest.raises(ApprovalRefused, match="another Φ proposal"):
        accept_review(other, review, signature, [["a", "b"]], limits)
    out = decisions.record_review_refused(p, "Cora Compliance", ApprovalRefused("x", "w", "h"), "why: y")
    assert out.note == "Attempt 1 by 'Cora Compliance' was refused: x. The run is paused again."
    e = last(registry)
    assert (e.event, e.decision, e.comment) == ("phi_review_refused", "review", "x | why: y")
    assert e.artifacts == {"nonce": p.nonce, "flow_run_id": "flow-run-1"}


def test_a_decision_rewritten_by_the_registry_key_holder_fails_verify_and_stops_releases(governed, capsys) -> None:
    """One verification (issue 24): the registry key can re-sign the log, but not an approver's statement. A logged
    approval re-attributed to another controller (log re-chained and re-signed) is flagged by ``registry verify``
    and refuses the next release; before, verify said ok."""
    import json

    from sdgov.base.errors import SdgovError
    from sdgov.base.hashing import canonical_json, sha256_bytes
    from sdgov.commands import main
    from sdgov.governance.controller import check_controller_files
    from sdgov.registry import key as registry_key
    from sdgov.registry.log import EVENT_DOMAIN

    registry, keys = governed
    p = pause(registry)
    assert isinstance(decisions.decide(p, submitted(p, keys["Carl Controller"]), PROPOSER), SignOff)
    assert main(["registry", "verify", "--root", str(registry.root)]) == 0
    key = registry_key.require(registry.keys, registry.registry_id())
    lines, prev = [], "0" * 64
    for line in registry.log_path.read_text().splitlines():
        e = json.loads(line)
        if e["event"] == "release_approved":
            e["actor"] = "Vic Controller"  # Vic is a controller too, but never decided this
        e["prev"] = prev
        e["hash"] = sha256_bytes(canonical_json({k: v for k, v in e.items() if k not in ("hash", "sig")}))
        e["sig"] = registry_key.sign_framed(key, EVENT_DOMAIN, e["hash"].encode())
        prev = e["hash"]
        lines.append(canonical_json(e))
    registry.log_path.write_bytes(b"\n".join(lines) + b"\n")
    capsys.readouterr()
    assert main(["registry", "verify", "--root", str(registry.root), "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert any("'Vic Controller''s release_approved" in p and "signed statement" in p for p in problems), problems
    with pytest.raises(SdgovError, match="signed statement does not match"):
        check_controller_files(registry)
