"""Prefect's temporary API server, tied to the life of the ``sdgov`` process that started it.

With no ``PREFECT_API_URL``, a flow run starts a temporary server in a subprocess (``SubprocessASGIServer``) and
stops it from an ``atexit`` hook: a normal exit or Ctrl-C stops it, but SIGTERM (default action: no atexit) or
``kill -9`` left it running. :func:`install` registers, before anything asks for one, a server whose process is
started under :mod:`sdgov.base.lifeline`: it holds the read end of a pipe only this process can write, so it stops
itself when this process dies, however it dies. A SIGTERM handler also turns SIGTERM into a normal exit, so the
flow's own cleanup runs. A server that does not come up in time (an overloaded machine) is one line, exit 2
(:class:`ServerDidNotStart`), not Prefect's ``RuntimeError`` traceback.

The temporary server registers no block types (:data:`SERVER_ENV`): no sdgov run reads or writes a Prefect block
(results and artifacts go to the registry, the pause forms are run inputs), and registering Prefect's ~40 block
types into a fresh database cost the release ~2.5 CPU s. A user's own server (``PREFECT_API_URL``) is left as it is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import Any

import prefect
from prefect.server.api.server import SubprocessASGIServer
from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_SERVER_EPHEMERAL_ENABLED,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    get_current_settings,
)

from sdgov.base.errors import SdgovError


class ServerDidNotStart(SdgovError):
    """The temporary Prefect server did not answer in time: nothing was run."""


class GuardedServer(SubprocessASGIServer):
    """``SubprocessASGIServer`` whose uvicorn process dies with this one (same command as Prefect 3.8's)."""

    def start(self, timeout: int | None = None) -> None:
        """Start the server as Prefect does; one that does not come up in time is stopped and raises
        :class:`ServerDidNotStart` (one line) instead of Prefect's ``RuntimeError``."""
        try:
            super().start(timeout)
        except RuntimeError as exc:
            if "Prefect API server" not in str(exc):
                raise
            with contextlib.suppress(Exception):
                self.stop()
            waited = timeout or PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
            raise ServerDidNotStart(
                f"the temporary Prefect server did not come up within {waited} s; nothing was run",
                "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS",
                "try again when the machine is less busy, raise that setting (e.g. to 120), or run 'sdgov server "
                "start' and set PREFECT_API_URL",
            ) from None

    def _run_uvicorn_command(self) -> subprocess.Popen[Any]:
        self._close_lifeline()  # a retry on another port: the previous server process has exited
        read, write = os.pipe()  # non-inheritable by default: only the server gets ``read`` (pass_fds)
        self._lifeline: int | None = write  # held (never written) for as long as this process lives
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
        env = {
            **os.environ,
            "PREFECT_UI_ENABLED": "0",
            "PREFECT__SERVER_EPHEMERAL": "1",
            "PREFECT__SERVER_FINAL": "1",
            **get_current_settings().to_environment_variables(exclude_unset=True),
            **SERVER_ENV,
        }
        try:
            return subprocess.Popen(args, env=env, pass_fds=(read,))
        finally:
            os.close(read)

    def stop(self) -> None:
        """Stop the server as Prefect does, then close its lifeline (the pipe's write end this process held)."""
        super().stop()
        self._close_lifeline()

    def _close_lifeline(self) -> None:
        fd = getattr(self, "_lifeline", None)
        if fd is not None:
            os.close(fd)
            self._lifeline = None


SERVER_ENV = {
    "PREFECT_API_BLOCKS_REGISTER_ON_START": "false",  # no block is used by a run: nothing to register
    "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",  # else it loads every block collection to hash them first
}
"""Settings of the temporary server only (on top of the user's): what a run does not use is not started."""


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def install() -> SubprocessASGIServer | None:
    """Make the temporary server (if one will be needed) a :class:`GuardedServer`; returns it (not started)."""
    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return None
    existing = SubprocessASGIServer._instances.get(None)
    if existing is not None:
        return existing  # already made (a test harness's, or ours)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        with contextlib.suppress(ValueError):  # ValueError: not the main thread (then atexit + lifeline only)
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
    return GuardedServer()  # registered as the default (port None) instance that Prefect's clients ask for
