"""The temporary Prefect server an ``sdgov`` run starts dies with it: normal exit, SIGINT, SIGTERM and kill -9.

Each case runs a real ``sdgov`` process that starts the temporary server the way ``sdgov demo``/``release`` do
(:func:`sdgov.flows.plumbing.temporary_server.install`), then ends it; the server process must be gone afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import httpx

from sdgov.commands import ENV_DEFAULTS

CHILD = textwrap.dedent(
    """
    import signal, sys, time
    # Ctrl-C as at a terminal: a job started in the background (nohup, `&`, some CI runners) inherits SIGINT
    # ignored, and Python then never raises KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from sdgov.flows.plumbing.temporary_server import install
    server = install()  # the four runs start side by side: each server's port is the kernel's choice of a free one
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


ENDS = ["exit", "SIGINT", "SIGTERM", "SIGKILL"]


def test_the_temporary_server_dies_with_the_run(tmp_path):
    """The four ways a run ends, side by side (each its own process, PREFECT_HOME and server): four server starts
    at once take about as long as two one after another."""
    runs: dict[str, subprocess.Popen[str]] = {}
    try:
        for end in ENDS:
            (tmp_path / end).mkdir()
            env = {**ENV_DEFAULTS, **os.environ, "PREFECT_HOME": str(tmp_path / end / "prefect")}  # as `sdgov` does
            env.pop("PREFECT_API_URL", None)
            runs[end] = subprocess.Popen([sys.executable, "-c", CHILD, end], env=env, stdout=subprocess.PIPE, text=True)
        servers: dict[str, int] = {}
        for end, run in runs.items():
            pid_text, api_url = run.stdout.readline().split()  # type: ignore[union-attr]
            servers[end] = int(pid_text)
            if end != "exit":
                assert httpx.get(f"{api_url}/health").status_code == 200, end
                if end == "SIGINT":  # it registered no block type (temporary_server.SERVER_ENV): none is used
                    assert httpx.post(f"{api_url}/block_types/filter", json={}).json() == []
                run.send_signal(getattr(signal, end))
        for run in runs.values():
            run.wait(timeout=120)
        for _ in range(600):  # waits for the servers to finish stopping; asserts nothing about how long it took
            if all(_gone(pid) for pid in servers.values()):
                break
            time.sleep(0.1)
        outlived = {end: pid for end, pid in servers.items() if not _gone(pid)}
        assert not outlived, f"the temporary server outlived the run (how the run ended: server pid): {outlived}"
    finally:
        for run in runs.values():
            run.kill()
            run.wait()
