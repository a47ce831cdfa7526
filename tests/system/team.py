"""The people of a team deployment as separate processes, each holding only what it should.

:func:`run_party` runs ``sdgov …`` for one person (the analyst, an approver) in its own process, with its own
environment, and with a Python audit hook (:func:`sys.addaudithook`) that stops the process the moment it opens a
forbidden path: the confidential data file, the registry's signing key (or a whole directory of them). A test then
shows, with a process that would have been stopped, that the approver's ``sdgov approve`` never read the data.

The hook is installed by a ``sitecustomize`` module in a directory put first on ``PYTHONPATH``, so it is in place
before ``sdgov`` imports anything, and in every Python process the party starts. It sees what Python opens
(``open``, ``os.open``, ``io``, ``pathlib``); a native library that opens a file itself (DuckDB reading a CSV) is
not seen, but every sdgov read of the data first checks and hashes the file in Python.

Where the tests run as root, a party can also be a separate OS user (:class:`OSUser`, made with ``useradd`` and
removed after): then the file system's permissions, not only the hook, decide what it may open — what a team's
people are on the controller's machine (``docs/operators.md``). That needs an interpreter other users can run
(``scripts/setup.sh`` builds the venv on one); :func:`os_users_unavailable` says why not, and the tests skip.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

FORBIDDEN_EXIT = 97
"""The exit status of a party process that tried to open a forbidden path."""

SITECUSTOMIZE = '''\
"""sdgov test party: stop this process when it opens a path it must not (tests/system/team.py)."""
import os
import sys

_FORBID = tuple(p for p in os.environ.get("SDGOV_PARTY_FORBID", "").split(os.pathsep) if p)
_NAME = os.environ.get("SDGOV_PARTY", "party")


def _forbidden(path):
    try:
        real = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return None
    for p in _FORBID:
        if real == p or real.startswith(p.rstrip(os.sep) + os.sep):
            return real
    return None


def _hook(event, args):
    if event == "open" and args and not isinstance(args[0], int):
        hit = _forbidden(args[0])
        if hit is not None:
            os.write(2, f"party {_NAME}: stopped: opened forbidden path {hit}\\n".encode())
            os._exit(__EXIT_STATUS__)


if _FORBID:
    sys.addaudithook(_hook)
'''.replace("__EXIT_STATUS__", str(FORBIDDEN_EXIT))


@dataclass(frozen=True)
class PartyResult:
    """How a party's command ended: its exit status, output, and whether the audit hook stopped it."""

    name: str
    returncode: int
    stdout: str
    stderr: str

    @property
    def stopped(self) -> bool:
        """True when the process opened a forbidden path and was stopped there."""
        return self.returncode == FORBIDDEN_EXIT and f"party {self.name}: stopped" in self.stderr


def _hook_dir() -> Path:
    """A directory holding the ``sitecustomize`` module (written once per test process; readable by every party,
    an OS user's too)."""
    global _HOOK_DIR
    if _HOOK_DIR is None:
        _HOOK_DIR = Path(tempfile.mkdtemp(prefix="sdgov-party-"))
        (_HOOK_DIR / "sitecustomize.py").write_text(SITECUSTOMIZE)
        (_HOOK_DIR / "sitecustomize.py").chmod(0o644)
        _HOOK_DIR.chmod(0o755)
    return _HOOK_DIR


@dataclass(frozen=True)
class OSUser:
    """A person of the team as an OS user of their own: their ids, their groups and a home only they can enter."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: Path

    def run(self, argv: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> PartyResult:
        """Run ``argv`` as this user in their home, with ``env`` (else a bare one naming their home)."""
        done = subprocess.run(
            argv,
            env={"PATH": "/usr/bin:/bin", **(env or {}), "HOME": str(self.home)},
            cwd=self.home,
            user=self.uid,
            group=self.gid,
            extra_groups=list(self.groups),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return PartyResult(self.name, done.returncode, done.stdout, done.stderr)

    def reads(self, path: Path) -> bool:
        """Whether this user can read ``path`` (a file's bytes, or a folder's listing)."""
        argv = ["ls", str(path)] if path.is_dir() else ["cat", str(path)]
        return self.run(argv).returncode == 0


def os_users_unavailable() -> str | None:
    """Why the tests cannot run people as separate OS users here (None: they can)."""
    if os.geteuid() != 0:
        return "not root: separate OS users need useradd"
    if shutil.which("useradd") is None:
        return "no useradd on this machine"
    base = Path(sys.base_prefix).resolve()
    if not all(os.stat(p).st_mode & 0o001 for p in [base, *base.parents]):
        return f"the venv's interpreter ({base}) is not runnable by other users: rebuild it with scripts/setup.sh"
    return None


@contextmanager
def os_users(names: Sequence[str], readers: Sequence[str]) -> Iterator[tuple[dict[str, OSUser], str]]:
    """The people ``names`` as new OS users (homes under a folder every user may pass through), those in
    ``readers`` also in a new readers' group; yields them by name and the group's name; all removed afterwards."""
    tag = uuid.uuid4().hex[:6]
    group = f"sdgov-r{tag}"
    base = Path(tempfile.mkdtemp(prefix="sdgov-people-"))
    base.chmod(0o711)
    made: list[str] = []
    subprocess.run(["groupadd", group], check=True)
    try:
        users = {}
        for name in names:
            login = f"sdgov-{name.split()[0].lower()[:6]}{tag}"
            extra = ["-G", group] if name in readers else []
            subprocess.run(["useradd", "-M", "-N", "-s", "/bin/sh", *extra, login], check=True)
            made.append(login)
            entry = pwd.getpwnam(login)
            home = base / login
            home.mkdir(mode=0o700)
            os.chown(home, entry.pw_uid, entry.pw_gid)
            groups = (grp.getgrnam(group).gr_gid,) if name in readers else ()
            users[name] = OSUser(login, entry.pw_uid, entry.pw_gid, groups, home)
        yield users, group
    finally:
        for login in made:
            subprocess.run(["userdel", login], check=False, capture_output=True)
        subprocess.run(["groupdel", group], check=False, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


_HOOK_DIR: Path | None = None


def party_env(name: str, env: dict[str, str], forbid: list[Path]) -> dict[str, str]:
    """``env`` plus the hook: ``sitecustomize`` first on ``PYTHONPATH`` and the forbidden paths (resolved)."""
    path = os.pathsep.join([str(_hook_dir()), *filter(None, [env.get("PYTHONPATH")])])
    forbidden = os.pathsep.join(os.path.realpath(p) for p in forbid)
    return {**env, "PYTHONPATH": path, "SDGOV_PARTY": name, "SDGOV_PARTY_FORBID": forbidden}


def sdgov_argv(*argv: str) -> list[str]:
    """The ``sdgov`` console script of this environment, with ``argv``."""
    return [str(Path(sys.executable).with_name("sdgov")), *argv]


def run_party(
    name: str,
    argv: list[str],
    env: dict[str, str],
    forbid: Sequence[Path] = (),
    timeout: float = 300,
    user: OSUser | None = None,
) -> PartyResult:
    """Run ``sdgov *argv`` as ``name`` in its own process with exactly ``env`` (plus the hook) and wait for it; the
    process is stopped (exit :data:`FORBIDDEN_EXIT`, a line on stderr) if it opens anything in ``forbid``. With
    ``user``, the process is that OS user's (in their home, with their groups)."""
    if user is not None:
        done = user.run(sdgov_argv(*argv), party_env(name, env, list(forbid)), timeout)
        return PartyResult(name, done.returncode, done.stdout, done.stderr)
    done = subprocess.run(
        sdgov_argv(*argv),
        env=party_env(name, env, list(forbid)),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return PartyResult(name, done.returncode, done.stdout, done.stderr)


def start_party(name: str, argv: list[str], env: dict[str, str], forbid: Sequence[Path] = ()) -> subprocess.Popen[str]:
    """:func:`run_party` without waiting: the process (stdout and stderr piped, its own session) to watch and end."""
    return subprocess.Popen(
        sdgov_argv(*argv),
        env=party_env(name, env, list(forbid)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
