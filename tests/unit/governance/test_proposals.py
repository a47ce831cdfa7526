"""Signed proposals (issue 24 item 2): an analyst's key, not a typed name, says who proposed an agreement."""

from __future__ import annotations

import pytest

from sdgov.base.clock import utcnow
from sdgov.base.errors import SdgovError
from sdgov.governance.approvers import ApprovalRefused
from sdgov.governance.controller import commit, controller_approvers
from sdgov.governance.proposals import check_proposal_statement, sign_proposal
from sdgov.identity.statements import ProposalStatement, encode_statement
from sdgov.registry.log import Registry
from tests.governance import controller_registry

SHA = "ab" * 32


@pytest.fixture
def governed(tmp_path):
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    return Registry(root), keys


def check(registry: Registry, token: str | None, sha: str = SHA, proposer: str = "Ada Analyst"):
    return check_proposal_statement(registry, controller_approvers(registry), token, sha, proposer)


def test_a_signed_proposal_counts_as_verified_and_names_its_nonce(governed):
    registry, keys = governed
    token = sign_proposal(registry.registry_id(), SHA, "Ada Analyst", keys["Ada Analyst"])
    out = check(registry, token)
    assert out.verified and out.proposer == "Ada Analyst" and len(out.nonce) == 32 and out.token == token
    assert "identity verified" in out.via()


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"registry_id": "another"}, "another registry"),
        ({"agreement_sha256": "cd" * 32}, "signed for agreement"),
        ({"proposer": "Carl Controller"}, "not 'Ada Analyst'"),
        ({"time": "2020-01-01T00:00:00Z"}, "outside the last 24 hours"),
    ],
)
def test_a_statement_for_something_else_is_refused(governed, change, why):
    registry, keys = governed
    fields = {
        "registry_id": registry.registry_id(),
        "agreement_sha256": SHA,
        "proposer": "Ada Analyst",
        "nonce": "n" * 32,
        "time": utcnow(),
    }
    token = encode_statement(ProposalStatement(**{**fields, **change}), keys["Ada Analyst"])
    with pytest.raises(ApprovalRefused, match=why):
        check(registry, token)


def test_the_wrong_key_a_controller_as_proposer_and_an_unsigned_proposal_are_refused(governed):
    registry, keys = governed
    rid = registry.registry_id()
    with pytest.raises(ApprovalRefused, match="does not verify with 'Ada Analyst'"):
        check(registry, sign_proposal(rid, SHA, "Ada Analyst", keys["Carl Controller"]))
    with pytest.raises(ApprovalRefused, match="must be an analyst"):  # separation of duties: not a controller
        check(registry, sign_proposal(rid, SHA, "Carl Controller", keys["Carl Controller"]), proposer="Carl Controller")
    with pytest.raises(ApprovalRefused, match="is not signed"):
        check(registry, None)
    with pytest.raises(ApprovalRefused, match="unreadable"):
        check(registry, "sdgov1.e30.AA")


def test_a_proposal_counts_once(governed):
    registry, keys = governed
    token = sign_proposal(registry.registry_id(), SHA, "Ada Analyst", keys["Ada Analyst"])
    first = check(registry, token)
    registry.append("agreement_proposed", "Ada Analyst", "analyst", artifacts={"nonce": first.nonce})
    with pytest.raises(ApprovalRefused, match="already submitted"):
        check(registry, token)


def test_only_a_sandbox_registry_takes_an_unsigned_proposal_and_says_the_identity_was_not_verified(governed):
    registry, keys = governed
    (registry.root / "controller.yaml").write_text("allow_unsigned_ui_approvals: true\n")
    commit(registry, "Carl Controller", keys["Carl Controller"])
    out = check(registry, None)
    assert not out.verified and out.nonce == "" and "identity NOT verified" in out.via()


def test_check_proposal_refuses_and_logs_before_the_data_is_read(governed, tmp_path):
    """The signature is checked from the spec and the public schema only: a refused proposal never opens the data
    (here the data file does not even exist), and the refusal is in the log."""
    from sdgov.intake.inputs import check_proposal
    from tests.conftest import make_demo_inputs

    registry, keys = governed
    spec = make_demo_inputs(tmp_path / "in", rows=200)
    (spec.parent / "data.csv").unlink()
    with pytest.raises(SdgovError, match="is not signed"):
        check_proposal(spec, registry, "Ada Analyst")
    [e] = [e for e in registry.events() if e.event == "proposal_refused"]
    assert e.actor == "Ada Analyst" and e.role == "unverified" and "not signed" in e.comment
