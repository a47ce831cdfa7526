"""Prefect's temporary API server for a run with no ``PREFECT_API_URL``, tied to the life of the ``sdgov`` process
that started it.

With no ``PREFECT_API_URL``, Prefect's client would start a temporary server itself (``SubprocessASGIServer``) and
stop it from an ``atexit`` hook: a normal exit or Ctrl-C stops it, but SIGTERM (default action: no atexit) or
``kill -9`` left it running, and the run's process imported Prefect's whole server package (its FastAPI app, ORM
and migrations: ~2.5 CPU s) only to reach that class. So sdgov starts the server itself (:class:`GuardedServer`:
the uvicorn command Prefect 3.8 runs, under :mod:`sdgov.base.lifeline`, which holds the read end of a pipe only this
process can write, so the server stops itself when this process dies, however it dies) and :func:`serving` points
the run at it (``PREFECT_API_URL`` in Prefect's settings and in the environment its worker processes inherit):
Prefect's client then finds a URL and never loads its server package here. A SIGTERM handler also turns SIGTERM
into a normal exit, so the flow's own cleanup runs. A server that does not come up in time (an overloaded machine)
is one line, exit 2 (:class:`ServerDidNotStart`), not a ``RuntimeError`` traceback.

The temporary server registers no block types (:data:`SERVER_ENV`): no sdgov run reads or writes a Prefect block
(results and artifacts go to the registry, the pause forms are run inputs), and registering Prefect's ~40 block
types into a fresh database cost the release ~2.5 CPU s. A user's own server (``PREFECT_API_URL``) is left as it is.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import prefect
from prefect.logging import get_logger
from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_SERVER_EPHEMERAL_ENABLED,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    get_current_settings,
    temporary_settings,
)

from sdgov.base import environment_variable
from sdgov.base.errors import SdgovError

PORT_IN_USE = 3  # uvicorn's exit status when its port was taken between choosing it and binding it


class ServerDidNotStart(SdgovError):
    """The temporary Prefect server did not answer in time: nothing was run."""


SERVER_ENV = {
    "PREFECT_UI_ENABLED": "0",  # as Prefect's temporary server: the API only
    "PREFECT__SERVER_EPHEMERAL": "1",
    "PREFECT__SERVER_FINAL": "1",
    "PREFECT_API_BLOCKS_REGISTER_ON_START": "false",  # no block is used by a run: nothing to register
    "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",  # else it loads every block collection to hash them first
}
"""Settings of the temporary server only (on top of the user's): what a run does not use is not started."""


def _free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now (the kernel's choice: no range to collide in)."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class GuardedServer:
    """Prefect's API server (``prefect.server.api.server:create_app`` under uvicorn, as Prefect 3.8's
    ``SubprocessASGIServer`` runs it) in a child process that dies with this one."""

    def __init__(self) -> None:
        self.port: int | None = None
        self.server_process: subprocess.Popen[Any] | None = None
        self._lifeline: int | None = None

    @property
    def api_url(self) -> str:
        """The server's API (``http://127.0.0.1:PORT/api``)."""
        return f"http://127.0.0.1:{self.port}/api"

    def start(self, timeout: int | None = None) -> None:
        """Start the server and wait until it answers (once: a started server is kept); one that does not answer
        within ``timeout`` (default ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``) is stopped and raises
        :class:`ServerDidNotStart` (one line)."""
        if self.server_process is not None:
            return
        waited = timeout or PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
        deadline = time.monotonic() + waited
        self.port = _free_port()
        get_logger().info(f"Starting temporary server on http://127.0.0.1:{self.port}")
        self.server_process = self._run_uvicorn_command()
        atexit.register(self.stop)
        with httpx.Client() as client:
            while time.monotonic() < deadline:
                code = self.server_process.poll()
                if code == PORT_IN_USE:  # taken since it was chosen: another one
                    self.port = _free_port()
                    self.server_process = self._run_uvicorn_command()
                    continue
                if code is not None:
                    break
                with contextlib.suppress(httpx.TransportError):
                    if client.get(f"{self.api_url}/health", timeout=5).status_code == 200:
                        return
                time.sleep(0.1)
        with contextlib.suppress(Exception):
            self.stop()
        raise ServerDidNotStart(
            f"the temporary Prefect server did not come up within {waited} s; nothing was run",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS",
            "try again when the machine is less busy, raise that setting (e.g. to 120), or run 'sdgov server "
            "start' and set PREFECT_API_URL",
        )

    def _run_uvicorn_command(self) -> subprocess.Popen[Any]:
        self._close_lifeline()  # a retry on another port: the previous server process has exited
        read, write = os.pipe()  # non-inheritable by default: only the server gets ``read`` (pass_fds)
        self._lifeline = write  # held (never written) for as long as this process lives
        args = [
            sys.executable,
            "-m",
            "sdgov.base.lifeline",
            str(read),
            "uvicorn",
            "--app-dir",
            str(prefect.__module_path__.parent),
            "--factory",
            "prefect.server.api.server:create_app",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-level",
            "error",
            "--lifespan",
            "on",
        ]
        env = {**os.environ, **get_current_settings().to_environment_variables(exclude_unset=True), **SERVER_ENV}
        try:
            return subprocess.Popen(args, env=env, pass_fds=(read,))
        finally:
            os.close(read)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s), then close its lifeline."""
        process = self.server_process
        if process is not None and process.poll() is None:
            get_logger().info(f"Stopping temporary server on http://127.0.0.1:{self.port}")
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._close_lifeline()

    def _close_lifeline(self) -> None:
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def install() -> GuardedServer | None:
    """The temporary server a run in this process will use (not started), or ``None`` where the run needs none (a
    ``PREFECT_API_URL`` is set, or temporary servers are off); SIGTERM becomes a normal exit from here on."""
    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return None
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        with contextlib.suppress(ValueError):  # ValueError: not the main thread (then atexit + lifeline only)
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
    return GuardedServer()


@contextlib.contextmanager
def serving(server: GuardedServer | None) -> Iterator[None]:
    """The block runs against ``server`` (started here if it is not yet; ``None``: as configured): Prefect's settings
    and the environment worker processes inherit name it as ``PREFECT_API_URL``, both restored afterwards."""
    if server is None:
        yield
        return
    server.start()
    with _process_wide_api_url(server.api_url), temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        yield


@contextlib.contextmanager
def _process_wide_api_url(url: str) -> Iterator[None]:
    """``PREFECT_API_URL`` in the environment and in Prefect's process-global settings, both restored afterwards.

    ``temporary_settings`` reaches only the threads that copy the caller's context. Prefect's own background
    threads (the task-run waiter of a process-pool task runner, the events worker) start with an empty context and
    read the global settings, built when Prefect was imported: with no URL there, each started a second temporary
    server of its own (~200 MB resident for the rest of the run, and the events it carried went there)."""
    from prefect.context import refresh_global_settings_context

    try:
        with environment_variable("PREFECT_API_URL", url):
            refresh_global_settings_context()
            yield
    finally:
        refresh_global_settings_context()


class BackgroundStart(threading.Thread):
    """The temporary server starting in the background (:func:`start_in_background`); :meth:`wait` re-raises, in the
    caller's thread, a start that failed (one line, not a traceback printed by the thread)."""

    def __init__(self, server: GuardedServer) -> None:
        super().__init__(name="prefect-temporary-api", daemon=True)
        self.server = server
        self.error: BaseException | None = None

    def run(self) -> None:
        """Start the server; a failure is kept for :meth:`wait`."""
        try:
            self.server.start()
        except Exception as exc:
            self.error = exc

    def wait(self) -> GuardedServer:
        """The server once it is up (the flow must find it up, not half-started), or the start's error raised."""
        self.join()
        if self.error is not None:
            raise self.error
        return self.server


def start_in_background() -> BackgroundStart | None:
    """With no Prefect API configured, a release starts a temporary server before its flow (~10 s on a fresh
    PREFECT_HOME, mostly database migrations). The demo starts it in the background instead, so that it comes up
    while the demo data is written and the pre-flight checks run (the demo's inputs ship with the package and pass
    them); the release joins the thread (:meth:`BackgroundStart.wait`) before the flow starts. ``None``: no
    temporary server is needed (:func:`install`)."""
    server = install()  # stopped when this process dies, however it dies
    if server is None:
        return None
    thread = BackgroundStart(server)
    thread.start()
    return thread
