"""Who may read what in a registry: the controller's state owner-only, the public parts for a readers' group.

The registry directory is the gate. Its mode is ``0750`` with the readers' group named at ``sdgov init --readers
GROUP`` as its group (``0700`` when none is named): nobody else gets past it, whatever lies inside. Behind it:

=====================================  =========  ==========================================================
entry                                  mode       who reads it
=====================================  =========  ==========================================================
``log.jsonl``, ``registry.json``,      ``0644``   the owner and the readers' group (approvers, compliance):
``policy.yaml``, ``controller.yaml``,             the signed log, the registry's public key, the controller's
``approvers.yaml``, ``controller/``,              files; ``.lock`` too, which a reader never writes (reads
``releases/``, ``.lock``                          take no lock)
``runs/``, ``runs/<run>/``             ``0711``   passed through by name, never listed: inside a run only what
                                                  approvers are shown is theirs — the pause records
                                                  (``pauses/``) and the draft card (``draft/``), ``0755``/``0644``
everything else (``runs/<run>/*``:     ``0700``   the owner only: the encoded records (``codes.parquet``), the
encoded records, evidence, ψ before    ``0600``   evidence report, the measurement store, proposals naming the
release; ``measurements/``,                       controller's files
``proposals/`` …)
=====================================  =========  ==========================================================

The controller's processes create files private whatever the umask they were started with
(:func:`private_umask`, set where the site is resolved), so a new file is owner-only until it is deliberately
shared (:func:`share`); :func:`protect` puts the top level back as the table says under every lock a writer takes,
and :func:`exposed` lists what a reader other than the owner could open that they should not (``sdgov registry
verify`` reports it). The keys, the commitment secret and the budget authority live outside the registry, owner-only
(``0600`` in ``0700`` directories).
"""

from __future__ import annotations

import contextlib
import grp
import os
import stat
from pathlib import Path

from sdgov.base.errors import RegistryError

PUBLIC_FILES = frozenset({"log.jsonl", "registry.json", "policy.yaml", "controller.yaml", "approvers.yaml", ".lock"})
PUBLIC_DIRS = frozenset({"releases", "controller"})
RUNS = "runs"
SHARED_IN_RUN = ("pauses", "draft")  # what approvers are shown of a run

_SHARED = 0o644
_SHARED_DIR = 0o755
_PASS = 0o711
_PRIVATE = 0o600
_PRIVATE_DIR = 0o700


def private_umask() -> None:
    """This process creates files ``0600`` and directories ``0700`` (umask ``077``), whatever umask it started with:
    the controller's state is owner-only unless it is deliberately shared."""
    os.umask(0o077)


def group_id(name: str, where: str = "--readers") -> int:
    """The readers' group's id, or a one-line error naming it."""
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        raise RegistryError(
            f"no group {name!r} on this machine", where, "create it (groupadd) and add the readers to it"
        ) from None


def _chmod(path: Path, mode: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        if not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) != mode:
            path.chmod(mode)


def protect(root: Path, group: str | None) -> None:
    """Put the registry's top level back as the module's table says (the owner's processes, under the lock): the
    root gated to the owner and ``group``, the public entries readable behind it, ``runs/`` passable, every other
    entry owner-only."""
    if group:
        gid = group_id(group, str(root))
        if root.stat().st_gid != gid:
            try:
                os.chown(root, -1, gid)
            except PermissionError:
                raise RegistryError(
                    f"cannot give the registry to the readers' group {group!r} (this user is not in it)",
                    str(root),
                    f"add the controller's user to {group!r} (usermod -aG), or name another group with 'sdgov init'",
                ) from None
    _chmod(root, 0o750 if group else 0o700)
    for entry in root.iterdir():
        if entry.is_symlink():
            continue  # refused by verify wherever it matters; never followed here
        if entry.name in PUBLIC_FILES or entry.name in PUBLIC_DIRS:
            _chmod(entry, _SHARED_DIR if entry.is_dir() else _SHARED)
        elif entry.name == RUNS:
            _chmod(entry, _PASS)
        else:
            _chmod(entry, _PRIVATE_DIR if entry.is_dir() else _PRIVATE)
    controller = root / "controller"
    for f in controller.iterdir() if controller.is_dir() and not controller.is_symlink() else ():
        if f.is_file() and not f.is_symlink():
            _chmod(f, _SHARED)  # the committed approvers registries: public keys, read by every signer
    releases = root / "releases"
    for d in releases.iterdir() if releases.is_dir() else ():
        if d.is_dir() and not d.is_symlink() and not d.name.startswith("."):
            _chmod(d, _SHARED_DIR)
    runs = root / RUNS
    for run in runs.iterdir() if runs.is_dir() and not runs.is_symlink() else ():
        if run.is_dir() and not run.is_symlink() and run.stat().st_mode & 0o044:
            _tighten(run)  # a run written before this layout (listable, its files readable): the controller's again


def _tighten(run: Path) -> None:
    """An old run's files owner-only, but what approvers are shown; the run passable by name."""
    for p in sorted(run.rglob("*"), reverse=True):
        if p.is_symlink():
            continue
        shared = p.relative_to(run).parts[0] in SHARED_IN_RUN
        _chmod(p, (_SHARED_DIR if shared else _PRIVATE_DIR) if p.is_dir() else (_SHARED if shared else _PRIVATE))
    _chmod(run, _PASS)


def open_run(run_dir: Path) -> None:
    """A new run's directory: passable by name (its shared pieces are reached through it), never listable."""
    run_dir.parent.mkdir(mode=_PRIVATE_DIR, exist_ok=True)
    _chmod(run_dir.parent, _PASS)
    run_dir.mkdir(mode=_PRIVATE_DIR)
    _chmod(run_dir, _PASS)


def share(path: Path) -> None:
    """Make one file of a run readable behind the registry's gate (a pause record, the draft card): its folder
    (``pauses/``, ``draft/``) listable, the file readable; nothing else in the run changes."""
    _chmod(path.parent, _SHARED_DIR)
    _chmod(path, _SHARED)


def exposed(root: Path) -> list[str]:
    """Confidential entries another user could open behind the gate (written under a lax umask, or by hand): the
    private top-level entries and every file of a run but the pieces shared with approvers."""
    out = []

    def readable(p: Path) -> bool:
        return not p.is_symlink() and bool(p.lstat().st_mode & 0o044)

    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.name in PUBLIC_FILES or entry.name in PUBLIC_DIRS or entry.name == RUNS:
            continue
        if readable(entry):
            out.append(f"{entry.name}: readable by others (the controller's alone: mode 0700/0600)")
    runs = root / RUNS
    if runs.is_dir() and readable(runs):
        out.append(f"{RUNS}: listable by others (mode 0711: passable, not listable)")

    def walk(d: Path, rel: str) -> None:  # what others reach by name: through passable folders only
        for p in sorted(d.iterdir()):
            if p.is_symlink() or (d == run and p.name in SHARED_IN_RUN):
                continue
            if readable(p):
                out.append(f"{rel}/{p.name}: readable by others (the controller's alone: mode 0600/0700)")
            elif p.is_dir() and p.lstat().st_mode & 0o011:
                walk(p, f"{rel}/{p.name}")

    for run in sorted(runs.iterdir()) if runs.is_dir() else []:
        if run.is_symlink() or not run.is_dir():
            continue
        if readable(run):
            out.append(f"{RUNS}/{run.name}: listable by others (mode 0711)")
        walk(run, f"{RUNS}/{run.name}")
    return out
