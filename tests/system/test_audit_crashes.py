"""A third-party generator that raises (in its factory, ``fit`` or ``sample``) is a verdict of its own: both audit
commands print one line naming the generator and the call, ``{"ok": false, "error": …}`` with ``--json``, exit 2
(1 means "fail"), and ``--out`` keeps what the audit had finished (issue 13)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

APP1 = str(REPO / "examples" / "census2011" / "app1.yaml")
CRASH = "test_crash_"  # tests/plugins: an installed plug-in's entry points


def _cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "sdgov.commands", "audit", *args, "--json"]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


def _assert_crash_verdict(out: subprocess.CompletedProcess, generator: str, call: str) -> str:
    assert out.returncode == 2, (out.returncode, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sdgov: error:"), out.stderr  # no traceback
    assert generator in lines[0] and call in lines[0], lines[0]
    payload = json.loads(out.stdout)
    assert payload["ok"] is False and generator in payload["error"] and call in payload["error"]
    return lines[0]


@pytest.mark.parametrize(
    ("name", "call"), [("in_factory", "the factory"), ("in_fit", "fit()"), ("in_sample", "sample()")]
)
def test_decomposability_crash_is_exit_2_with_one_line(tmp_path, name, call):
    out_file = tmp_path / "out.json"
    args = ["decomposability", "--spec", APP1, "--generator", CRASH + name, "--K", "2", "--rows", "5000"]
    out = _cli(*args, "--control", "none", "--out", str(out_file))
    line = _assert_crash_verdict(out, CRASH + name, call)
    assert "ValueError" in line or "RuntimeError" in line or "KeyError" in line
    written = json.loads(out_file.read_text())
    assert written["ok"] is False and written["partial"]["generator"] == CRASH + name
    assert written["partial"]["basis"]["mode"] == "projection"


def test_control_crash_keeps_the_audited_result(tmp_path):
    out_file = tmp_path / "out.json"
    args = ["decomposability", "--spec", APP1, "--generator", "honest_ipf", "--K", "2", "--rows", "5000"]
    out = _cli(*args, "--control", CRASH + "in_sample", "--out", str(out_file))
    _assert_crash_verdict(out, CRASH + "in_sample", "sample()")
    partial = json.loads(out_file.read_text())["partial"]
    assert partial["control"] == CRASH + "in_sample"
    assert partial["result"]["verdict"] in ("pass", "fail") and 0 <= partial["result"]["p_value"] <= 1


def test_privacy_crash_is_exit_2_with_one_line(tmp_path):
    out_file = tmp_path / "out.json"
    args = ["privacy", "--spec", APP1, "--generator", CRASH + "in_fit", "--parts", "disclosure", "--jobs", "1"]
    out = _cli(*args, "--out", str(out_file))
    _assert_crash_verdict(out, CRASH + "in_fit", "fit()")
    written = json.loads(out_file.read_text())
    assert written["ok"] is False and written["partial"]["parts"] == ["disclosure"]
