"""README command 1, as a user runs it: the real `sdgov` entry point in a fresh process, then `verify`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

SDGOV = Path(sys.executable).parent / "sdgov"


def test_sdgov_demo_json_produces_a_verified_release(tmp_path):
    env = {**os.environ, "SDGOV_REGISTRY": str(tmp_path / "registry"), "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)  # its own temporary server, as for a user
    p = subprocess.run([str(SDGOV), "demo", "--json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    assert {"release_id", "path", "card_html"} <= set(out)
    assert Path(out["card_html"]).is_file() and Path(out["path"]).parent.parent == tmp_path / "registry"
    card = json.loads((Path(out["path"]) / "card.json").read_text())  # the demo runs both pre-registered audits
    [run_dir] = (tmp_path / "registry" / "runs").iterdir()
    evidence = json.loads((run_dir / "evidence" / "evidence.json").read_text())  # the controller's, unpublished
    dec, pe = evidence["audit_sections"]["decomposability"], evidence["audit_sections"]["privacy_risk"]
    assert dec["verdict"] == "pass" and dec["control"]["caught"]
    assert pe["verdict"] in ("pass", "warn") and card["audit"]["not_run"] == []
    assert card["audit_sections"]["decomposability"]["verdict"] == "controller-side"  # its result is a data figure

    v = subprocess.run(
        [str(SDGOV), "registry", "verify", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    report = json.loads(v.stdout)
    assert v.returncode == 0 and report["ok"] is True and report["problems"] == []

    synthetic = Path(out["path"]) / "synthetic.parquet"
    synthetic.chmod(0o644)
    data = bytearray(synthetic.read_bytes())
    data[100] ^= 0xFF
    synthetic.write_bytes(bytes(data))
    v = subprocess.run(
        [str(SDGOV), "registry", "verify", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert v.returncode == 1
    assert any("synthetic.parquet" in p for p in json.loads(v.stdout)["problems"])
