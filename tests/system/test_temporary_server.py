"""The temporary Prefect server an ``sdgov`` run starts dies with it: normal exit, SIGINT, SIGTERM and kill -9.

Each case runs a real ``sdgov`` process that starts the temporary server the way ``sdgov demo``/``release`` do
(:func:`sdgov.flows.temporary_server.install`), then ends it; the server process must be gone afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import httpx
import pytest

CHILD = textwrap.dedent(
    """
    import signal, sys, time
    # Ctrl-C as at a terminal: a job started in the background (nohup, `&`, some CI runners) inherits SIGINT
    # ignored, and Python then never raises KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from sdgov.flows.temporary_server import install
    server = install()
    server.start()
    print(server.server_process.pid, server.api_url, flush=True)
    if sys.argv[1] == "exit":
        sys.exit(0)
    time.sleep(600)
    """
)


def _gone(pid: int) -> bool:
    """No such process, or a zombie (exited, waiting for whoever adopted it to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("end", ["exit", "SIGINT", "SIGTERM", "SIGKILL"])
def test_the_temporary_server_dies_with_the_run(end, tmp_path):
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    run = subprocess.Popen([sys.executable, "-c", CHILD, end], env=env, stdout=subprocess.PIPE, text=True)
    try:
        pid_text, api_url = run.stdout.readline().split()
        server_pid = int(pid_text)
        if end != "exit":
            assert httpx.get(f"{api_url}/health").status_code == 200
            run.send_signal(getattr(signal, end))
        run.wait(timeout=120)
        for _ in range(600):  # waits for the server to finish stopping; asserts nothing about how long it took
            if _gone(server_pid):
                break
            time.sleep(0.1)
        assert _gone(server_pid), f"the temporary server (pid {server_pid}) outlived the run ({end})"
    finally:
        run.kill()
        run.wait()
