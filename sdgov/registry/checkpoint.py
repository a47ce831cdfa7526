"""Signed checkpoints of the registry log: anchors kept *outside* the registry.

A hash chain shows that the lines fit together, and the registry key's signatures that the registry wrote them;
neither shows that nothing was *removed from the end*, or that the whole log was not replaced. A checkpoint —
like a Certificate Transparency signed tree head or a Sigstore Rekor checkpoint — is a small signed statement
"registry R's log had its event N with hash H at time T". Published elsewhere (a ticket, a git tag, an e-mail
to compliance, a release card), it lets anyone check later that the current log *extends* it: the same event
N with the same hash, hence the same whole prefix (each hash covers the one before). A rollback to an earlier
prefix, a wipe, a rewrite-and-re-chain or a re-keyed log all fail that check.

A hash chain makes the consistency proof trivial (compare one hash); a Merkle tree would make it logarithmic,
which matters for logs of millions of entries, not for this one.

Who signs it: the registry key (the controller's machine), or a person with their own key — a compliance officer
checkpoints from her own account, holding neither the registry key nor the data (``sdgov registry checkpoint --as
NAME --key KEY``). Hers names her (``signer``) and the registry's public key at the time (``registry_key``); whoever
checks it later also checks she is a compliance officer or controller of the approvers registry in force (the
caller's ``person_ok``: this room knows keys, not people).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from sdgov.identity import keys

from sdgov.registry import key as registry_key
from sdgov.base.clock import utcnow
from sdgov.base.errors import RegistryError
from sdgov.base.hashing import canonical_json
from sdgov.base.model import Frozen
from sdgov.registry.log import Event, Registry

TYPE = "sdgov-checkpoint/v1"
DOMAIN = "sdgov-checkpoint:v1"


class Checkpoint(Frozen):
    type: str = TYPE
    registry_id: str
    public_key: str = Field(description="the registry key that signed it: 'ed25519:<base64>'")
    sequence: int = Field(ge=0, description="the log event this checkpoint pins (0-based; the log had sequence+1)")
    head: str = Field(description="that event's hash, which covers every event before it")
    time: str
    signer: str = Field(default="", description="'': the registry key signed it; else the person whose key did")
    registry_key: str = Field(default="", description="with a signer: the registry's public key (its genesis)")
    signature: str = ""

    def message(self) -> bytes:
        """What the signature covers (a registry-signed checkpoint's fields as they always were)."""
        empty = {k for k in ("signer", "registry_key") if not getattr(self, k)}
        return canonical_json(self.model_dump(exclude={"signature", *empty}))


PersonCheck = Callable[[str, str], str | None]
"""``person_ok(signer, public_key)`` → why that person may not vouch for a checkpoint, or None."""


def make(registry: Registry, signer: str | None = None, key: str | Path | None = None) -> Checkpoint:
    """Sign the current head — with the registry key, or as ``signer`` with their own ``key`` (no registry key
    needed: a reader's act). The log is verified first: a checkpoint of a broken log would anchor the break."""
    registry.require_existing()
    events = registry.verified_events()
    if not events:
        raise RegistryError(
            "the log is empty: nothing to checkpoint", str(registry.log_path), "release something first"
        )
    if bool(signer) != bool(key):
        raise RegistryError("a person's checkpoint needs both --as and --key", "checkpoint", "give both, or neither")
    rid = registry.registry_id()
    private = keys.load_private_key(key) if key else registry_key.require(registry.keys, rid)
    head = events[-1]
    cp = Checkpoint(
        registry_id=rid,
        public_key=keys.public_line(private.public_key()),
        sequence=head.seq,
        head=head.hash,
        time=utcnow(),
        signer=signer or "",
        registry_key=events[0].artifacts.get("registry_public_key", "") if signer else "",
    )
    return cp.model_copy(update={"signature": registry_key.sign_framed(private, DOMAIN, cp.message())})


def load_checkpoint(path: str | Path) -> Checkpoint:
    p = Path(path)
    try:
        return Checkpoint.model_validate_json(p.read_bytes())
    except OSError:
        raise RegistryError(
            "cannot read the checkpoint", str(p), "give the file 'sdgov registry checkpoint' wrote"
        ) from None
    except ValueError:
        raise RegistryError(
            "not an sdgov checkpoint (expected the JSON 'sdgov registry checkpoint' writes)",
            str(p),
            "give the file 'sdgov registry checkpoint' wrote",
        ) from None


def dumps(cp: Checkpoint) -> str:
    return json.dumps(cp.model_dump(), indent=2, sort_keys=True) + "\n"


def problems(registry: Registry, cp: Checkpoint, person_ok: PersonCheck | None = None) -> list[str]:
    """Why the current log does not extend ``cp`` (empty: it does). One line each.

    The checkpoint's own signature is checked with the key it names; that key must also be the registry's
    (genesis event) — or, for a person's checkpoint, the registry's key it records — so a log re-keyed by someone
    who could not sign with the original key fails; a person's checkpoint counts only if ``person_ok`` says the
    person may vouch."""
    where = "checkpoint"
    if cp.type != TYPE:
        return [f"{where}: unknown type {cp.type!r}"]
    try:
        public = registry_key.parse_registry_public_key(cp.public_key, where)
    except RegistryError as exc:
        return [f"{where}: {exc.what}"]
    if not registry_key.signature_ok(public, DOMAIN, cp.message(), cp.signature):
        return [f"{where}: its signature does not verify (the checkpoint itself was altered)"]
    if cp.signer:
        why = "nobody here can check who signed it" if person_ok is None else person_ok(cp.signer, cp.public_key)
        if why:
            return [f"{where}: signed by {cp.signer!r}, who may not vouch for it ({why})"]
    n = cp.sequence + 1
    if not registry.is_registry():
        return [f"{registry.root}: no registry log here, but the checkpoint records {n} event(s) (wiped or moved)"]
    if registry.log_path.is_symlink():
        return ["log.jsonl: a symbolic link (refused)"]
    lines = [raw for raw in registry.log_path.read_bytes().split(b"\n") if raw] if registry.log_path.exists() else []
    if not lines:
        return [f"log.jsonl: empty or missing, but the checkpoint records {n} event(s) (wiped)"]
    genesis = _parse(lines[0])
    if genesis is None or genesis.artifacts.get("registry_id") != cp.registry_id:
        return [f"log.jsonl line 1: not the genesis of registry {cp.registry_id} (a replaced registry)"]
    if genesis.artifacts.get("registry_public_key") != (cp.registry_key if cp.signer else cp.public_key):
        return ["log.jsonl line 1: the registry key differs from the one that signed the checkpoint (re-keyed log)"]
    if len(lines) < n:
        return [f"log.jsonl: {len(lines)} event(s), but the checkpoint records {n} (rolled back or truncated)"]
    at = _parse(lines[cp.sequence])
    if at is None or at.seq != cp.sequence or at.hash != cp.head or at.body_hash() != cp.head:
        return [
            f"log.jsonl line {n}: not the checkpoint's head {cp.head[:12]}… (the log up to it was rewritten, "
            "or lines were removed or swapped)"
        ]
    return []


def _parse(raw: bytes) -> Event | None:
    try:
        return Event.model_validate_json(raw)
    except ValueError:
        return None
