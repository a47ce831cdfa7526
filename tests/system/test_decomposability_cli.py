"""Decomposability audit through the real entry point (a subprocess on the census Application 1 spec, K=2)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO


def test_cli_json_contract_and_error_exit():
    cmd = [
        sys.executable,
        "-m",
        "sdgov.commands",
        "audit",
        "decomposability",
        "--spec",
        str(REPO / "examples" / "census2011" / "app1.yaml"),
        "--generator",
        "honest_ipf",
        "--K",
        "2",
        "--seed",
        "1",
        "--rows",
        "20000",
        "--control",
        "none",
        "--json",
    ]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    payload = json.loads(out.stdout)
    assert {"p_value", "verdict", "K", "seconds"} <= set(payload)
    assert payload["verdict"] in ("pass", "fail") and payload["K"] == 2 and 0 <= payload["p_value"] <= 1
    bad = subprocess.run(cmd[:8] + ["not-a-path", "--json"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1 and "sdgov: error:" in bad.stderr
    assert json.loads(bad.stdout)["ok"] is False
