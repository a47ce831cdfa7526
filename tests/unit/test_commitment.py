"""Keyed commitments (issue 25): the card names the confidential data by HMAC-SHA256 under a controller secret
kept outside the registry, never by an unkeyed hash an adversary could recompute for a guess."""

from __future__ import annotations

import hashlib
import stat

import pytest

from sdgov.base.errors import RegistryError
from sdgov.registry import commitment
from sdgov.registry.key import KeyStore
from sdgov.registry.log import Registry


def _registry(root):
    """A registry with its genesis (an id and a key), nothing else."""
    reg = Registry(root)
    reg.append("test", "t", "system")
    return reg


def test_the_secret_is_made_once_private_and_outside_the_registry(tmp_path, monkeypatch):
    monkeypatch.delenv("SDGOV_COMMITMENT_SECRET", raising=False)
    monkeypatch.setenv("SDGOV_KEY_DIR", str(tmp_path / "keys"))
    store = KeyStore.from_settings()
    path = commitment.secret_path(store, "r1")
    assert path == tmp_path / "keys" / "r1.commitment"  # beside the registry's signing key
    first = commitment.load_or_create_secret(store, "r1")
    assert len(first) == commitment.SECRET_BYTES and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert commitment.load_or_create_secret(store, "r1") == first  # never replaced: old commitments still open
    assert commitment.load_or_create_secret(store, "r2") != first  # one per registry


def test_a_commitment_is_keyed_and_tells_kinds_apart():
    sha = hashlib.sha256(b"the data").hexdigest()
    a, b = b"a" * 32, b"b" * 32
    assert commitment.hmac_commit(a, "sha256", sha) != sha
    assert commitment.hmac_commit(a, "sha256", sha) != commitment.hmac_commit(b, "sha256", sha)  # needs the secret
    assert commitment.hmac_commit(a, "sha256", sha) != commitment.hmac_commit(a, "fingerprint", sha)
    assert commitment.opens(a, "sha256", sha, commitment.hmac_commit(a, "sha256", sha).upper())
    assert not commitment.opens(b, "sha256", sha, commitment.hmac_commit(a, "sha256", sha))


def test_a_damaged_or_missing_secret_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SDGOV_COMMITMENT_SECRET", str(tmp_path / "secret"))
    (tmp_path / "secret").write_text("not hex\n")
    with pytest.raises(RegistryError, match="not 32 or more bytes in hex"):
        commitment.load_or_create_secret(KeyStore.from_settings(), "r1")
    (tmp_path / "secret").unlink()
    with pytest.raises(RegistryError, match="is not on this machine"):
        commitment.prove(_registry(tmp_path / "reg"), {"sha256_hmac": "00"}, {"sha256": "00"})


def test_a_re_export_never_makes_a_new_secret(tmp_path, monkeypatch):
    """A new secret would commit the same data to other values than the published release: refused in one line."""
    monkeypatch.delenv("SDGOV_COMMITMENT_SECRET", raising=False)
    monkeypatch.setenv("SDGOV_KEY_DIR", str(tmp_path / "keys"))
    reg = _registry(tmp_path / "reg")
    with pytest.raises(RegistryError, match="is not on this machine"):
        commitment.registry_committer(reg, create=False)
    assert not commitment.secret_path(reg.keys, reg.registry_id()).exists()
    made = commitment.registry_committer(reg)("sha256", "00")
    assert commitment.registry_committer(reg, create=False)("sha256", "00") == made
