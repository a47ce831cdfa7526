"""``sdgov server start`` stopped with SIGTERM (or killed outright) stops its child ``prefect server`` too (issue 14).

Before, the command ran ``prefect server start`` with ``subprocess.call``: SIGTERM ended ``sdgov`` and left the
server running on its port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[1].startswith("Z")  # a zombie has exited


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to find the child")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_stopping_sdgov_server_start_stops_the_prefect_server(sig, tmp_path):
    import httpx

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("sdgov")), "server", "start", "--port", str(port), "--home", str(tmp_path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    child = None
    try:
        for _ in range(240):
            assert proc.poll() is None, "sdgov server start exited early"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        [child] = _children(proc.pid)
        os.kill(proc.pid, sig)  # the sdgov process only, as a service manager or `kill PID` does
        proc.wait(60)
        for _ in range(600):  # waits for the server to finish stopping; asserts nothing about how long it took
            if _gone(child):
                break
            time.sleep(0.1)
        assert _gone(child), f"prefect server (pid {child}) outlived sdgov server start ({sig.name})"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if child is not None and not _gone(child):
            os.kill(child, signal.SIGKILL)
