"""Signed proposals: an analyst's key, not a typed name, says who proposed an agreement.

``sdgov propose --key KEY`` signs a :class:`~sdgov.identity.statements.ProposalStatement` — the registry's id, the
agreement's hash (computed from the spec and the public schema, without the data), the proposer's name, a nonce of
the analyst's own and the time — and sends the token with the run. The controller's side accepts it only when

- it names this registry and exactly the agreement the spec resolves to here;
- the proposer is an analyst of the approvers registry in force and the signature verifies with their key;
- its nonce was never used in the registry log (a proposal is submitted once: a replay is refused);
- it is at most :data:`MAX_AGE` old and not from the future (clock skew :data:`SKEW` allowed).

A registry whose controller set the sandbox switch (``allow_unsigned_ui_approvals``) accepts an unsigned proposal,
recorded as identity not verified (the card's sign-off row says so); every other registry refuses it. A refused
proposal is logged (``proposal_refused``) before anything is read or drawn.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
from dataclasses import dataclass
from pathlib import Path

from sdgov.base.clock import utcnow
from sdgov.base.errors import SdgovError
from sdgov.governance.approvers import ApprovalRefused, Approvers
from sdgov.governance.controller import load_config
from sdgov.identity.keys import verifies
from sdgov.identity.names import same_person
from sdgov.identity.statements import ProposalStatement, decode_statement, encode_statement, signed_bytes
from sdgov.registry.log import Registry

MAX_AGE = dt.timedelta(hours=24)
SKEW = dt.timedelta(minutes=5)
HOW = "sign it: 'sdgov propose --spec SPEC --as NAME --key KEY' (your key registered in approvers.yaml)"

__all__ = ["ProposalCheck", "check_proposal_statement", "record_proposal_refused", "sign_proposal"]


@dataclass(frozen=True)
class ProposalCheck:
    """Who proposed, whether their key verified it, and the statement's nonce ('' unsigned)."""

    proposer: str
    verified: bool
    nonce: str = ""
    token: str = ""

    def via(self) -> str:
        """The proposer's sign-off ``via``: how their identity was established."""
        if self.verified:
            return f"signed proposal, identity verified: Ed25519 signature with {self.proposer}'s registered key"
        return (
            "proposal, identity NOT verified: unsigned proposal accepted under the sandbox policy "
            "allow_unsigned_ui_approvals (anyone who could start a run could have typed this name)"
        )


def sign_proposal(registry_id: str, agreement_sha256: str, proposer: str, key: str | Path) -> str:
    """The analyst's signed proposal token for one agreement in one registry (a fresh nonce each time)."""
    stmt = ProposalStatement(
        registry_id=registry_id,
        agreement_sha256=agreement_sha256,
        proposer=proposer,
        nonce=secrets.token_hex(16),
        time=utcnow(),
    )
    return encode_statement(stmt, key)


def _parse_time(text: str) -> dt.datetime:
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def check_proposal_statement(
    registry: Registry, approvers: Approvers, token: str | None, agreement_sha256: str, proposer: str
) -> ProposalCheck:
    """The proposal's author, verified by their key (or, in a sandbox registry, accepted unsigned); otherwise an
    :class:`ApprovalRefused` saying why, before anything is read or drawn."""
    where = "proposal"
    if not (token or "").strip():
        if load_config(registry).allow_unsigned_ui_approvals:
            return ProposalCheck(proposer=proposer, verified=False)
        raise ApprovalRefused(f"the proposal by {proposer!r} is not signed", where, HOW)
    try:
        stmt, sig = decode_statement(token or "", ProposalStatement)
    except ValueError as exc:
        raise ApprovalRefused(f"the proposal's signature is unreadable: {exc}", where, HOW) from None
    if proposer and not same_person(stmt.proposer, proposer):
        raise ApprovalRefused(f"the proposal is signed by {stmt.proposer!r}, not {proposer!r}", where, HOW)
    a = approvers.find(stmt.proposer)
    if a is None or a.role != "analyst":
        raise ApprovalRefused(
            f"the proposer {stmt.proposer!r} must be an analyst in the approvers registry", where, HOW
        )
    if stmt.registry_id != registry.registry_id():
        raise ApprovalRefused("the proposal was signed for another registry", where, HOW)
    if stmt.agreement_sha256 != agreement_sha256:
        raise ApprovalRefused(
            f"the proposal was signed for agreement {stmt.agreement_sha256[:12]}…, but the spec resolves to "
            f"{agreement_sha256[:12]}… here",
            where,
            "sign the spec you submit (its schema as the controller holds it)",
        )
    try:
        age = dt.datetime.now(dt.UTC) - _parse_time(stmt.time)
    except ValueError:
        raise ApprovalRefused(f"the proposal's time {stmt.time!r} is unreadable", where, HOW) from None
    if age > MAX_AGE or age < -SKEW:
        raise ApprovalRefused(f"the proposal was signed at {stmt.time}, outside the last 24 hours", where, HOW)
    if not verifies(a.key(), sig, signed_bytes(stmt)):
        raise ApprovalRefused(f"the proposal's signature does not verify with {a.name!r}'s registered key", where, HOW)
    if stmt.nonce in {e.artifacts["nonce"] for e in registry.events() if e.artifacts.get("nonce")}:
        raise ApprovalRefused("this signed proposal was already submitted (its nonce is used)", where, HOW)
    return ProposalCheck(proposer=a.name, verified=True, nonce=stmt.nonce, token=token or "")


def record_proposal_refused(registry: Registry, proposer: str, agreement_sha256: str, error: SdgovError) -> None:
    """Log ``proposal_refused`` (as the named proposer, unverified); a log this process cannot append to leaves the
    refusal on the run and the terminal only."""
    with contextlib.suppress(SdgovError):
        registry.append(
            "proposal_refused",
            proposer or "?",
            "unverified",
            agreement_sha256=agreement_sha256,
            comment=error.one_line(),
        )
