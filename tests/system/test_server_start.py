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


def _start(home: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("sdgov")), "server", "start", "--port", str(port), "--home", str(home)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return proc, port


def _healthy(port: int) -> bool:
    import httpx

    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to find the child")
def test_stopping_sdgov_server_start_stops_the_prefect_server(tmp_path):
    """SIGTERM (a service manager's stop, ``kill PID``) and SIGKILL, side by side: two servers, two ports."""
    sigs = [signal.SIGTERM, signal.SIGKILL]
    servers: dict[signal.Signals, tuple[subprocess.Popen[bytes], int]] = {}
    children: dict[signal.Signals, int] = {}
    try:
        for sig in sigs:
            servers[sig] = _start(tmp_path / sig.name)
        for _ in range(240):
            for sig, (proc, _port) in servers.items():
                assert proc.poll() is None, f"sdgov server start exited early ({sig.name})"
            if all(_healthy(port) for _proc, port in servers.values()):
                break
            time.sleep(0.5)
        for sig, (proc, _port) in servers.items():
            [children[sig]] = _children(proc.pid)
            os.kill(proc.pid, sig)  # the sdgov process only, as a service manager or `kill PID` does
        for proc, _port in servers.values():
            proc.wait(60)
        for _ in range(600):  # waits for the servers to finish stopping; asserts nothing about how long it took
            if all(_gone(child) for child in children.values()):
                break
            time.sleep(0.1)
        outlived = {sig.name: child for sig, child in children.items() if not _gone(child)}
        assert not outlived, f"prefect server outlived sdgov server start (signal: server pid): {outlived}"
    finally:
        for proc, _port in servers.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        for child in children.values():
            if not _gone(child):
                os.kill(child, signal.SIGKILL)
