"""A throwaway PostgreSQL cluster for the team tests, and a team's Prefect server on it.

``postgres_cluster`` runs Debian's (or any) PostgreSQL server binaries: ``initdb`` a cluster in a temporary directory,
``pg_ctl start`` it on a free port of 127.0.0.1 (its unix socket in that directory, password authentication over
TCP), create a database, and stop and remove it all afterwards. ``initdb`` refuses to run as root: as root (CI's
containers) the cluster is run by the ``postgres`` user that Debian's package creates. Where the binaries or that user
are missing the tests are skipped, saying why (``scripts/setup.sh`` installs ``postgresql`` when it can).

``team_server`` is what an office runs: ``sdgov server start --database URL --auth USER:PASSWORD`` in a subprocess,
Prefect's server on that database with basic auth on, and yields the settings its clients use.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PG_USER = "sdgov"
"""The cluster's superuser (``initdb -U``); the tests' server connects as it, with a random password."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bindir() -> Path | None:
    """Where ``initdb``/``pg_ctl`` are: ``$SDGOV_PG_BIN``, else the newest Debian ``/usr/lib/postgresql/N/bin``,
    else beside a ``pg_ctl`` on ``PATH``; ``None`` when there are none."""
    explicit = os.environ.get("SDGOV_PG_BIN")
    candidates = [Path(explicit)] if explicit else []
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    candidates += [Path(p) for p in debian if Path(p).parent.name.isdigit()]
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for bindir in candidates:
        if all((bindir / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return bindir
    return None


def _run_as() -> tuple[int, int] | None:
    """The (uid, gid) the cluster's processes run as: ``None`` (this user) unless this is root, which ``initdb`` and
    ``postgres`` refuse; then the ``postgres`` system user. Skips the test when root has no such user."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("PostgreSQL refuses to run as root and there is no 'postgres' user to run it as")
    return entry.pw_uid, entry.pw_gid


@dataclass
class PostgresCluster:
    """A running cluster: connect to ``host:port`` as ``user`` with ``password``; :meth:`url` names a database."""

    bindir: Path
    home: Path
    host: str
    port: int
    user: str
    password: str
    databases: list[str] = field(default_factory=list)

    def url(self, database: str, with_password: bool = True) -> str:
        """``postgresql://USER[:PASSWORD]@127.0.0.1:PORT/DATABASE``."""
        who = f"{self.user}:{self.password}" if with_password else self.user
        return f"postgresql://{who}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """``createdb NAME`` (over TCP, with the password); returns the database's URL."""
        subprocess.run(
            [str(self.bindir / "createdb"), "-h", self.host, "-p", str(self.port), "-U", self.user, name],
            env={**os.environ, "PGPASSWORD": self.password},
            check=True,
            capture_output=True,
            timeout=60,
        )
        self.databases.append(name)
        return self.url(name)


@contextlib.contextmanager
def postgres(database: str = "prefect") -> Iterator[PostgresCluster]:
    """``initdb`` + ``pg_ctl start`` a cluster in a fresh temporary directory, create ``database``; stopped
    (``pg_ctl stop -m fast``) and removed on exit. Skips the test when PostgreSQL's server binaries are absent."""
    bindir = pg_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed: apt-get install postgresql")
    owner = _run_as()
    # not under pytest's tmp_path: as root that is mode 700, and the cluster's user must reach its directory
    home = Path(tempfile.mkdtemp(prefix="sdgov-pg-"))
    as_owner: dict = {}
    if owner is not None:
        os.chown(home, *owner)
        as_owner = {"user": owner[0], "group": owner[1], "extra_groups": []}
    password = secrets.token_hex(12)
    pwfile = home / "pw"
    pwfile.write_text(password + "\n")
    if owner is not None:
        os.chown(pwfile, *owner)
    data, port = home / "data", free_port()
    started = False
    try:
        subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", PG_USER, f"--pwfile={pwfile}", "-E", "UTF8"]
            + ["--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "--no-instructions"],
            check=True,
            capture_output=True,
            timeout=120,
            **as_owner,
        )
        pwfile.unlink()
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={home} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"  # a throwaway cluster: speed over safety
        )
        start = subprocess.run(
            [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(home / "server.log"), "-w", "-t", "120"]
            + ["-o", options, "start"],
            capture_output=True,
            text=True,
            timeout=150,
            **as_owner,
        )
        if start.returncode != 0:
            log = (home / "server.log").read_text() if (home / "server.log").exists() else ""
            raise AssertionError(f"pg_ctl start failed: {start.stdout}{start.stderr}{log[-2000:]}")
        started = True
        cluster = PostgresCluster(bindir, home, "127.0.0.1", port, PG_USER, password)
        cluster.create_database(database)
        yield cluster
    finally:
        if started:
            subprocess.run(
                [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "-t", "60", "stop"],
                capture_output=True,
                timeout=90,
                **as_owner,
            )
        shutil.rmtree(home, ignore_errors=True)


@dataclass
class TeamServer:
    """A running ``sdgov server start --database … --auth …``: its URL, the environment its clients run with
    (``PREFECT_API_URL``, ``PREFECT_API_AUTH_STRING``, no server settings), and its stderr so far."""

    url: str
    env: dict[str, str]
    auth: str
    database_url: str
    log: Path

    def stderr(self) -> str:
        """What ``sdgov server start`` and the Prefect server have written to stderr so far."""
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def team_server(cluster: PostgresCluster, home: Path, database: str = "prefect") -> Iterator[TeamServer]:
    """``sdgov server start --database URL --auth ops:RANDOM`` on 127.0.0.1 (its ``PREFECT_HOME`` in ``home``),
    waited for until healthy, checked to refuse a client without the password; SIGTERM to its process group on exit."""
    import httpx

    home.mkdir(parents=True, exist_ok=True)
    port, auth = free_port(), f"ops:{secrets.token_hex(8)}"
    database_url = cluster.url(database)
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SDGOV_SERVER_"))}
    log = home / "server.stderr"
    sdgov = str(Path(sys.executable).with_name("sdgov"))
    argv = [sdgov, "server", "start", "--port", str(port), "--home", str(home / "server-home")]
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [*argv, "--database", database_url, "--auth", auth],
            env=bare,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"sdgov server start exited {proc.returncode}: {log.read_text()[-3000:]}")
            assert time.monotonic() < deadline, f"the team server did not answer: {log.read_text()[-3000:]}"
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        assert httpx.post(f"{url}/api/flow_runs/filter", json={}).status_code == 401, "basic auth must be on"
        client = {  # a client of the server holds its credential, no key: the registry key stays with the controller
            **{k: v for k, v in bare.items() if k not in ("SDGOV_KEY_DIR", "SDGOV_REGISTRY_KEY")},
            "PREFECT_HOME": str(home / "client-home"),
            "PREFECT_API_URL": f"{url}/api",
            "PREFECT_API_AUTH_STRING": auth,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
        yield TeamServer(url, client, auth, database_url, log)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)  # the server this fixture started, and its children
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
