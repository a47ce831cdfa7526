"""git and DVC in the release repository, as subprocesses: the project directory, its DVC remote, a lock.

DVC runs as the ``dvc`` of this Python environment (beside the interpreter; else the one on ``PATH``), with
analytics off; its ``generate`` stages call ``sdgov``, found the same way."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sdgov.base.errors import SdgovError

AUTHOR = ("sdgov", "sdgov@localhost")
"""The commit identity when the project's git has none configured."""


class ChannelError(SdgovError):
    """A git or DVC step in the release repository failed: the release itself stands."""


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def run(project: Path, *argv: str, check: bool = True) -> str:
    """Run ``argv`` (git or dvc) in ``project``; a failure is one :class:`ChannelError` line with the tool's first
    error line."""
    try:
        p = subprocess.run(argv, cwd=project, env=_env(), capture_output=True, text=True, timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ChannelError(
            f"'{' '.join(argv[:2])}' could not run ({exc})", str(project), "install git and dvc"
        ) from None
    if check and p.returncode != 0:
        lines = [ln.strip() for ln in (p.stderr + "\n" + p.stdout).splitlines() if ln.strip()]
        first = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else f"exit {p.returncode}")
        raise ChannelError(f"'{' '.join(argv[:2])}' failed: {first[:300]}", str(project), "")
    return p.stdout


@contextmanager
def locked(project: Path) -> Iterator[None]:
    """One publisher at a time in ``project`` (two releases finishing together commit one after the other)."""
    project.mkdir(parents=True, exist_ok=True)
    if not (project / ".git").exists():
        run(project, "git", "init", "-q")
    with open(project / ".git" / "sdgov-publish.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_project(project: Path, remote_name: str, remote_url: str) -> None:
    """``project`` (a git repository: :func:`locked`) as a DVC project whose default remote ``remote_name`` is
    ``remote_url`` (created where missing; the URL set again each time, so a changed configuration takes effect)."""
    if not (project / ".dvc").is_dir():
        run(project, "dvc", "init", "-q")
    run(project, "dvc", "remote", "add", "-f", "-d", remote_name, remote_url)


def commit_paths(project: Path, paths: list[str], message: str) -> bool:
    """``git add`` ``paths`` and commit them; False when there was nothing to commit."""
    paths = [p for p in paths if (project / p).exists()]
    if not paths:
        return False
    run(project, "git", "add", "-A", "--", *paths)
    if not run(project, "git", "status", "--porcelain", "--", *paths).strip():
        return False
    ident: list[str] = []
    if not run(project, "git", "config", "user.email", check=False).strip():
        ident = ["-c", f"user.name={AUTHOR[0]}", "-c", f"user.email={AUTHOR[1]}"]
    run(project, "git", *ident, "commit", "-q", "-m", message)
    return True


def tracked(project: Path, path: str) -> bool:
    """Whether ``path`` (a file) is in ``project``'s last commit (not merely staged by a commit that then broke)."""
    return bool(run(project, "git", "ls-tree", "--name-only", "HEAD", "--", path, check=False).strip())
