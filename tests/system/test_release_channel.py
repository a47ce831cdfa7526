"""Issue 28: DVC as the release channel. Releases made on the standing (scheduled) path are tracked, committed and
pushed by sdgov into the public release repository that the signed ``controller.yaml`` names; a push that fails is
one warning, the release stands and ``sdgov publish`` retries; nothing in the repository, its history included, nor
in the release remote is a hash or figure of the confidential data (real git, real dvc, local-directory remotes).

Issue 39: a stranger's fresh clone — ``git clone``, ``dvc pull``, plain ``dvc repro``, ``sdgov verify-release
--public-key <the fingerprint the controller published>`` — works from the repository's README alone; the first
verified release pins the key and later verifications use the pin; a copy re-signed with another key fails against
the pin, and is refused where nothing is pinned and no key is given; one flipped byte fails naming the file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from sdgov.base.hashing import md5_file, sha256_file
from sdgov.data.encoding import encode, read_csv_strict
from sdgov.data.fingerprint import fingerprint
from sdgov.data.schema import load_schema
from sdgov.identity.keys import load_private_key, public_line
from sdgov.registry.log import Registry
from tests.conftest import make_demo_inputs
from tests.fixtures.cli import cli
from tests.fixtures.figures import PREFIX, hex_windows, printed
from tests.governance import controller_registry, sign_standing_approval

ENV = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
REAL_ROWS = 1213  # the confidential record count: never a synthetic row count, so it must stay unpublished


def sh(cwd: Path, *cmd: str) -> str:
    p = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}"
    return p.stdout


def standing_release(spec: Path, root: Path, keys: dict[str, Path], rows: int) -> str:
    """One release on the scheduled path (the governed flow under a signed standing approval); its id."""
    from sdgov.flows.governed import governed_release_flow

    s = yaml.safe_load(spec.read_text())
    s["rows"] = rows  # a new agreement (ψ is reused: same statistics, same σ), which the controller signs again
    spec.write_text(yaml.safe_dump(s, sort_keys=False))
    sign_standing_approval(spec, root, keys)
    out = governed_release_flow(spec_path=str(spec), registry_root=str(root), approval="standing", poll_interval=1)
    assert out.status == "released", out
    return out.release.release_id


def _resign(folder: Path, forger) -> None:
    """A forger's copy of a release folder: its registry.json names the forger's key, and released.json carries the
    forger's signature over the same event."""
    from sdgov.base.hashing import canonical_json
    from sdgov.registry import key as registry_key
    from sdgov.registry import log

    reg = json.loads((folder / "registry.json").read_text())
    reg["public_key"] = public_line(forger.public_key())
    (folder / "registry.json").write_text(json.dumps(reg, indent=2, sort_keys=True) + "\n")
    event = log.Event.model_validate_json((folder / "released.json").read_bytes())
    event = event.model_copy(update={"sig": registry_key.sign_framed(forger, log.EVENT_DOMAIN, event.hash.encode())})
    (folder / "released.json").write_bytes(canonical_json(event.model_dump()) + b"\n")


def blobs(repo: Path) -> dict[str, bytes]:
    """Every object git holds in ``repo`` — all files of all commits, and the commits and trees themselves."""
    ids = sh(repo, "git", "rev-list", "--all", "--objects").split()
    ids = [i for i in ids if len(i) == 40 and all(c in "0123456789abcdef" for c in i)]
    out = {}
    for oid in ids:
        p = subprocess.run(["git", "cat-file", "-p", oid], cwd=repo, env=ENV, capture_output=True, timeout=60)
        out[oid] = p.stdout
    return out


def test_releases_are_published_through_dvc_and_verified_from_a_clone(tmp_path):
    spec = make_demo_inputs(tmp_path / "in", rows=REAL_ROWS)
    data, schema_file = spec.parent / "data.csv", spec.parent / "schema.yaml"
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    project, remote = tmp_path / "release-repo", tmp_path / "release-remote"
    channel = {"project": str(project), "remote": str(remote)}
    (root / "controller.yaml").write_text(yaml.safe_dump({"release_channel": channel}))
    carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]), "--root", str(root))
    code, _, err = cli("approvers", "commit", *carl)  # where releases go is the controller's signed decision
    assert code == 0, err

    # 1. a release on the scheduled path is tracked, committed and pushed by sdgov, nobody typing a dvc command
    a = standing_release(spec, root, keys, rows=900)
    assert sh(project, "git", "log", "--format=%s") == f"release {a}\n"
    assert "in sync" in sh(project, "dvc", "status", "-c", "-r", "release")

    # 2. the release remote is unreachable for the next release: the release stands, committed, not pushed;
    #    `sdgov publish` pushes it once the remote is back
    shutil.move(remote, tmp_path / "away")
    remote.write_text("not a directory")
    b = standing_release(spec, root, keys, rows=1100)
    assert Registry(root).verify() == [] and b in {r["release_id"] for r in Registry(root).releases()}
    assert sh(project, "git", "log", "-1", "--format=%s") == f"release {b}\n"
    remote.unlink()
    shutil.move(tmp_path / "away", remote)
    code, out, err = cli("publish", b, "--root", str(root), "--json")
    assert code == 0, err
    assert json.loads(out)["releases"] == [{"release_id": b, "committed": False, "pushed": True, "error": ""}]

    # 3. a stranger, with the fingerprint the controller published (`sdgov init` printed it; every card states it):
    #    git clone, dvc pull from the release remote only, plain dvc repro, one command verifies each release
    code, out, _ = cli("init", "--root", str(root), "--json")
    published = json.loads(out)["key_fingerprint"]
    clone, pins = tmp_path / "clone", tmp_path / "stranger" / "release-keys.json"
    sh(tmp_path, "git", "clone", "-q", str(project), str(clone))
    readme = (clone / "README.md").read_text()
    assert published in readme and "sdgov verify-release releases/<release id> --public-key" in readme
    assert a in readme and b in readme and "Do not take that line from here" in readme
    sh(clone, "dvc", "pull", "-q", "-r", "release")
    sh(clone, "dvc", "repro")  # plain: every release's generate stage, up to date
    released = {r: Path(Registry(root).release_dir(r)) for r in (a, b)}
    code, out, err = cli("verify-release", str(clone / "releases" / a), "--pin-file", str(pins))
    assert code == 2 and "no key is pinned for registry" in err and "--public-key sha256:" in err  # no pin, no key
    for i, (rid, rel) in enumerate(released.items()):
        folder = clone / "releases" / rid
        assert sha256_file(folder / "synthetic.parquet") == sha256_file(rel / "synthetic.parquet")
        assert json.loads((folder / "card.json").read_text())["registry_key_fingerprint"] == published
        key = ["--public-key", published] if i == 0 else []  # the first pins the key; the second uses the pin
        code, out, err = cli("verify-release", str(folder), *key, "--pin-file", str(pins), "--json")
        verdict = json.loads(out)
        assert code == 0 and verdict["ok"], [f for f in verdict["findings"] if not f["ok"]]
        assert any("bit for bit" in f["what"] for f in verdict["findings"] if f["file"] == "synthetic.parquet")
        assert ("--public-key" if i == 0 else "pinned in") in verdict["key_source"]
        assert bool(verdict["pinned"]) == (i == 0) and json.loads(pins.read_text())  # pinned once, said in one line
    sh(clone, "dvc", "repro", "-f", "--no-run-cache", f"dvc.yaml:generate@{b}")  # DVC's own route, forced
    assert sha256_file(clone / "releases" / b / "synthetic.parquet") == sha256_file(released[b] / "synthetic.parquet")
    assert "nothing to commit" in sh(clone, "git", "status")

    # a copy re-signed with another key (registry.json names it, released.json carries its signature): it passed
    # when the folder's own registry.json was trusted; against the pin it fails, and unpinned it is refused
    forged = tmp_path / "forged" / "releases" / a
    shutil.copytree(clone / "releases" / a, forged)
    _resign(forged, load_private_key(keys["Ada Analyst"]))
    code, out, _ = cli("verify-release", str(forged), "--no-regenerate", "--pin-file", str(pins))
    assert code == 1 and "FAIL registry.json" in out and "NOT verified" in out.splitlines()[-1]
    code, out, err = cli("verify-release", str(forged), "--no-regenerate", "--pin-file", str(tmp_path / "none.json"))
    assert code == 2 and "no key is pinned" in err

    # one flipped byte of the synthetic data, ψ or the card: exit 1, the file named
    folder = clone / "releases" / a
    for name, regenerate in (("synthetic.parquet", False), ("artifacts/measurements.json", True), ("card.json", False)):
        original = (folder / name).read_bytes()
        flipped = bytearray(original)
        flipped[len(flipped) // 2] ^= 0x01
        (folder / name).write_bytes(bytes(flipped))
        code, out, err = cli(
            "verify-release", str(folder), "--pin-file", str(pins), *([] if regenerate else ["--no-regenerate"])
        )
        (folder / name).write_bytes(original)
        fails = [line for line in out.splitlines() if line.startswith("FAIL")]
        assert code == 1 and any(line.startswith(f"FAIL {name}:") for line in fails), out
        assert "NOT verified" in out.splitlines()[-1] and name in out.splitlines()[-1]
    other_key = public_line(load_private_key(keys["Ada Analyst"]).public_key())
    code, _, err = cli(
        "verify-release", str(folder), "--no-regenerate", "--public-key", other_key, "--pin-file", str(pins)
    )
    assert code == 2 and "is not the one you pinned" in err  # a key that contradicts the pin: refused
    code, out, _ = cli(
        "verify-release", str(folder), "--no-regenerate", "--public-key", other_key, "--pin-file", str(tmp_path / "x")
    )
    assert code == 1 and "FAIL registry.json" in out  # a key the reader gave that did not sign it

    # 4. nothing in the release repository (every object of every commit) or the release remote is a hash or a
    #    figure of the confidential data; the remote holds exactly ψ and the synthetic data of the two releases
    schema = load_schema(schema_file)
    fp = fingerprint(encode(read_csv_strict(data), schema), schema)
    secret = {"data sha256": sha256_file(data), "data DVC md5": md5_file(data), "content fingerprint": fp}
    secret |= {f"statistic {p.stem[:8]}": p.stem for p in (root / "measurements").glob("*.json")}
    for run_dir in (root / "runs").iterdir():  # every file the controller computed on the data
        for p in [run_dir / "codes.parquet", *run_dir.glob("utility*"), *run_dir.glob("audit*.json")]:
            if p.is_file():
                secret[f"sha256 of {p.relative_to(root)}"] = sha256_file(p)
        for p in (run_dir / "evidence").glob("*") if (run_dir / "evidence").is_dir() else []:
            secret[f"sha256 of {p.relative_to(root)}"] = sha256_file(p)
    assert len(secret) > 3 + 11 + 4
    assert fp[:PREFIX] in hex_windows((root / "log.jsonl").read_bytes())  # the search finds a secret where it is
    objects = blobs(project)
    pushed = {p.relative_to(remote).as_posix(): p.read_bytes() for p in remote.rglob("*") if p.is_file()}
    assert len(objects) > 40
    for where, blob in [*objects.items(), *pushed.items()]:
        windows = hex_windows(blob)
        leaked = [what for what, h in secret.items() if h[:PREFIX] in windows]
        assert not leaked, f"{where} publishes {leaked}"
    noisy = {json.loads((rel / "card.json").read_text())["dataset"]["noisy_rows"] for rel in released.values()}
    if REAL_ROWS not in noisy:  # the record count, unless a card's noisy count happens to round to it
        for oid, blob in objects.items():
            text = blob.decode("utf-8", errors="replace")
            assert not {str(REAL_ROWS), f"{REAL_ROWS:,}"} & printed(text), f"git object {oid} prints the record count"
    for oid, blob in objects.items():  # no path of the controller's side: registry, inputs, the data
        text = blob.decode("utf-8", errors="replace")
        assert not [p for p in (root, spec.parent, data) if str(p) in text], f"git object {oid} names a machine path"
    expected = {
        md5_file(rel / n) for rel in released.values() for n in ("synthetic.parquet", "artifacts/measurements.json")
    }
    assert {k.replace("/", "")[-32:] for k in pushed} == expected
