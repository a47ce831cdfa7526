"""The approvers registry and the rules a decision must pass: identity is a key, plus separation of duties.

``approvers.yaml`` is the data controller's file (its place is fixed by the registry's ``controller.yaml``,
default ``ROOT/approvers.yaml``; a change takes effect only once a controller signs it —
:mod:`sdgov.governance.controller`)::

    approvers:
      - {name: Ada Analyst, role: analyst, public_key: "ed25519:BASE64..."}
      - {name: Carl Controller, role: controller, public_key: "ssh-ed25519 AAAAC3Nza... carl@laptop"}

Prefect OSS records no user identity on resume, so the typed name proves nothing: a decision counts only with a
signed :class:`~sdgov.identity.statements.SignOffStatement` that names this registry, this flow run, the nonce the flow
issued for this very pause, the subject, its exact hash and the decision, and verifies with the key registered
for the approver. Names are compared by visual skeleton (:mod:`sdgov.identity.names`), so a look-alike of the proposer
cannot approve. Every decision — and every refused attempt — goes into the hash-chained log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import Field

from sdgov.base.errors import SdgovError, SpecError
from sdgov.base.loading import load_model_file
from sdgov.base.model import Frozen
from sdgov.governance.signoff import Role
from sdgov.identity.keys import parse_public_key, verifies
from sdgov.identity.names import check_name, same_person, skeleton
from sdgov.identity.statements import SignOffStatement, decode_statement, signed_bytes

FILE = "approvers.yaml"
Decision = Literal["approve", "reject"]

REQUIRED_ROLE: dict[str, Role] = {"agreement": "controller", "release": "controller", "budget": "controller"}


class ApprovalRefused(SdgovError):
    """A submitted decision that may not count (unknown identity, wrong role, own proposal, bad signature)."""


class Approver(Frozen):
    name: str = Field(min_length=1)
    role: Role
    public_key: str = Field(description="'ed25519:<base64>' or 'ssh-ed25519 AAAA…': checks this person's decisions")

    def key(self) -> Ed25519PublicKey:
        """This approver's Ed25519 public key; an unreadable one is a one-line ``SpecError`` naming the entry."""
        return parse_public_key(self.public_key, f"{FILE}: {self.name}")


class Approvers(Frozen):
    description: str = ""
    approvers: list[Approver] = Field(min_length=1)

    def find(self, name: str) -> Approver | None:
        """The approver listed as ``name`` (compared by visual skeleton: a look-alike is the same person), or None."""
        return next((a for a in self.approvers if same_person(a.name, name)), None)

    def with_role(self, role: str) -> list[Approver]:
        """The approvers who hold ``role``, in the file's order."""
        return [a for a in self.approvers if a.role == role]


class Challenge(Frozen):
    """What the flow asks to be signed for one pause: the statement must repeat every field."""

    registry_id: str
    run_id: str
    nonce: str
    subject: str
    sha256: str


def load_approvers(path: str | Path) -> Approvers:
    """The registry, refusing hidden characters in names, look-alike pairs and unreadable keys (one line)."""
    a = load_model_file(Approvers, path, SpecError, "approvers registry")
    seen: dict[str, str] = {}
    for p in a.approvers:
        check_name(p.name, str(path))
        k = skeleton(p.name)
        if k in seen:
            raise SpecError(
                f"approvers {seen[k]!r} and {p.name!r} look alike (same Unicode skeleton): one person or an impostor",
                str(path),
                "list each person once, under a name no other entry can be mistaken for",
            )
        seen[k] = p.name
        p.key()
    return a


def check_decision(
    approvers: Approvers,
    *,
    name: str,
    decision: str,
    proposer: str,
    challenge: Challenge,
    signature: str = "",
    allow_unsigned: bool = False,
    where: str = FILE,
) -> tuple[Approver, bool]:
    """The registered approver who may take this decision and whether their identity was verified by their key —
    or :class:`ApprovalRefused` saying why not. ``allow_unsigned`` (the controller's sandbox switch) lets an
    unsigned decision count, recorded as not verified; a signature that is present must still verify."""
    subject = challenge.subject
    role = REQUIRED_ROLE[subject]
    a = approvers.find(name or "")
    if a is None:
        raise ApprovalRefused(
            f"{name!r} is not in the approvers registry, so cannot decide on the {subject}",
            where,
            f"the {subject} needs a {role} listed in {FILE}: " + ", ".join(p.name for p in approvers.with_role(role)),
        )
    if same_person(a.name, proposer):
        raise ApprovalRefused(
            f"{a.name!r} proposed this {subject} and cannot approve or reject it (separation of duties)",
            where,
            f"another {role} must decide",
        )
    if a.role != role:
        raise ApprovalRefused(
            f"{a.name!r} has role {a.role!r}; deciding on the {subject} needs role {role!r}",
            where,
            "ask a " + role + ": " + ", ".join(p.name for p in approvers.with_role(role)),
        )
    if not signature.strip():
        if allow_unsigned:
            return a, False
        raise ApprovalRefused(f"the decision by {a.name!r} is not signed", where, SIGN_HOW)
    problem = statement_problem(a, decision, challenge, signature, where)
    if problem is not None:
        raise problem
    return a, True


SIGN_HOW = "sign with 'sdgov approve RUN_ID --as NAME --key KEY' (or paste 'sdgov sign' output into the form)"


def statement_problem(
    a: Approver, decision: str, challenge: Challenge, signature: str, where: str = FILE
) -> ApprovalRefused | None:
    """None when ``signature`` is ``a``'s signed statement of ``decision`` over this very challenge, verified with
    their registered key; else why not. (A refused attempt whose signature holds was made by ``a``: the log says
    so, not 'unverified'.)"""
    try:
        stmt, sig = decode_statement(signature, SignOffStatement)
    except ValueError as exc:
        return ApprovalRefused(f"the signature of {a.name!r} is unreadable: {exc}", where, SIGN_HOW)
    expected = {**challenge.model_dump(), "decision": decision}
    wrong = [k for k, v in expected.items() if getattr(stmt, k) != v]
    if wrong or not same_person(stmt.approver, a.name):
        return ApprovalRefused(
            f"the signed statement does not match this pause ({', '.join(wrong or ['approver'])} differ): "
            "a statement from another run, pause or decision (replayed or stale)",
            where,
            SIGN_HOW,
        )
    if not verifies(a.key(), sig, signed_bytes(stmt)):
        return ApprovalRefused(f"the signature does not verify with {a.name!r}'s registered key", where, SIGN_HOW)
    return None
