"""A local Prefect server for one person or a team: ``sdgov server start``.

127.0.0.1 only, analytics off, SQLite in ``PREFECT_HOME`` or a team's PostgreSQL (:mod:`.server_database`), basic
auth when asked. The server runs under :mod:`sdgov.base.lifeline`, so it stops when the ``sdgov`` process that
started it dies, ``kill -9`` included; SIGTERM or SIGHUP to that process stops it too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdgov.base.errors import SdgovError


def server_env(home: Path, port: int, auth: str | None, database: str | None = None) -> dict[str, str]:
    """The environment of a local Prefect server on 127.0.0.1:``port`` with its SQLite database in ``home`` (or the
    PostgreSQL ``database``, a URL checked by :func:`sdgov.flows.plumbing.server_database.parse`) and the client
    settings; ``auth`` (``USER:PASSWORD``, else an ``SdgovError``) turns on basic auth for both."""
    from sdgov.flows.plumbing.server_database import parse

    env = {
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": parse(database).url
        if database
        else f"sqlite+aiosqlite:///{home / 'prefect.db'}",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_API_HOST": "127.0.0.1",
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_UI_API_URL": f"http://127.0.0.1:{port}/api",
    }
    if auth:
        if ":" not in auth:
            raise SdgovError("--auth must be USER:PASSWORD", "--auth", "e.g. --auth ops:$(openssl rand -hex 12)")
        env["PREFECT_SERVER_API_AUTH_STRING"] = auth  # the server demands HTTP basic auth (UI shows a login)
        env["PREFECT_API_AUTH_STRING"] = auth  # what clients (flows, sdgov approve/runs) send
    return env


@dataclass(frozen=True)
class LocalServer:
    """A local Prefect server as configured: its home, port, basic auth and database (None: SQLite in the home),
    with the environment it runs in (:func:`server_env`)."""

    home: Path
    port: int
    auth: str | None
    database: str | None
    env: dict[str, str]

    @classmethod
    def configure(cls, home: str | None, port: int, auth: str | None, database: str | None) -> LocalServer:
        """The server of ``home`` (else ``$PREFECT_HOME``, else ``~/.prefect``; created), ``auth`` (else
        ``$PREFECT_SERVER_API_AUTH_STRING``) and ``database`` (else the settings' ``SDGOV_SERVER_DATABASE``); a bad
        ``--auth`` or database URL is one line."""
        from sdgov.base.settings import load_settings

        where = Path(home or os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").resolve()
        where.mkdir(parents=True, exist_ok=True)
        auth = auth or os.environ.get("PREFECT_SERVER_API_AUTH_STRING")
        database = database or load_settings().server_database()
        return cls(where, port, auth, database, server_env(where, port, auth, database))

    @property
    def client_env(self) -> dict[str, str]:
        """What a client needs to reach it: ``PREFECT_API_URL`` (and ``PREFECT_API_AUTH_STRING`` with basic auth)."""
        return {k: self.env[k] for k in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING") if k in self.env}

    def store(self) -> str:
        """Where its runs are kept, as shown to people (never the database's password); a PostgreSQL database that
        does not answer is one line, before the server starts (Prefect's would be a traceback at startup)."""
        if not self.database:
            return f"SQLite {self.home / 'prefect.db'}"
        from sdgov.flows.plumbing.server_database import check_reachable, parse

        db = parse(self.database)
        check_reachable(db)
        return f"PostgreSQL {db.shown}"

    def run(self) -> int:
        """Run the server until it stops and return its exit status; it dies with this process, even on ``kill -9``."""
        read, write = os.pipe()  # the server's lifeline (sdgov.base.lifeline): it stops when this process dies
        cmd = [sys.executable, "-m", "sdgov.base.lifeline", str(read), "prefect", "server", "start"]
        cmd += ["--host", "127.0.0.1", "--port", str(self.port)]
        try:
            proc = subprocess.Popen(cmd, env={**os.environ, **self.env}, pass_fds=(read,))
        finally:
            os.close(read)
        return _wait_forwarding_signals(proc)


def _wait_forwarding_signals(proc: subprocess.Popen) -> int:
    """Wait for the server; SIGTERM or SIGHUP to ``sdgov server start`` stops it too (its child is not left behind)."""
    import signal

    def stop(signum: int, frame: Any) -> None:
        proc.send_signal(signal.SIGTERM)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # Ctrl-C: the terminal sent SIGINT to the server too; let it finish stopping
            proc.send_signal(signal.SIGTERM)
