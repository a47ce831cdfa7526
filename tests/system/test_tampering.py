"""Seventeen ways an attacker with write access to the registry (but not to its signing key, kept outside it)
might rewrite history, each caught by ``sdgov registry verify --checkpoint`` with a one-line reason.

The checkpoint is taken right after a real release through the Prefect flow and kept outside the registry, as
compliance would keep it. Every scenario works on its own copy of that registry. Re-chaining attackers
recompute every hash so the chain itself is intact — only what they cannot do (sign with the registry key, or
change the checkpoint) gives them away.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from sdgov.base.hashing import canonical_json, sha256_bytes, sha256_file
from sdgov.commands import main
from sdgov.governance.site import Site
from sdgov.registry.log import Registry
from tests.conftest import init_registry, make_demo_inputs

LIFETIME = 5.0


@pytest.fixture(scope="module")
def anchored(tmp_path_factory, prefect_server):
    """A registry with a budget policy and one real release, and a checkpoint of it kept outside."""
    from sdgov.flows.release import release_flow

    base = tmp_path_factory.mktemp("anchored")
    root = init_registry(base / "registry", lifetime_rho=LIFETIME)  # the controller's policy, adopted at init
    result = release_flow(spec_path=str(make_demo_inputs(base / "in", rows=1500)), registry_root=str(root))
    cp = base / "outside" / "checkpoint.json"
    assert main(["registry", "checkpoint", "--root", str(root), "--out", str(cp)]) == 0
    return {"root": root, "checkpoint": cp, "release": Path(result.path).name}


# ------------------------------------------------------------------------------------------ attacker tools


def _events(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "log.jsonl").read_text().splitlines()]


def _write_events(root: Path, events: list[dict], sign: Callable[[str], str] | None = None) -> None:
    """Re-number and re-chain every event (hash over everything but hash and sig), as an attacker can. Without
    the registry key the old signatures stay (they no longer verify); ``sign`` is the attacker's own key."""
    prev = "0" * 64
    lines = []
    for i, e in enumerate(events):
        e = {**e, "seq": i, "prev": prev}
        e["hash"] = sha256_bytes(canonical_json({k: v for k, v in e.items() if k not in ("hash", "sig")}))
        if sign is not None:
            e["sig"] = sign(e["hash"])
        prev = e["hash"]
        lines.append(canonical_json(e))
    (root / "log.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def _writable(path: Path) -> Path:
    path.chmod(0o644)
    return path


def _rewrite_released_file(root: Path, rid: str, name: str, data: bytes, events: list[dict]) -> None:
    """Replace a released file and fix up its manifest and the 'released' event to match."""
    d = root / "releases" / rid
    _writable(d / name).write_bytes(data)
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["files"][name] = {"sha256": sha256_file(d / name), "bytes": len(data)}
    mbytes = json.dumps(manifest, sort_keys=True, indent=2).encode() + b"\n"
    _writable(d / "manifest.json").write_bytes(mbytes)
    released = next(e for e in events if e["event"] == "released")
    released["artifacts"] = {
        **released["artifacts"],
        name: sha256_file(d / name),
        "manifest.json": sha256_bytes(mbytes),
    }


def _event(events: list[dict], name: str) -> dict:
    return next(e for e in events if e["event"] == name)


# ------------------------------------------------------------------------------------------ the scenarios


def rewrite_file_manifest_and_event(root: Path, rid: str, tmp: Path) -> None:
    events = _events(root)
    _rewrite_released_file(root, rid, "synthetic.parquet", b"PAR1 forged rows PAR1", events)
    _write_events(root, events)


def rename_the_approver(root: Path, rid: str, tmp: Path) -> None:
    events = _events(root)
    for e in events:
        if e["actor"] == "Carl Controller":
            e["actor"] = "Mallory Made-Up"
    _write_events(root, events)


def roll_back_to_an_earlier_prefix(root: Path, rid: str, tmp: Path) -> None:
    events = _events(root)
    keep = next(i for i, e in enumerate(events) if e["event"] == "measured")
    _write_events(root, events[: keep + 1])  # the release (and its budget) never happened
    shutil.rmtree(root / "releases")


def delete_budget_spent(root: Path, rid: str, tmp: Path) -> None:
    _write_events(root, [e for e in _events(root) if e["event"] != "budget_spent"])


def shrink_budget_spent(root: Path, rid: str, tmp: Path) -> None:
    events = _events(root)
    spent = _event(events, "budget_spent")
    spent["comment"] = json.dumps({**json.loads(spent["comment"]), "rho": 1e-6}, sort_keys=True)
    _write_events(root, events)


def raise_the_lifetime_budget(root: Path, rid: str, tmp: Path) -> None:
    policy = yaml.safe_load((root / "policy.yaml").read_text())
    policy["defaults"]["lifetime_rho"] = 1000.0
    _writable(root / "policy.yaml").write_text(yaml.safe_dump(policy))


def replace_noisy_counts(root: Path, rid: str, tmp: Path) -> None:
    events = _events(root)
    measured = _event(events, "measured")
    name = sorted(measured["artifacts"])[0]  # one stored noisy marginal (one file per statistic)
    forged = (root / name).read_bytes().replace(b"1", b"2")
    (root / name).write_bytes(forged)
    measured["artifacts"] = {**measured["artifacts"], name: sha256_bytes(forged)}
    released = root / "releases" / rid / "artifacts" / "measurements.json"
    _rewrite_released_file(root, rid, "artifacts/measurements.json", released.read_bytes().replace(b"1", b"2"), events)
    _write_events(root, events)


def forge_a_whole_release(root: Path, rid: str, tmp: Path) -> None:
    forged = "forged-release"
    shutil.copytree(root / "releases" / rid, root / "releases" / forged)
    events = _events(root)
    events.append({**_event(events, "released"), "release_id": forged, "sig": ""})
    _write_events(root, events)


def wipe_the_registry(root: Path, rid: str, tmp: Path) -> None:
    for p in root.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def symlink_a_released_file(root: Path, rid: str, tmp: Path) -> None:
    target = root / "releases" / rid / "synthetic.parquet"
    copy = tmp / "editable.parquet"
    shutil.copyfile(target, copy)
    (root / "releases" / rid).chmod(0o755)
    target.unlink()
    target.symlink_to(copy)  # same bytes today, editable tomorrow


def flip_a_byte_of_the_log(root: Path, rid: str, tmp: Path) -> None:
    data = bytearray((root / "log.jsonl").read_bytes())
    data[len(data) // 2] ^= 0x01
    (root / "log.jsonl").write_bytes(bytes(data))


def delete_a_log_line(root: Path, rid: str, tmp: Path) -> None:
    lines = (root / "log.jsonl").read_text().splitlines(keepends=True)
    (root / "log.jsonl").write_text("".join(lines[:2] + lines[3:]))


def swap_two_log_lines(root: Path, rid: str, tmp: Path) -> None:
    lines = (root / "log.jsonl").read_text().splitlines(keepends=True)
    lines[2], lines[3] = lines[3], lines[2]
    (root / "log.jsonl").write_text("".join(lines))


def append_a_forged_event(root: Path, rid: str, tmp: Path) -> None:
    events = _events(root)
    events.append({**events[-1], "event": "policy_changed", "comment": "budget reset", "sig": ""})
    _write_events(root, events)


def flip_a_byte_of_a_released_file(root: Path, rid: str, tmp: Path) -> None:
    p = _writable(root / "releases" / rid / "card.md")
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))


def re_key_the_whole_log(root: Path, rid: str, tmp: Path) -> None:
    """The attacker makes a key of their own, names it in a new genesis and registry.json, and signs it all."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from sdgov.identity import keys
    from sdgov.registry import key as registry_key
    from sdgov.registry.log import EVENT_DOMAIN

    key = Ed25519PrivateKey.generate()
    public = keys.public_line(key.public_key())
    cfg = json.loads((root / "registry.json").read_text())
    (root / "registry.json").write_text(json.dumps({**cfg, "public_key": public}))
    events = [e for e in _events(root) if e["event"] != "budget_spent"]  # and gives the budget back
    events[0]["artifacts"] = {**events[0]["artifacts"], "registry_public_key": public}
    _write_events(root, events, sign=lambda h: registry_key.sign_framed(key, EVENT_DOMAIN, h.encode()))


def symlink_the_log(root: Path, rid: str, tmp: Path) -> None:
    copy = tmp / "editable-log.jsonl"
    shutil.copyfile(root / "log.jsonl", copy)
    (root / "log.jsonl").unlink()
    (root / "log.jsonl").symlink_to(copy)


SCENARIOS: dict[str, tuple[Callable[[Path, str, Path], None], str]] = {
    # name: (attack, what the first-line reason must mention)
    "rewrite a file + manifest + log event, re-chained": (rewrite_file_manifest_and_event, "signature"),
    "change the approver's name, re-chained": (rename_the_approver, "signature"),
    "roll back to an earlier prefix": (roll_back_to_an_earlier_prefix, "rolled back"),
    "delete budget_spent, re-chained": (delete_budget_spent, "signature"),
    "shrink budget_spent, re-chained": (shrink_budget_spent, "signature"),
    "raise the lifetime budget in policy.yaml": (raise_the_lifetime_budget, "policy.yaml: changed"),
    "replace the noisy counts, re-chained": (replace_noisy_counts, "signature"),
    "forge a whole release": (forge_a_whole_release, "signature"),
    "wipe the registry": (wipe_the_registry, "wiped"),
    "replace a released file by a symlink to an editable copy": (symlink_a_released_file, "symbolic link"),
    "flip a byte of the log": (flip_a_byte_of_the_log, "line"),
    "delete a log line": (delete_a_log_line, "line 3"),
    "swap two log lines": (swap_two_log_lines, "line 3"),
    "append a forged event": (append_a_forged_event, "signature"),
    "flip a byte of a released file": (flip_a_byte_of_a_released_file, "card.md"),
    "re-key the whole log with the attacker's own key": (re_key_the_whole_log, "re-keyed"),
    "replace the log by a symlink to an editable copy": (symlink_the_log, "symbolic link"),
}


def _verify(root: Path, checkpoint: Path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["registry", "verify", "--root", str(root), "--checkpoint", str(checkpoint), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_untampered_registry_extends_its_checkpoint(anchored, tmp_path, capsys):
    root = tmp_path / "registry"
    shutil.copytree(anchored["root"], root)
    code, out = _verify(root, anchored["checkpoint"], capsys)
    assert (code, out["ok"], out["problems"]) == (0, True, [])


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_verify_with_a_checkpoint_catches_the_tampering(name, anchored, tmp_path, capsys):
    attack, reason = SCENARIOS[name]
    root = tmp_path / "registry"
    shutil.copytree(anchored["root"], root, symlinks=True)
    attack(root, anchored["release"], tmp_path)
    code, out = _verify(root, anchored["checkpoint"], capsys)
    assert code == 1 and out["ok"] is False, (name, out)
    assert all("\n" not in p and p for p in out["problems"]), "each reason is one line"
    assert any(reason in p for p in out["problems"]), (name, out["problems"])


def test_an_altered_checkpoint_is_caught(anchored, tmp_path, capsys):
    cp = json.loads(anchored["checkpoint"].read_text())
    forged = tmp_path / "cp.json"
    forged.write_text(json.dumps({**cp, "sequence": cp["sequence"] - 2}))
    code, out = _verify(anchored["root"], forged, capsys)
    assert code == 1 and out["problems"] == [
        "checkpoint: its signature does not verify (the checkpoint itself was altered)"
    ]


def test_the_card_and_manifest_name_the_log_head_before_their_release(anchored):
    root, rid = anchored["root"], anchored["release"]
    released = next(e for e in Registry(root).events() if e.event == "released")
    manifest = json.loads((root / "releases" / rid / "manifest.json").read_text())
    card = json.loads((root / "releases" / rid / "card.json").read_text())
    for head in (manifest["log_head"], card["provenance"]["log_head"]):
        assert head["hash"] == released.prev and head["sequence"] == released.seq - 1
        assert head["released_event"] == released.seq
    md = (root / "releases" / rid / "card.md").read_text()
    assert f"Registry log: released as event {released.seq}" in md and released.prev in md


def test_the_release_carries_an_in_toto_provenance_statement(anchored):
    root, rid = anchored["root"], anchored["release"]
    d = root / "releases" / rid
    statement = json.loads((d / "provenance.intoto.json").read_text())
    manifest = json.loads((d / "manifest.json").read_text())
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://slsa.dev/provenance/v1"
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects == {k: v["sha256"] for k, v in manifest["files"].items() if k != "provenance.intoto.json"}
    assert "synthetic.parquet" in subjects and "card.html" in subjects
    predicate = statement["predicate"]
    assert predicate["buildDefinition"]["externalParameters"]["agreement_sha256"] == manifest["agreement_sha256"]
    assert predicate["buildDefinition"]["internalParameters"]["registry_log_head"] == manifest["log_head"]
    assert manifest["files"]["provenance.intoto.json"]["sha256"] == sha256_file(d / "provenance.intoto.json")


def test_a_log_re_signed_with_the_registry_key_after_deleting_a_spend_refuses_every_spend(anchored, tmp_path, capsys):
    """Issue 24: whoever holds the registry key deletes ``budget_spent`` and re-signs the log. Chain and signatures
    hold, but the release's manifest and card name a log head that is no longer there: verify fails, and so
    does every spend (before, the ledger read the log as intact and gave the budget back)."""
    from sdgov.governance import ledger
    from sdgov.registry import key as registry_key
    from sdgov.registry.log import EVENT_DOMAIN, LogBroken

    root = tmp_path / "registry"
    shutil.copytree(anchored["root"], root, symlinks=True)
    reg = Registry(root)
    spent = next(e for e in reg.events() if e.event == "budget_spent")
    fingerprint = json.loads(spent.comment)["fingerprint"]
    key = registry_key.require(reg.keys, reg.registry_id())
    delete = [e for e in _events(root) if e["event"] != "budget_spent"]
    _write_events(root, delete, sign=lambda h: registry_key.sign_framed(key, EVENT_DOMAIN, h.encode()))
    code, out = _verify(root, anchored["checkpoint"], capsys)
    assert code == 1 and any("log head" in p for p in out["problems"]), out
    with pytest.raises(LogBroken, match="fails verification .*log head"), reg.lock():
        ledger.spend_locked(
            Site.resolve(reg.root),
            dataset="toyland_census",
            fingerprint=fingerprint,
            statistics={"a-new-marginal": 0.01},
            agreement_sha256="0" * 64,
            run_id="r",
            events=reg.verified_events(),
        )
    assert [e.event for e in reg.events()].count("budget_spent") == 0  # nothing spent
