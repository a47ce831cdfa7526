"""The registry's signing key: an Ed25519 key kept *outside* the registry directory.

Every event of the registry log is signed with it (:mod:`sdgov.registry.log`), and so is every checkpoint
(:mod:`sdgov.registry.checkpoint`). Someone who can write the registry directory but not this key cannot append, edit or
re-chain an event without the signatures failing; with a checkpoint published elsewhere they cannot roll back,
wipe or re-key the log either.

Where the private key lives (never inside the registry; the registry only records the *public* key) is a
:class:`KeyStore`, resolved from the process's settings (:mod:`sdgov.base.settings`) where it starts:

1. ``$SDGOV_REGISTRY_KEY`` — a PEM file, if set;
2. else ``$SDGOV_KEY_DIR/<registry id>.pem``;
3. else ``$XDG_CONFIG_HOME/sdgov/keys/<registry id>.pem`` (``~/.config/sdgov/keys/…``).

The location is deliberately taken from the settings only, never from the registry's own configuration: a
registry that could name its own key could name an attacker's.
"""

from __future__ import annotations

import base64
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from sdgov.base.errors import RegistryError
from sdgov.base.model import Frozen
from sdgov.base.settings import KEY_DIR, REGISTRY_KEY, Settings, load_settings
from sdgov.identity import keys


class KeyStore(Frozen):
    """Where a registry's signing key and commitment secret are kept, outside the registry."""

    key_dir: Path
    registry_key: Path | None = None  # one key file for the registry (``$SDGOV_REGISTRY_KEY``)
    commitment_secret: Path | None = None  # one secret file for the registry (``$SDGOV_COMMITMENT_SECRET``)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> KeyStore:
        """The store the settings name (the process's, read now, when none are given)."""
        s = settings or load_settings()
        return cls(key_dir=s.key_dir(), registry_key=s.registry_key(), commitment_secret=s.commitment_secret())

    def key_path(self, registry_id: str) -> Path:
        """Where the private key of registry ``registry_id`` is (or will be written)."""
        return self.registry_key or self.key_dir / f"{registry_id}.pem"

    def secret_path(self, registry_id: str) -> Path:
        """Where its commitment secret is (or will be written): the named file, else beside the signing key."""
        return self.commitment_secret or self.key_path(registry_id).with_suffix(".commitment")


def parse_registry_public_key(text: str, where: str) -> Ed25519PublicKey:
    """The registry's public key, in the ``ed25519:<base64>`` form :func:`sdgov.identity.keys.public_line` writes."""
    key = keys.decode_public_key(text, ssh=False)
    if key is None:
        raise RegistryError(
            f"registry public key {text[:24]!r} is not 'ed25519:<base64 of 32 bytes>'",
            where,
            "the registry's genesis event and registry.json must name its Ed25519 public key",
        )
    return key


def create(store: KeyStore, registry_id: str) -> Ed25519PrivateKey:
    """A new key for a new registry, written to its :meth:`KeyStore.key_path` (mode 600, directory 700). Never
    overwrites."""
    path = store.key_path(registry_id)
    return keys.write_new_private_key(
        path,
        RegistryError(
            "a registry signing key already exists for this registry id",
            str(path),
            f"a new registry never reuses a key: point {KEY_DIR} at an empty directory",
        ),
    )


def load_registry_key(store: KeyStore, registry_id: str) -> Ed25519PrivateKey | None:
    """The private key of this registry, or None if it is not on this machine, or not readable by this user
    (verification still works)."""
    path = store.key_path(registry_id)
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
        return None
    key = keys.decode_private_key(raw)
    if key is None:
        raise RegistryError(
            "the registry signing key is not an unencrypted Ed25519 private key",
            str(path),
            "restore the registry's key from its backup",
        )
    return key


def require(store: KeyStore, registry_id: str) -> Ed25519PrivateKey:
    """The private key, needed to append to the log; a one-line error where it is missing."""
    key = load_registry_key(store, registry_id)
    if key is None:
        raise RegistryError(
            f"the signing key of registry {registry_id} is not on this machine, so nothing can be appended to its log",
            str(store.key_path(registry_id)),
            f"restore the key there from its backup, or set {KEY_DIR} / {REGISTRY_KEY} to where it is",
        )
    return key


class Signer:
    """A registry signing on its own behalf outside its log (a budget authority's rows): its id, its public key
    (``ed25519:<base64>``) and its private key."""

    def __init__(self, registry_id: str, key: Ed25519PrivateKey) -> None:
        self.registry_id = registry_id
        self.public_key = keys.public_line(key.public_key())
        self._key = key

    def sign(self, domain: str, message: bytes) -> str:
        """Base64 Ed25519 signature of ``message`` in ``domain`` (:func:`sign_framed`)."""
        return sign_framed(self._key, domain, message)


def _framed(domain: str, message: bytes) -> bytes:
    """``domain NUL message``: the domain keeps an event's signature from being passed off as a checkpoint's and
    vice versa."""
    return domain.encode() + b"\x00" + message


def sign_framed(key: Ed25519PrivateKey, domain: str, message: bytes) -> str:
    """Base64 Ed25519 signature of ``message`` in ``domain``."""
    return base64.b64encode(key.sign(_framed(domain, message))).decode()


def signature_ok(public: Ed25519PublicKey, domain: str, message: bytes, signature: str) -> bool:
    return keys.verifies(public, signature, _framed(domain, message))


def registry_fingerprint(public_key: str, where: str) -> str:
    """The published fingerprint (``sha256:…``) of a registry's public key (``ed25519:…``, as its config holds it):
    what ``sdgov init`` prints, every card states and a stranger pins to verify its releases
    (:mod:`sdgov.channel.pins`)."""
    return keys.published_fingerprint(parse_registry_public_key(public_key, where))
