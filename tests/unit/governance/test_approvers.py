"""Approver identities and signed decisions (sdgov.governance.approvers) without a flow: who may decide, on exactly
what.

The governed flow's system test exercises these through a paused Prefect run; here each refusal is checked directly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from sdgov.base.errors import SpecError
from sdgov.governance.approvers import ApprovalRefused, Approver, Approvers, Challenge, check_decision, load_approvers
from sdgov.identity.keys import keygen, load_private_key, sign
from sdgov.identity.statements import SignOffStatement, encode_statement

HASH = "ab" * 32
CHALLENGE = Challenge(registry_id="r" * 32, run_id="run-a", nonce="n1", subject="release", sha256=HASH)


@pytest.fixture
def book(tmp_path: Path) -> tuple[Approvers, dict[str, Path]]:
    keys = {n: tmp_path / f"{n.split()[0]}.pem" for n in ("Carl Controller", "Ann Analyst", "Vic Controller")}
    return Approvers(
        approvers=[
            Approver(name="Carl Controller", role="controller", public_key=keygen(keys["Carl Controller"])),
            Approver(name="Ann Analyst", role="analyst", public_key=keygen(keys["Ann Analyst"])),
            Approver(name="Vic Controller", role="controller", public_key=keygen(keys["Vic Controller"])),
        ]
    ), keys


def token(key: Path, approver: str = "Carl Controller", decision: str = "approve", **change: str) -> str:
    fields = {**CHALLENGE.model_dump(), **change}
    return encode_statement(
        SignOffStatement(**fields, decision=decision, approver=approver, time="2026-01-01T00:00:00Z"), key
    )


def decide(book: Approvers, name: str, signature: str = "", **kw):
    kw = {"decision": "approve", "proposer": "Ann Analyst", "challenge": CHALLENGE, **kw}
    return check_decision(book, name=name, signature=signature, **kw)


def test_a_signed_statement_counts_only_for_its_registry_run_nonce_hash_and_decision(book) -> None:
    people, keys = book
    good = token(keys["Carl Controller"])
    who, verified = decide(people, "carl  controller", good)
    assert who.name == "Carl Controller" and verified
    for change in ({"registry_id": "x" * 32}, {"run_id": "run-b"}, {"nonce": "n0"}, {"sha256": "cd" * 32}):
        field = next(iter(change))
        with pytest.raises(ApprovalRefused, match=f"{field} differ.*replayed or stale"):
            decide(people, "Carl Controller", token(keys["Carl Controller"], **change))
    with pytest.raises(ApprovalRefused, match="decision differ"):
        decide(people, "Carl Controller", good, decision="reject")
    with pytest.raises(ApprovalRefused, match="approver differ"):  # Vic's statement presented as Carl's
        decide(people, "Carl Controller", token(keys["Vic Controller"], approver="Vic Controller"))


def test_unsigned_forged_and_wrongly_keyed_decisions_are_refused(book) -> None:
    people, keys = book
    with pytest.raises(ApprovalRefused, match="is not signed"):
        decide(people, "Carl Controller")
    with pytest.raises(ApprovalRefused, match="unreadable"):
        decide(people, "Carl Controller", "approved-by-carl")
    with pytest.raises(ApprovalRefused, match="does not verify with 'Carl Controller'"):  # signed with Vic's key
        decide(people, "Carl Controller", token(keys["Vic Controller"]))
    forged = token(keys["Carl Controller"]).split(".")
    other = token(keys["Carl Controller"], decision="reject").split(".")
    with pytest.raises(ApprovalRefused):  # a statement spliced with another statement's signature
        decide(people, "Carl Controller", ".".join([forged[0], other[1], forged[2]]), decision="reject")


def test_the_sandbox_switch_lets_unsigned_decisions_count_as_unverified_but_never_a_bad_signature(book) -> None:
    people, keys = book
    who, verified = decide(people, "Carl Controller", allow_unsigned=True)
    assert who.name == "Carl Controller" and verified is False
    with pytest.raises(ApprovalRefused, match="does not verify"):
        decide(people, "Carl Controller", token(keys["Vic Controller"]), allow_unsigned=True)


@pytest.mark.parametrize(
    "name, proposer, reason",
    [
        ("Mallory", "Ann Analyst", "is not in the approvers registry"),
        ("Ann Analyst", "Vic Controller", "needs role 'controller'"),
        ("Carl Controller", "carl controller", "separation of duties"),
        # look-alikes of the proposer are the proposer (Cyrillic С, zero-width space, fullwidth)
        ("\u0421arl Controller", "Carl Controller", "separation of duties"),
        ("Carl\u200b Controller", "Carl Controller", "separation of duties"),
        ("Carl Controller", "\uff23arl Controller", "separation of duties"),
    ],
)
def test_unknown_wrong_role_and_own_proposal_are_refused(book, name: str, proposer: str, reason: str) -> None:
    people, keys = book
    with pytest.raises(ApprovalRefused, match=reason):
        decide(people, name, token(keys["Carl Controller"]), proposer=proposer)


def test_the_registry_refuses_invisible_characters_look_alikes_and_missing_keys(tmp_path: Path) -> None:
    pub = keygen(tmp_path / "k.pem")

    def load(*people: dict):
        (tmp_path / "approvers.yaml").write_text(yaml.safe_dump({"approvers": list(people)}, allow_unicode=True))
        return load_approvers(tmp_path / "approvers.yaml")

    ada = {"name": "Ada Analyst", "role": "analyst", "public_key": pub}
    assert load(ada).find("ada analyst") is not None
    for impostor in ("\u0410da Analyst", "\uff21da Analyst", "ada  ANALYST"):
        with pytest.raises(SpecError, match="look alike"):
            load(ada, {**ada, "name": impostor, "role": "controller"})
    for hidden in ("Ada\u200b Analyst", "Ada\u202eAnalyst", "Ada\x07Analyst"):
        with pytest.raises(SpecError, match="invisible or control characters"):
            load({**ada, "name": hidden})
    with pytest.raises(SpecError, match="public_key"):
        load({"name": "Ada Analyst", "role": "analyst"})
    with pytest.raises(SpecError, match="not an Ed25519 public key"):
        load({**ada, "public_key": "ed25519:AAAA"})


def test_openssh_keys_work_for_registration_and_signing(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()  # what ssh-keygen -t ed25519 writes: OpenSSH private and public formats
    (tmp_path / "id").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    )
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    pub += " carl@laptop"
    people = Approvers(approvers=[Approver(name="Carl Controller", role="controller", public_key=pub)])
    who, verified = decide(people, "Carl Controller", token(tmp_path / "id"))
    assert who.name == "Carl Controller" and verified


def test_a_key_that_is_not_ed25519_or_missing_is_a_user_error(tmp_path: Path) -> None:
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (tmp_path / "ec.pem").write_bytes(pem)
    with pytest.raises(SpecError, match="not an unencrypted Ed25519 private key"):
        sign(tmp_path / "ec.pem", b"message")
    with pytest.raises(SpecError, match="cannot read the key"):
        load_private_key(tmp_path / "missing.pem")
    keygen(tmp_path / "k.pem")
    with pytest.raises(SpecError, match="already exists"):
        keygen(tmp_path / "k.pem")
    assert (tmp_path / "k.pem").stat().st_mode & 0o077 == 0
