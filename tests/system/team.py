"""The people of a team deployment as separate processes, each holding only what it should.

:func:`run_party` runs ``sdgov …`` for one person (the analyst, an approver) in its own process, with its own
environment, and with a Python audit hook (:func:`sys.addaudithook`) that stops the process the moment it opens a
forbidden path: the confidential data file, the registry's signing key (or a whole directory of them). A test then
shows, with a process that would have been stopped, that the approver's ``sdgov approve`` never read the data.

The hook is installed by a ``sitecustomize`` module in a directory put first on ``PYTHONPATH``, so it is in place
before ``sdgov`` imports anything, and in every Python process the party starts. It sees what Python opens
(``open``, ``os.open``, ``io``, ``pathlib``); a native library that opens a file itself (DuckDB reading a CSV) is
not seen, but every sdgov read of the data first checks and hashes the file in Python.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
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
    """A directory holding the ``sitecustomize`` module (written once per test process)."""
    global _HOOK_DIR
    if _HOOK_DIR is None:
        _HOOK_DIR = Path(tempfile.mkdtemp(prefix="sdgov-party-"))
        (_HOOK_DIR / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return _HOOK_DIR


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
    name: str, argv: list[str], env: dict[str, str], forbid: Sequence[Path] = (), timeout: float = 300
) -> PartyResult:
    """Run ``sdgov *argv`` as ``name`` in its own process with exactly ``env`` (plus the hook) and wait for it; the
    process is stopped (exit :data:`FORBIDDEN_EXIT`, a line on stderr) if it opens anything in ``forbid``."""
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
