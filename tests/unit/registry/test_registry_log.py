"""The registry log: signed by a key kept outside the registry, anchored by checkpoints, the only source of the
ledger, and robust to a wrong --root and to a crash while a release is staged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sdgov.base.errors import RegistryError, SdgovError
from sdgov.commands import main
from sdgov.identity import keys
from sdgov.registry import checkpoint
from sdgov.registry import key as registry_key
from sdgov.registry.log import EVENT_DOMAIN, LogBroken, Registry
from tests.fixtures.ledger import RHO, measure_only, registry_with_lifetime, spec_at
from tests.governance import controller_registry, sign_standing_approval


def _registry(root: Path, n: int = 3) -> Registry:
    reg = Registry(root)
    for i in range(n):
        reg.append("note", "Ada Analyst", "analyst", comment=f"event {i}")
    return reg


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_event_is_signed_by_a_key_kept_outside_the_registry(tmp_path):
    root = tmp_path / "registry"
    reg = _registry(root)
    events = reg.events()
    genesis, rid = events[0], reg.registry_id()
    assert genesis.event == "registry_created" and genesis.artifacts["registry_id"] == rid
    key_file = reg.keys.key_path(rid)
    assert key_file.is_file() and root.resolve() not in key_file.resolve().parents
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    public = keys.public_line(registry_key.require(reg.keys, rid).public_key())
    assert (
        genesis.artifacts["registry_public_key"]
        == public
        == json.loads((root / "registry.json").read_text())["public_key"]
    )
    pk = registry_key.parse_registry_public_key(public, "test")
    assert all(registry_key.signature_ok(pk, EVENT_DOMAIN, e.hash.encode(), e.sig) for e in events)
    assert not any(b"PRIVATE KEY" in p.read_bytes() for p in root.rglob("*") if p.is_file())
    assert reg.verify() == []


def test_without_the_key_nothing_is_appended_but_anyone_can_verify(tmp_path, monkeypatch):
    root = tmp_path / "registry"
    reg = _registry(root)
    monkeypatch.setenv("SDGOV_KEY_DIR", str(tmp_path / "elsewhere"))  # a process whose settings name other keys
    reg = Registry(root)
    with pytest.raises(RegistryError, match="signing key of registry .* is not on this machine"):
        reg.append("note", "Mallory", "analyst")
    assert len(reg.events()) == 4 and reg.verify() == []


def test_an_event_signed_with_another_key_fails(tmp_path):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    root = tmp_path / "registry"
    reg = _registry(root)
    lines = (root / "log.jsonl").read_text().splitlines()
    e = json.loads(lines[2])
    e["sig"] = registry_key.sign_framed(Ed25519PrivateKey.generate(), EVENT_DOMAIN, e["hash"].encode())
    lines[2] = json.dumps(e, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    (root / "log.jsonl").write_text("\n".join(lines) + "\n")
    assert reg.verify() == ["log.jsonl line 3: registry signature does not verify (forged, edited or re-chained)"]


def test_a_broken_log_refuses_every_spend_with_one_line(tmp_path, capsys):
    """The issue's attack: delete one budget_spent line, and a release the intact ledger refuses would go out."""
    root = tmp_path / "registry"
    registry_with_lifetime(root, 2.5 * RHO)
    measure_only(spec_at(tmp_path, 1), root)
    measure_only(spec_at(tmp_path, 2, rho=1.01 * RHO), root)  # another σ: new statistics, a second spend
    drawn = sorted((root / "measurements").glob("*.json"))
    lines = (root / "log.jsonl").read_text().splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if '"event":"budget_spent"' in line)
    (root / "log.jsonl").write_text("".join(lines[:i] + lines[i + 1 :]))
    with pytest.raises(LogBroken, match=rf"the registry log is broken at line {i + 1} \(chain broken"):
        measure_only(spec_at(tmp_path, 3, rho=1.02 * RHO), root)
    assert sorted((root / "measurements").glob("*.json")) == drawn, "no noise drawn"
    code, out, err = _cli(capsys, "budget", "--root", str(root))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("sdgov: error: ")
    assert f"the registry log is broken at line {i + 1}" in err and "run 'sdgov registry verify" in err


def test_an_unrecorded_policy_edit_refuses_spends_until_a_controller_signs_it_in(tmp_path, capsys):
    root = tmp_path / "registry"
    registry_with_lifetime(root, 1.5 * RHO)
    keys = controller_registry(root, tmp_path / "keys")  # approvers and budgets adopted by Carl's signed commit

    def spec(seed: int, **kw):  # with an approvers registry in force, the standing approval must be signed
        path = spec_at(tmp_path, seed, **kw)
        sign_standing_approval(path, root, keys)
        return path

    measure_only(spec(1), root)
    registry_with_lifetime(root, 10 * RHO)  # edited by someone with write access to the registry
    # refused before any draw: the controller-file check (standing approval) or the ledger's policy check
    with pytest.raises(SdgovError, match="changed without a signed commit: policy.yaml|the budget policy changed"):
        measure_only(spec(2, rho=1.01 * RHO), root)
    assert "policy.yaml: changed" in Registry(root).verify()[0]
    code, _, err = _cli(capsys, "approvers", "commit", "--root", str(root), "--as", "Ada Analyst", "--key",
                        str(keys["Ada Analyst"]))  # fmt: skip
    assert code == 2 and "not a data controller" in err
    code, _, err = _cli(capsys, "approvers", "commit", "--root", str(root), "--as", "Carl Controller", "--key",
                        str(keys["Carl Controller"]))  # fmt: skip
    assert code == 0, err
    measure_only(spec(2, rho=1.01 * RHO), root)
    assert Registry(root).verify() == []
    (root / "policy.yaml").unlink()  # deleting the policy is a change too
    assert "policy.yaml: deleted" in Registry(root).verify()[0]
    with pytest.raises(SdgovError, match="policy"):
        measure_only(spec(3, rho=1.02 * RHO), root)


@pytest.mark.parametrize("kind", ["missing", "file", "empty dir", "some other dir"])
def test_verify_refuses_what_is_not_a_registry(kind, tmp_path, capsys):
    root = tmp_path / "r"
    if kind == "file":
        root.write_text("not a registry\n")
    elif kind != "missing":
        root.mkdir()
        if kind == "some other dir":
            (root / "notes.txt").write_text("x")
            (root / "releases").mkdir()
    code, out, err = _cli(capsys, "registry", "verify", "--root", str(root))
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("sdgov: error: ")
    assert "registry" in err and "ok" not in err.split(" — ")[0]
    assert not (root / "log.jsonl").exists()


def test_a_crashed_publication_is_reported_stale_then_removed(tmp_path, capsys):
    root = tmp_path / "registry"
    reg = _registry(root, 1)
    staging = root / "releases" / ".staging-demo-1"
    staging.mkdir(parents=True)
    (staging / "synthetic.parquet").write_bytes(b"half")
    (staging / "synthetic.parquet").chmod(0o444)
    code, out, _ = _cli(capsys, "registry", "verify", "--root", str(root))
    assert code == 0 and "stale: releases/.staging-demo-1" in out and "sdgov registry recover" in out
    code, out, _ = _cli(capsys, "registry", "recover", "--root", str(root))
    assert code == 0 and out.startswith("removed releases/.staging-demo-1") and not staging.exists()
    # the next publication clears one too, and verify stays clean
    staging.mkdir()
    src = tmp_path / "a.txt"
    src.write_text("a\n")
    reg.publish("demo-2", {"a.txt": src}, {}, actor="Carl Controller", role="controller")
    assert not staging.exists() and reg.verify() == [] and reg.stale_staging() == []


def test_a_checkpoint_is_extended_by_later_events_and_rollback_is_caught(tmp_path, capsys):
    root = tmp_path / "registry"
    reg = _registry(root, 2)
    cp_file = tmp_path / "outside" / "cp.json"
    assert _cli(capsys, "registry", "checkpoint", "--root", str(root), "--out", str(cp_file))[0] == 0
    cp = checkpoint.load_checkpoint(cp_file)
    assert (cp.sequence, cp.head, cp.registry_id) == (2, reg.events()[-1].hash, reg.registry_id())
    reg.append("note", "Ada Analyst", "analyst")  # the log grows: still extends the checkpoint
    code, out, _ = _cli(capsys, "registry", "verify", "--root", str(root), "--checkpoint", str(cp_file))
    assert code == 0 and "extends checkpoint event 2" in out
    lines = (root / "log.jsonl").read_text().splitlines(keepends=True)
    (root / "log.jsonl").write_text("".join(lines[:2]))  # back to an earlier (intact, signed) prefix
    assert reg.verify() == [], "a rollback to a signed prefix is invisible without the checkpoint"
    code, out, _ = _cli(capsys, "registry", "verify", "--root", str(root), "--checkpoint", str(cp_file))
    assert code == 1 and "rolled back or truncated" in out
    code, _, err = _cli(capsys, "registry", "verify", "--root", str(root), "--checkpoint", str(tmp_path / "nope"))
    assert code == 2 and "cannot read the checkpoint" in err


def test_a_registry_json_without_its_log_is_not_silently_restarted(tmp_path):
    root = tmp_path / "registry"
    reg = _registry(root, 1)
    os.remove(root / "log.jsonl")
    with pytest.raises(RegistryError, match="its log is missing or empty"):
        reg.append("note", "Ada Analyst", "analyst")
    assert any("missing" in p for p in reg.verify())


def test_a_process_killed_while_staging_a_release_does_not_fail_verify_for_ever(tmp_path, capsys):
    """The issue's report: a crash mid-publication left .staging-* and verify failed even after a good re-run."""
    root = tmp_path / "registry"
    _registry(root, 1)
    src = tmp_path / "a.txt"
    src.write_text("a\n")
    child = textwrap.dedent(
        f"""
        import os
        from sdgov.registry.log import Registry
        os.rename = lambda *a: os._exit(9)  # dies like kill -9 at the worst moment: staged, not yet renamed
        Registry({str(root)!r}).publish("demo-1", {{"a.txt": {str(src)!r}}}, {{}}, actor="C", role="controller")
        """
    )
    assert subprocess.run([sys.executable, "-c", child], env=os.environ).returncode == 9
    assert (root / "releases" / ".staging-demo-1").is_dir() and not (root / "releases" / "demo-1").exists()
    code, out, _ = _cli(capsys, "registry", "verify", "--root", str(root))
    assert code == 0 and "stale: releases/.staging-demo-1" in out
    Registry(root).publish("demo-1", {"a.txt": src}, {}, actor="C", role="controller")  # the re-run
    code, out, _ = _cli(capsys, "registry", "verify", "--root", str(root), "--json")
    assert code == 0 and json.loads(out)["stale"] == [] and json.loads(out)["problems"] == []


def test_a_full_disk_is_one_line_naming_the_file_and_leaves_the_log_whole(tmp_path, monkeypatch, capsys):
    """Issue 38: the writes the site owns (an atomic file, the log's append) on a full file system are one line
    naming the path, never a traceback; the log keeps no half line."""
    import errno
    import os

    from sdgov.base.atomic import atomic_write_bytes
    from sdgov.base.errors import DiskFull
    from sdgov.commands import main

    root = tmp_path / "registry"
    reg = _registry(root)
    before = (root / "log.jsonl").read_bytes()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(DiskFull) as exc:
        reg.append("note", "Carl", "controller")
    assert str(root / "log.jsonl") in exc.value.one_line() and "no space left" in exc.value.one_line()
    assert (root / "log.jsonl").read_bytes() == before, "no half line"
    with pytest.raises(DiskFull, match="cp.json"):
        atomic_write_bytes(tmp_path / "out" / "cp.json", b"{}")
    assert not list((tmp_path / "out").iterdir()), "no temporary file left"
    code = main(["registry", "checkpoint", "--root", str(root), "--out", str(tmp_path / "out" / "cp.json")])
    err = capsys.readouterr().err
    [line] = err.strip().splitlines()
    assert code == 2 and "cp.json" in line and "no space left" in line and "Traceback" not in err
    monkeypatch.undo()
    assert reg.verify() == []
