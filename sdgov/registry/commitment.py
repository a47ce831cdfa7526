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
    from sdgov.registry.log import Registry

SCHEME = "hmac-sha256"
"""How every published commitment is computed (the card names it)."""
SECRET_BYTES = 32

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


def registry_committer(registry: Registry, create: bool = True) -> Committer:
    """``commit`` bound to this registry's secret, made if it has none yet — unless ``create`` is False: a command
    that re-exports what a release published (``sdgov stage measure``) must commit under the same secret, so on a
    machine without it that is a one-line error, never a new secret."""
    store, registry_id = registry.keys, registry.registry_id()
    secret = load_or_create_secret(store, registry_id) if create else load_secret(store, registry_id)
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


def prove(registry: Registry, dataset: dict[str, object], values: dict[str, str]) -> dict[str, bool]:
    """Open a card's commitments to the data: for each kind in ``values`` (the controller's recomputed unkeyed
    hashes of a file: ``sha256``, ``dvc_md5``, and ``fingerprint`` when the schema is at hand), whether the card
    commits to exactly that value. What an auditor is shown is this answer, never the secret.

    One-line :class:`RegistryError` when the secret is not on this machine (a new one would open nothing) or the
    card predates commitments."""
    store, registry_id = registry.keys, registry.registry_id()
    secret = load_secret(store, registry_id)
    if secret is None:
        raise RegistryError(
            f"the commitment secret of registry {registry_id} is not on this machine, so no commitment can be opened",
            str(secret_path(store, registry_id)),
            f"restore it there from its backup, or set {COMMITMENT_SECRET} to where it is",
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
