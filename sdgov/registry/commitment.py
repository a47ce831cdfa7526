"""Keyed commitments: how a release names the confidential data without publishing a function of it.

An unkeyed hash of the records (the content fingerprint, :mod:`sdgov.data.fingerprint`) or of the file (sha256,
DVC md5) is an oracle: someone who knows every record but one tries each completion of the last record and
keeps the one whose hash is published. So what a release publishes in their place is a *commitment*:
HMAC-SHA256 under a secret the data controller keeps outside the registry. Without the secret no candidate can
be checked; with it the controller can still prove to an auditor which data a release came from
(``sdgov registry prove``: recompute the hash from the file, commit it, compare with the card). The unkeyed
values stay controller-side: the ledger keys its accounts and the draw-once store its statistics by them.

Where the secret lives, mirroring the registry's signing key (:mod:`sdgov.registry.key`'s :class:`KeyStore`,
resolved from the process's settings), never inside the registry and never published:

1. ``$SDGOV_COMMITMENT_SECRET`` — a file, if set;
2. else beside the signing key: ``$SDGOV_REGISTRY_KEY`` with the suffix ``.commitment`` if that is set, else
   ``$SDGOV_KEY_DIR/<registry id>.commitment``;
3. else ``$XDG_CONFIG_HOME/sdgov/keys/<registry id>.commitment`` (``~/.config/sdgov/keys/…``).

It is made on first use (32 random bytes, hex, mode 600, its directory 700), so a registry made before
commitments existed gets one at its next release. Losing it loses the power to open the commitments already
published (nothing else): back it up with the registry key.

**The secret has an identity.** Its id (:func:`secret_id`: a domain-separated SHA-256 of the secret, which says
nothing about it) is committed in the signed log when the secret is first used (``commitment_secret``), and again
when a controller rotates it (:mod:`sdgov.governance.secret`). From then on a missing secret is never made anew and
a replaced one is never used: :func:`registry_committer` refuses (one line), ``sdgov registry verify`` reports it
where the registry key is on the machine, releases stop until the secret is restored from its backup or rotated by
a signed event, and ``sdgov registry prove`` says "secret replaced" instead of "other data" for a release committed
under another secret.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sdgov.base.errors import RegistryError
from sdgov.base.settings import COMMITMENT_SECRET
from sdgov.registry.key import KeyStore

if TYPE_CHECKING:
    from sdgov.registry.log import Event, Registry

SCHEME = "hmac-sha256"
"""How every published commitment is computed (the card names it)."""
SECRET_BYTES = 32
SECRET_EVENT = "commitment_secret"  # the log's record of the secret in force: its id (made, adopted or rotated)
ID_DOMAIN = b"sdgov-commitment-secret-id:v1\x00"

Committer = Callable[[str, str], str]
"""``commit(kind, value)`` → the published commitment of ``value`` (see :func:`hmac_commit`)."""


def secret_path(store: KeyStore, registry_id: str) -> Path:
    """Where the commitment secret of registry ``registry_id`` is (or will be written): beside its signing key."""
    return store.secret_path(registry_id)


def _parse(raw: bytes, path: Path) -> bytes:
    try:
        secret = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        secret = b""
    if len(secret) < SECRET_BYTES:
        raise RegistryError(
            f"the commitment secret is not {SECRET_BYTES} or more bytes in hex",
            str(path),
            "restore the registry's commitment secret from its backup",
        )
    return secret


def load_secret(store: KeyStore, registry_id: str) -> bytes | None:
    """The secret of this registry, or None if it is not on this machine."""
    path = secret_path(store, registry_id)
    return _parse(path.read_bytes(), path) if path.is_file() else None


def load_or_create_secret(store: KeyStore, registry_id: str) -> bytes:
    """The secret, made now (exclusively, mode 600) if this registry has none yet; two runs racing agree on one."""
    if not registry_id:
        raise RegistryError("no registry id, so no commitment secret", "registry.json", "create the registry first")
    found = load_secret(store, registry_id)
    if found is not None:
        return found
    path = secret_path(store, registry_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another run made it first: use theirs
        return _parse(path.read_bytes(), path)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(SECRET_BYTES) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return _parse(path.read_bytes(), path)


def hmac_commit(secret: bytes, kind: str, value: str) -> str:
    """HMAC-SHA256 (hex) of ``kind NUL value``: the kind (``fingerprint``, ``sha256``, ``dvc_md5``, ``statistic``)
    keeps a commitment to one kind of value from passing for another."""
    return hmac.new(secret, kind.encode() + b"\x00" + value.encode(), hashlib.sha256).hexdigest()


def secret_id(secret: bytes) -> str:
    """The secret's public identity: a domain-separated SHA-256 (32 hex characters) of 32 random bytes, which
    tells one secret from another and nothing about either."""
    return hashlib.sha256(ID_DOMAIN + secret).hexdigest()[:32]


def logged_secret(events: list[Event], before: int | None = None) -> tuple[str, int] | None:
    """The id of the secret in force as the log records it (before event ``before``, when given) and the log line
    that committed it; None when the log names none (a registry older than secret ids, or none used yet)."""
    for e in reversed(events):
        if e.event == SECRET_EVENT and (before is None or e.seq < before):
            return e.artifacts.get("secret_id", ""), e.seq + 1
    return None


ROTATE = "sdgov registry rotate-secret"


def secret_problem(registry: Registry, events: list[Event] | None = None) -> str | None:
    """Why the secret on this machine is not the one the log committed ("missing", "replaced"), or None."""
    events = registry.events() if events is None else events
    logged = logged_secret(events)
    if logged is None:
        return None
    rid = registry.registry_id()
    found = load_secret(registry.keys, rid)
    if found is None:
        return (
            f"commitment secret missing: the log committed secret {logged[0][:12]}… (line {logged[1]}) and it is "
            f"not at {secret_path(registry.keys, rid)}; releases stop until it is restored or rotated"
        )
    if secret_id(found) != logged[0]:
        return (
            f"commitment secret replaced: {secret_path(registry.keys, rid)} is secret {secret_id(found)[:12]}…, "
            f"not {logged[0][:12]}… committed at line {logged[1]}; releases stop until it is restored or rotated"
        )
    return None


def registry_committer(registry: Registry, create: bool = True) -> Committer:
    """``commit`` bound to this registry's secret — the one its log commits to. With ``create`` (the measure stage)
    a registry whose log names no secret yet gets one (made if need be) and its id committed in the log; a secret
    the log committed is never made anew, nor replaced: a missing or replaced one is a one-line refusal naming the
    fix (restore it, or rotate it by a signed event). Without ``create`` (a command that re-exports or re-reads
    what a release published) nothing is made or logged."""
    store, registry_id = registry.keys, registry.registry_id()
    problem = secret_problem(registry)
    if problem is not None:
        raise RegistryError(
            problem,
            str(secret_path(store, registry_id)),
            f"restore the registry's commitment secret from its backup, or rotate it: '{ROTATE}' (a controller's "
            "signed act)",
        )
    secret = load_secret(store, registry_id)
    if create and logged_secret(registry.events()) is None:
        with registry.lock():  # made and committed in one step: two runs racing commit one secret
            secret = load_or_create_secret(store, registry_id)
            if logged_secret(registry.events()) is None:
                registry.append_locked(
                    SECRET_EVENT,
                    "sdgov",
                    "system",
                    comment="the commitment secret in force (its id; the secret stays with the controller)",
                    artifacts={"secret_id": secret_id(secret), "previous_secret_id": ""},
                )
    if secret is None:
        raise RegistryError(
            f"the commitment secret of registry {registry_id} is not on this machine",
            str(secret_path(store, registry_id)),
            f"restore it there from its backup, or set {COMMITMENT_SECRET} to where it is",
        )
    return lambda kind, value: hmac_commit(secret, kind, value)


def opens(secret: bytes, kind: str, value: str, published: str) -> bool:
    """True when ``published`` is the commitment of ``value`` (constant-time comparison)."""
    return hmac.compare_digest(hmac_commit(secret, kind, value), published.lower())


PUBLISHED = {"fingerprint": "fingerprint_hmac", "sha256": "sha256_hmac", "dvc_md5": "dvc_md5_hmac"}
"""Each kind of hash of the confidential data → the key of its commitment in a card's ``dataset``."""


class SecretReplaced(RegistryError):
    """The release was committed under another secret than this machine's: its commitments cannot be opened here
    (which says nothing about the data)."""


def prove(
    registry: Registry, dataset: dict[str, object], values: dict[str, str], released_at: int | None = None
) -> dict[str, bool]:
    """Open a card's commitments to the data: for each kind in ``values`` (the controller's recomputed unkeyed
    hashes of a file: ``sha256``, ``dvc_md5``, and ``fingerprint`` when the schema is at hand), whether the card
    commits to exactly that value. What an auditor is shown is this answer, never the secret.

    One-line :class:`RegistryError` when the secret is not on this machine (a new one would open nothing) or the
    card predates commitments; :class:`SecretReplaced` when the log shows the release (its ``released`` event at
    ``released_at``) was committed under another secret than the one here — "secret replaced", not "other data"."""
    store, registry_id = registry.keys, registry.registry_id()
    secret = load_secret(store, registry_id)
    if secret is None:
        raise RegistryError(
            f"the commitment secret of registry {registry_id} is not on this machine, so no commitment can be opened",
            str(secret_path(store, registry_id)),
            f"restore it there from its backup, or set {COMMITMENT_SECRET} to where it is",
        )
    used = logged_secret(registry.events(), before=released_at) if released_at is not None else None
    if used is not None and used[0] != secret_id(secret):
        raise SecretReplaced(
            f"secret replaced: the release was committed under secret {used[0][:12]}… (log line {used[1]}), this "
            f"machine holds {secret_id(secret)[:12]}…; nothing is said about the data",
            str(secret_path(store, registry_id)),
            "restore that secret from its backup to prove the release",
        )
    if not any(isinstance(dataset.get(key), str) for key in PUBLISHED.values()):
        raise RegistryError(
            "this release's card names its data by no keyed commitment (published before commitments existed)",
            "card.json",
            "prove it from the controller's evidence instead",
        )
    return {
        kind: isinstance(dataset.get(PUBLISHED[kind]), str)
        and opens(secret, kind, value, str(dataset[PUBLISHED[kind]]))
        for kind, value in values.items()
    }
