"""`dvc repro` reproduces generation and utility from the pinned noisy marginals, bit for bit, and produces
exactly the artifacts the Prefect flow produced; pushed to DVC remotes, the release is reproduced in a second
clone from `dvc pull` (real dvc, real git, real files). This is the controller's own, private project (it tracks the
confidential input); what the public reads is the release repository sdgov publishes into,
tests/system/test_release_channel.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from sdgov.base.hashing import md5_file, sha256_file
from sdgov.registry import commitment
from sdgov.registry.log import Registry
from tests.conftest import REPO, init_registry

ENV = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def run(cmd: list[str], cwd: Path) -> str:
    p = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}"
    return p.stdout


def test_dvc_repro_matches_the_flow_bit_for_bit(tmp_path, prefect_server):
    from sdgov.flows.release import release_flow

    repo = tmp_path / "project"
    repo.mkdir()
    shutil.copy(REPO / "dvc.yaml", repo / "dvc.yaml")
    shutil.copytree(REPO / "sdgov", repo / "sdgov", ignore=shutil.ignore_patterns("__pycache__"))  # dvc.yaml deps
    spec = yaml.safe_load((repo / "sdgov/demo/spec.yaml").read_text())
    for section in ("audit", "privacy_risk"):  # the pre-registered audits are tested in test_release_audits.py
        spec.pop(section, None)
    (repo / "sdgov/demo/spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    run(["git", "init", "-q"], repo)
    run(["dvc", "init", "-q"], repo)
    run(["dvc", "repro", "demo_data"], repo)  # the confidential input, tracked by DVC

    # 1. the orchestrated release draws the noise (once) and generates
    registry = init_registry(tmp_path / "registry")
    result = release_flow(spec_path=str(repo / "sdgov/demo/spec.yaml"), registry_root=str(registry))
    rel = Path(result.path)

    # 2. pin those noisy marginals in DVC, then let dvc reproduce everything downstream
    (repo / "build/demo").mkdir(exist_ok=True)
    shutil.copy(rel / "artifacts/measurements.json", repo / "build/demo/measurements.json")
    run(["dvc", "commit", "-f", "measure"], repo)
    run(["dvc", "repro"], repo)
    gen = repo / "build/demo/generate"
    assert sha256_file(gen / "synthetic.parquet") == sha256_file(rel / "synthetic.parquet")
    assert sha256_file(gen / "model_info.json") == sha256_file(rel / "artifacts/model_info.json")
    [utility] = (registry / "runs").glob("*/utility.json")  # the controller's evidence: not in the release
    assert sha256_file(repo / "build/demo/utility.json") == sha256_file(utility)

    # 3. the card's DVC hashes are the ones dvc.lock records
    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    outs = {o["path"]: o["md5"] for s in lock["stages"].values() for o in s.get("outs", [])}
    card = json.loads(Path(result.card_json).read_text())
    # the confidential file's md5 only as the controller's keyed commitment, which its secret opens
    commit = commitment.registry_committer(Registry(registry))
    assert outs["build/demo/data.csv"] == md5_file(repo / "build/demo/data.csv")
    assert card["dataset"]["dvc_md5_hmac"] == commit("dvc_md5", outs["build/demo/data.csv"])
    assert card["dataset"]["measurements_dvc_md5"] == outs["build/demo/measurements.json"]

    # 4. the published release folder (card, manifest, ψ, synthetic data) tracked by hash too; push everything to
    #    the controller-side remote, and only what is published (ψ, the synthetic output, the release) to the release
    #    remote — never the confidential input or the controller's utility evidence
    release_dir = f"releases/{result.release_id}"
    (repo / "releases").mkdir()
    run(["dvc", "add", "-q", "--out", release_dir, str(rel)], repo)
    run(["dvc", "remote", "add", "-d", "controller", str(tmp_path / "controller-remote")], repo)
    run(["dvc", "remote", "add", "release", str(tmp_path / "release-remote")], repo)
    run(["dvc", "push"], repo)
    run(["dvc", "push", "-r", "release"], repo)  # no targets: dvc.yaml pins the input and evidence to `controller`
    published = {f.parent.name + f.name for f in (tmp_path / "release-remote").rglob("*") if f.is_file()}
    [release_out] = yaml.safe_load((repo / f"{release_dir}.dvc").read_text())["outs"]
    assert {outs["build/demo/measurements.json"], outs["build/demo/generate"], release_out["md5"]} <= published
    assert outs["build/demo/data.csv"] not in published and outs["build/demo/utility.json"] not in published
    run(["git", "add", "-A"], repo)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "release"], repo)
    assert "build/demo/data.csv" not in run(["git", "ls-files"], repo)  # tracked by hash, never by git

    # 5. another machine (git clone): a verifier pulls ψ and the release from the release remote and regenerates the
    #    released synthetic file bit for bit; the controller adds the confidential input from its own remote and
    #    `dvc repro` finishes the pipeline. The clone has no registry: a re-draw of the frozen ψ could not even run.
    other = tmp_path / "other"
    run(["git", "clone", "-q", str(repo), str(other)], tmp_path)
    run(["dvc", "pull", "-r", "release", "measure", f"{release_dir}.dvc"], other)
    run(["dvc", "repro", "--no-run-cache", "--single-item", "generate"], other)
    released = sha256_file(other / release_dir / "synthetic.parquet")
    assert (
        sha256_file(other / "build/demo/generate/synthetic.parquet")
        == released
        == sha256_file(rel / "synthetic.parquet")
    )
    assert not (other / "build/demo/data.csv").exists()
    run(["dvc", "pull", "demo_data"], other)
    run(["dvc", "repro", "--no-run-cache"], other)
    assert sha256_file(other / "build/demo/utility.json") == sha256_file(utility)
    assert "up to date" in run(["dvc", "status"], other)


def test_stage_measure_exports_the_governed_draw_and_never_draws(tmp_path, capsys):
    """`sdgov stage measure` (what dvc.yaml calls) only exports ψ drawn by the flow under the ledger."""
    from sdgov.commands import main
    from sdgov.registry.log import Registry
    from tests.conftest import draw_measurement, make_demo_inputs

    spec = make_demo_inputs(tmp_path / "a", rows=500)
    root, out = init_registry(tmp_path / "registry"), tmp_path / "m.json"
    assert main(["stage", "measure", "--spec", str(spec), "--out", str(out), "--root", str(root)]) == 2
    assert "noise is drawn only there" in capsys.readouterr().err and not out.exists()

    drawn = draw_measurement(spec, root)
    for _ in range(2):  # exporting twice gives the same bytes and spends nothing
        assert main(["stage", "measure", "--spec", str(spec), "--out", str(out), "--root", str(root)]) == 0
        assert out.read_bytes() == drawn.read_bytes()
    assert [e.event for e in Registry(root).events()].count("budget_spent") == 1

    other = make_demo_inputs(tmp_path / "b", rows=600)
    draw_measurement(other, root, "t1")
    assert main(["stage", "measure", "--spec", str(other), "--out", str(out), "--root", str(root)]) == 2
    assert out.read_bytes() == drawn.read_bytes()
    assert "drawn once" in capsys.readouterr().err
