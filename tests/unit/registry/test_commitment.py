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


def test_the_secret_has_an_identity_in_the_log_and_is_never_made_anew(tmp_path, monkeypatch):
    """Issue 38 item 6: the first use commits the secret's id; a lost secret is refused (never silently re-made) and
    reported by verify; a replaced one too; a sandbox's rotation logs the new one; a restored one works again."""
    from sdgov.governance.secret import rotate

    monkeypatch.delenv("SDGOV_COMMITMENT_SECRET", raising=False)
    reg = _registry(tmp_path / "reg")
    commit = commitment.registry_committer(reg)  # first use: made, and its id committed
    [made] = [e for e in reg.events() if e.event == commitment.SECRET_EVENT]
    path = commitment.secret_path(reg.keys, reg.registry_id())
    original = path.read_bytes()
    assert made.artifacts["secret_id"] == commitment.secret_id(commitment.load_secret(reg.keys, reg.registry_id()))
    assert original.decode().strip() not in (tmp_path / "reg" / "log.jsonl").read_text()  # the id, never the secret
    assert reg.verify() == []

    path.unlink()  # lost
    with pytest.raises(RegistryError, match="commitment secret missing") as exc:
        commitment.registry_committer(reg)
    assert "rotate-secret" in exc.value.one_line() and not path.exists(), "never made anew"
    assert [p for p in reg.verify() if "commitment secret missing" in p]

    path.write_text("ab" * 32 + "\n")  # replaced by another secret
    with pytest.raises(RegistryError, match="commitment secret replaced"):
        commitment.registry_committer(reg)
    assert [p for p in reg.verify() if "commitment secret replaced" in p]

    path.write_bytes(original)  # restored from its backup
    assert reg.verify() == [] and commitment.registry_committer(reg)("sha256", "00") == commit("sha256", "00")

    path.unlink()  # lost for good: a sandbox registry rotates (the registry key's act; with approvers a controller's)
    rotated = rotate(reg)
    assert rotated.artifacts["previous_secret_id"] == made.artifacts["secret_id"] and reg.verify() == []
    assert commitment.registry_committer(reg)("sha256", "00") != commit("sha256", "00")
    with pytest.raises(RegistryError, match="nothing to rotate"):
        rotate(reg)


def test_prove_says_secret_replaced_not_other_data(tmp_path, monkeypatch):
    monkeypatch.delenv("SDGOV_COMMITMENT_SECRET", raising=False)
    reg = _registry(tmp_path / "reg")
    commit = commitment.registry_committer(reg)
    card = {"sha256_hmac": commit("sha256", "ab" * 32)}
    (tmp_path / "a.txt").write_text("synthetic")
    reg.publish("r1", {"a.txt": tmp_path / "a.txt"}, {}, actor="C", role="controller")
    released_at = reg.events()[-1].seq
    assert commitment.prove(reg, card, {"sha256": "ab" * 32}, released_at) == {"sha256": True}
    assert commitment.prove(reg, card, {"sha256": "cd" * 32}, released_at) == {"sha256": False}  # other data
    commitment.secret_path(reg.keys, reg.registry_id()).unlink()
    from sdgov.governance.secret import rotate

    rotate(reg)
    with pytest.raises(commitment.SecretReplaced, match="secret replaced"):
        commitment.prove(reg, card, {"sha256": "ab" * 32}, released_at)
