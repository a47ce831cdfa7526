"""Ed25519 keys: an approver's identity is the private key only they hold (``cryptography`` does the maths).

Public keys are written in the approvers registry either as ``ed25519:<base64 of the 32 raw bytes>`` (what
``sdgov keygen`` prints) or as an OpenSSH line ``ssh-ed25519 AAAA… comment`` (a key people already have).
Private keys are PEM (PKCS#8, what ``sdgov keygen`` writes) or OpenSSH (``~/.ssh/id_ed25519``), unencrypted.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from sdgov.base.errors import SpecError


def public_line(key: Ed25519PublicKey) -> str:
    """The key as ``ed25519:<base64 of the 32 raw bytes>``: what ``sdgov keygen`` prints and the approvers registry
    holds."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "ed25519:" + base64.b64encode(raw).decode()


def key_fingerprint(key: Ed25519PublicKey) -> str:
    """SHA-256 of the raw public key (hex, first 16): names a key in the log without repeating it."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def published_fingerprint(key: Ed25519PublicKey) -> str:
    """``sha256:<64 hex>`` of the raw public key: the whole digest, for a key a controller publishes out of band and a
    stranger pins (``sdgov init`` prints it, every card states it, ``sdgov verify-release --public-key`` takes it)."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def keygen(private_key_file: str | Path) -> str:
    """Write a new Ed25519 private key (PEM, mode 600, never overwriting); return its public key line."""
    path = Path(private_key_file)
    key = write_new_private_key(
        path, SpecError(f"{path} already exists", str(path), "choose a new file name (a key is never overwritten)")
    )
    return public_line(key.public_key())


def write_new_private_key(path: Path, exists: Exception) -> Ed25519PrivateKey:
    """Generate a key and write it as PEM (PKCS#8) to a file created exclusively with mode 600 (its directory 700
    when made here); raise ``exists`` if the file is already there: a key is never overwritten, not even in a race."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise exists from None
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
        f.flush()
        os.fsync(f.fileno())
    return key


def decode_public_key(text: str, ssh: bool = True) -> Ed25519PublicKey | None:
    """``ed25519:BASE64`` (or, with ``ssh``, an ``ssh-ed25519 AAAA…`` line) → the key; None if it is not one."""
    text = text.strip()
    try:
        if ssh and text.startswith("ssh-ed25519 "):
            key = serialization.load_ssh_public_key(text.encode())
            return key if isinstance(key, Ed25519PublicKey) else None
        scheme, _, b64 = text.partition(":")
        if scheme != "ed25519":
            return None
        return Ed25519PublicKey.from_public_bytes(base64.b64decode(b64, validate=True))
    except (ValueError, TypeError):
        return None


def decode_private_key(data: bytes) -> Ed25519PrivateKey | None:
    """An unencrypted PEM (PKCS#8) or OpenSSH Ed25519 private key → the key; None if it is not one."""
    try:
        key = (
            serialization.load_ssh_private_key(data, password=None)
            if data.startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----")
            else serialization.load_pem_private_key(data, password=None)
        )
    except (ValueError, TypeError):
        return None
    return key if isinstance(key, Ed25519PrivateKey) else None


def parse_public_key(text: str, where: str) -> Ed25519PublicKey:
    """``ed25519:BASE64`` or ``ssh-ed25519 AAAA… [comment]`` → the key, or a one-line :class:`SpecError`."""
    key = decode_public_key(text)
    if key is None:
        raise SpecError(
            f"{text.strip()[:40]!r} is not an Ed25519 public key",
            where,
            "write 'ed25519:<base64>' (printed by 'sdgov keygen') or an 'ssh-ed25519 AAAA…' line",
        )
    return key


def load_private_key(private_key_file: str | Path) -> Ed25519PrivateKey:
    """The unencrypted Ed25519 private key in a PEM (PKCS#8) or OpenSSH file; a one-line SpecError if it cannot be read
    or is not one."""
    path = Path(private_key_file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read the key {path}: {exc.strerror}", str(path), "give your private key") from None
    key = decode_private_key(data)
    if key is None:
        raise SpecError(
            f"{path} is not an unencrypted Ed25519 private key", str(path), "make one with 'sdgov keygen --out KEY.pem'"
        )
    return key


def sign(private_key_file: str | Path, message: bytes) -> tuple[str, Ed25519PublicKey]:
    """Base64 Ed25519 signature of ``message``, and the public key that checks it."""
    key = load_private_key(private_key_file)
    return base64.b64encode(key.sign(message)).decode(), key.public_key()


def verifies(key: Ed25519PublicKey, signature_b64: str, message: bytes) -> bool:
    """Whether ``signature_b64`` is a valid base64 Ed25519 signature of ``message`` by ``key``; malformed base64 is
    False, not an error."""
    try:
        key.verify(base64.b64decode(signature_b64, validate=True), message)
        return True
    except (InvalidSignature, ValueError):
        return False
