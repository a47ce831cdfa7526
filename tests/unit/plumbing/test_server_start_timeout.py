"""A temporary Prefect server that does not come up in time is one line and exit 2, with nothing written (issue 24:
``sdgov release`` under load exited 1 with ``RuntimeError: Timed out while attempting to connect to ephemeral
Prefect API server``). No real server starts here: the server process is a stand-in that never answers."""

from __future__ import annotations

import signal
import subprocess
import sys

from tests.conftest import make_demo_inputs
from tests.governance import controller_registry, sign_standing_approval


def test_a_temporary_server_that_never_answers_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch) -> None:
    from prefect.settings import (
        PREFECT_SERVER_EPHEMERAL_ENABLED,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        temporary_settings,
    )

    from sdgov.commands import main
    from sdgov.flows.plumbing import temporary_server
    from sdgov.intake import preflight

    spec = make_demo_inputs(tmp_path / "in", rows=200)
    root = tmp_path / "registry"
    sign_standing_approval(spec, root, controller_registry(root, tmp_path / "keys"))
    log_before = (root / "log.jsonl").read_bytes()

    started: list[subprocess.Popen] = []

    def never_answers(self) -> subprocess.Popen:
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        return started[-1]

    monkeypatch.setattr(temporary_server.GuardedServer, "_run_uvicorn_command", never_answers)
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # leave pytest's SIGTERM handling alone
    monkeypatch.setattr(preflight, "dry_run_generator", lambda loaded: None)  # a fit's compile: not this test's
    settings = {PREFECT_SERVER_EPHEMERAL_ENABLED: True, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 1}
    with temporary_settings(updates=settings):
        code = main(["release", "--spec", str(spec), "--root", str(root)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "the temporary Prefect server did not come up within 1 s" in err and "Traceback" not in err
    assert (root / "log.jsonl").read_bytes() == log_before and not (root / "runs").exists()  # nothing written
    assert started and all(p.poll() is not None for p in started)  # the stand-in was stopped, not left behind
