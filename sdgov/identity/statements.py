"""Signed statements: what an approver's (or controller's) key signs, as one pasteable token.

A token is ``sdgov1.<base64url of the canonical JSON statement>.<base64 Ed25519 signature>``; the signature
covers ``b"sdgov-statement\\n" + canonical JSON``. Everything the verifier needs to compare is inside the
statement, so a token is self-describing (``sdgov sign`` prints it; the Prefect resume form's *Signature* field
takes it) and cannot be re-targeted: it names the registry, the flow run, the flow's one-time nonce for this
pause, the subject, the exact hash and the decision.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import ValidationError

from sdgov.base.hashing import canonical_json
from sdgov.base.model import Frozen
from sdgov.identity.keys import sign

PREFIX = "sdgov1"
_DOMAIN = b"sdgov-statement\n"  # never the bytes of anything else sdgov signs


class SignOffStatement(Frozen):
    """An approver's decision on one pause of one run (the nonce is the flow's, fresh for each pause)."""

    type: Literal["sdgov.signoff/v1"] = "sdgov.signoff/v1"
    registry_id: str
    run_id: str
    nonce: str
    subject: str
    decision: str
    sha256: str
    approver: str
    time: str


class CommitStatement(Frozen):
    """A controller adopts a new version of a controller file (approvers registry, budgets, controller config)."""

    type: Literal["sdgov.governance.controller-commit/v1"] = "sdgov.governance.controller-commit/v1"
    registry_id: str
    file: str
    sha256: str
    previous_sha256: str
    signer: str
    time: str


class LifetimeStatement(Frozen):
    """A controller sets a dataset's lifetime ρ in the controller's budget authority, through one registry
    (``sdgov budget lifetime``): the account (by fingerprint) and the value, so a token cannot be replayed for
    another account, registry or value."""

    type: Literal["sdgov.budget-lifetime/v1"] = "sdgov.budget-lifetime/v1"
    registry_id: str
    fingerprint: str
    lifetime_rho: float
    signer: str
    time: str


class StandingStatement(Frozen):
    """A person signs a standing approval (``approvals.yaml``) for one registry: the file's content hash, the
    agreement it is pinned to and the date it lapses. Scheduled releases apply it without a human at each run, so
    it names no run and no nonce; what bounds it instead is the pinned agreement and ``valid_until``."""

    type: Literal["sdgov.standing-approval/v1"] = "sdgov.standing-approval/v1"
    registry_id: str
    approval_sha256: str
    agreement_sha256: str
    valid_until: str
    signer: str
    time: str


class ProposalStatement(Frozen):
    """An analyst proposes an agreement to one registry: its hash (computable from the spec and the public schema,
    without the data), a nonce of the analyst's own that the registry accepts once, and the time (a proposal goes
    stale after a day). The controller's worker runs nothing for a proposal it cannot verify."""

    type: Literal["sdgov.proposal/v1"] = "sdgov.proposal/v1"
    registry_id: str
    agreement_sha256: str
    proposer: str
    nonce: str
    time: str


S = TypeVar("S", SignOffStatement, CommitStatement, StandingStatement, ProposalStatement, LifetimeStatement)


def signed_bytes(statement: Frozen) -> bytes:
    """The exact bytes a statement's signature covers: the domain prefix, then the canonical JSON of the statement."""
    return _DOMAIN + canonical_json(statement.model_dump())


def encode_statement(statement: Frozen, private_key_file: str | Path) -> str:
    """Sign ``statement`` with the key in ``private_key_file``; the token ``sdgov1.<base64url payload>.<base64
    signature>``."""
    payload = canonical_json(statement.model_dump())
    signature, _ = sign(private_key_file, _DOMAIN + payload)
    return f"{PREFIX}.{base64.urlsafe_b64encode(payload).decode()}.{signature}"


def decode_statement(token: str, model: type[S]) -> tuple[S, str]:
    """The statement and its base64 signature (not yet checked), or ValueError if the token is malformed."""
    prefix, _, rest = token.strip().partition(".")
    body, _, signature = rest.partition(".")
    if prefix != PREFIX or not body or not signature:
        raise ValueError("not an sdgov1.<statement>.<signature> token")
    try:
        return model.model_validate_json(base64.urlsafe_b64decode(body.encode())), signature
    except (ValueError, ValidationError):
        raise ValueError(f"the token does not hold a {model.__name__}") from None
