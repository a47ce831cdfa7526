"""The approvers registry and the rules an interactive decision must pass (separation of duties).

``approvers.yaml`` (in the registry root by default, written by the data controller)::

    approvers:
      - {name: Ada Analyst, role: analyst}
      - {name: Carl Controller, role: controller, public_key: "ed25519:BASE64..."}   # then approvals must be signed
      - {name: Cora Compliance, role: compliance}

Prefect OSS records no user identity on resume: the identity typed into the form (or given to ``sdgov approve
--as``) is *declared*. What we enforce and record: the name must be in this registry with the role the decision
needs; the proposer can never approve their own agreement or release; when the approver has a public key the
decision must carry an Ed25519 signature of :func:`signing_message`, which binds name, subject, decision and the
exact hash approved. Every decision — and every refused attempt — goes into the hash-chained log.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Literal

from pydantic import Field

from sdgov.approvals import same_person
from sdgov.contracts import Role
from sdgov.errors import SdgovError, SpecError
from sdgov.loading import load_model_file
from sdgov.model import Frozen

FILE = "approvers.yaml"
Subject = Literal["agreement", "release", "budget"]
Decision = Literal["approve", "reject"]

REQUIRED_ROLE: dict[str, Role] = {"agreement": "controller", "release": "controller", "budget": "controller"}


class ApprovalRefused(SdgovError):
    """A submitted decision that may not count (unknown identity, wrong role, own proposal, bad signature)."""


class Approver(Frozen):
    name: str = Field(min_length=1)
    role: Role
    public_key: str | None = Field(default=None, description="'ed25519:<base64 raw key>': decisions must be signed")


class Approvers(Frozen):
    description: str = ""
    approvers: list[Approver] = Field(min_length=1)

    def find(self, name: str) -> Approver | None:
        return next((a for a in self.approvers if same_person(a.name, name)), None)

    def with_role(self, role: str) -> list[Approver]:
        return [a for a in self.approvers if a.role == role]


def load_approvers(path: str | Path) -> Approvers:
    a = load_model_file(Approvers, path, SpecError, "approvers registry")
    seen: set[str] = set()
    for p in a.approvers:
        key = " ".join(p.name.split()).casefold()
        if key in seen:
            raise SpecError(f"approver {p.name!r} is listed twice", str(path), "list each person once, with one role")
        seen.add(key)
        if p.public_key:
            _public_key(p)
    return a


def default_path(registry_root: str | Path) -> Path:
    return Path(registry_root) / FILE


def signing_message(name: str, subject: str, decision: str, sha256: str) -> bytes:
    """What a signed decision signs: who, about what, which decision, on exactly which hash."""
    return f"sdgov-decision:v1\n{' '.join(name.split())}\n{subject}\n{decision}\n{sha256}".encode()


def _public_key(a: Approver):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    scheme, _, b64 = (a.public_key or "").partition(":")
    try:
        if scheme != "ed25519":
            raise ValueError
        return Ed25519PublicKey.from_public_bytes(base64.b64decode(b64, validate=True))
    except ValueError:
        raise SpecError(
            f"public key of {a.name!r} is not 'ed25519:<base64 of 32 bytes>'",
            FILE,
            "generate one with 'sdgov approvers keygen'",
        ) from None


def sign(private_key_file: str | Path, message: bytes) -> str:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(Path(private_key_file).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:  # missing, unreadable, not PEM, encrypted
        raise SpecError(
            f"cannot read the private key ({getattr(exc, 'strerror', None) or 'not an unencrypted PEM key'})",
            str(private_key_file),
            "pass the PEM file written by 'sdgov approvers keygen'",
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SpecError(
            f"{private_key_file} is not an Ed25519 private key",
            str(private_key_file),
            "make one with 'sdgov approvers keygen'",
        )
    return base64.b64encode(key.sign(message)).decode()


def keygen(private_key_file: str | Path) -> str:
    """Write a new Ed25519 private key (PEM, mode 600); return the public key line for approvers.yaml."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    path = Path(private_key_file)
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "ed25519:" + base64.b64encode(raw).decode()


def check_decision(
    approvers: Approvers,
    *,
    name: str,
    subject: str,
    decision: str,
    sha256: str,
    proposer: str,
    signature: str = "",
    where: str = FILE,
) -> Approver:
    """The registered approver who may take this decision, or :class:`ApprovalRefused` saying why not."""
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
    if a.public_key:
        from cryptography.exceptions import InvalidSignature

        try:
            _public_key(a).verify(
                base64.b64decode(signature or "", validate=True), signing_message(a.name, subject, decision, sha256)
            )
        except (InvalidSignature, ValueError):
            raise ApprovalRefused(
                f"{a.name!r} must sign decisions, and the signature is missing or does not match "
                f"this {subject} ({sha256[:12]}…) and decision {decision!r}",
                where,
                "approve with 'sdgov approve RUN_ID --as NAME --key PRIVATE_KEY.pem'",
            ) from None
    return a
