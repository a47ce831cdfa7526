"""Approver identities and signed decisions (sdgov.approvers) without a flow: who may decide, and on exactly what.

The governed flow's system test exercises these through a paused Prefect run; here each refusal is checked directly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from sdgov.approvers import ApprovalRefused, Approver, Approvers, check_decision, keygen, sign, signing_message
from sdgov.errors import SpecError

HASH = "ab" * 32


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Approvers, Path]:
    key = tmp_path / "carl.pem"
    registry = Approvers(
        approvers=[
            Approver(name="Carl Controller", role="controller", public_key=keygen(key)),
            Approver(name="Ann Analyst", role="analyst"),
            Approver(name="Una Unsigned", role="controller"),
        ]
    )
    return registry, key


def _decide(registry: Approvers, name: str, signature: str = "", proposer: str = "Ann Analyst", sha: str = HASH):
    return check_decision(
        registry, name=name, subject="release", decision="approve", sha256=sha, proposer=proposer, signature=signature
    )


def test_a_signed_decision_counts_only_for_the_hash_and_decision_signed(signed) -> None:
    registry, key = signed
    signature = sign(key, signing_message("Carl Controller", "release", "approve", HASH))
    assert _decide(registry, "carl  controller", signature).name == "Carl Controller"  # names match loosely
    with pytest.raises(ApprovalRefused, match="signature is missing or does not match"):
        _decide(registry, "Carl Controller", signature, sha="cd" * 32)
    with pytest.raises(ApprovalRefused, match="signature is missing"):
        _decide(registry, "Carl Controller")


@pytest.mark.parametrize(
    "name, proposer, reason",
    [
        ("Mallory", "Ann Analyst", "is not in the approvers registry"),
        ("Ann Analyst", "Una Unsigned", "needs role 'controller'"),
        ("Una Unsigned", "una unsigned", "separation of duties"),
    ],
)
def test_unknown_wrong_role_and_own_proposal_are_refused(signed, name: str, proposer: str, reason: str) -> None:
    registry, _ = signed
    with pytest.raises(ApprovalRefused, match=reason):
        _decide(registry, name, proposer=proposer)
    assert _decide(registry, "Una Unsigned").role == "controller"  # no key registered: no signature needed


def test_signing_with_a_key_that_is_not_ed25519_is_a_user_error(tmp_path: Path) -> None:
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (tmp_path / "ec.pem").write_bytes(pem)
    with pytest.raises(SpecError, match="not an Ed25519 private key"):
        sign(tmp_path / "ec.pem", b"message")
