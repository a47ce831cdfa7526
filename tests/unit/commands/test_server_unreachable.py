"""A command that talks to the Prefect server when none answers: one line naming the server and how to fix it,
exit 2 — not httpx's traceback (principle 8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("argv", [["runs"], ["runs", "--json"]], ids=["text", "json"])
def test_no_server_answering_is_one_line_and_exit_2(tmp_path: Path, argv: list[str]) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")},
        "PREFECT_API_URL": "http://127.0.0.1:9/api",  # nothing listens on the discard port
        "PREFECT_CLIENT_MAX_RETRIES": "0",
        "PREFECT_HOME": str(tmp_path / "prefect"),
    }
    done = subprocess.run(
        [str(Path(sys.executable).with_name("sdgov")), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "the Prefect server did not answer" in done.stderr and "http://127.0.0.1:9/api" in done.stderr
    if "--json" in argv:
        assert '"ok": false' in done.stdout
