"""The artifact registry: immutable release directories and an append-only, hash-chained event log.

Layout under the store root (default ``./registry``, or ``$SDGOV_REGISTRY``, or ``--root``)::

    log.jsonl                      one canonical-JSON event per line; each carries the hash of the one before
    measurements/<key>.json        noisy marginals, drawn once per (agreement, dataset) and reused ever after
    runs/<run_id>/                 stage work directories (intermediate artifacts, provenance records)
    releases/<release_id>/         immutable: synthetic data, card.{html,md,json}, artifacts, manifest.json

A release directory is assembled in a staging directory and renamed into place in one step, its files made
read-only, and its manifest's sha256 written into the log's ``released`` event. :func:`verify` recomputes
everything and names the first byte-level discrepancy in each file or log line.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sdgov.atomic import atomic_write_bytes
from sdgov.contracts import utcnow
from sdgov.errors import RegistryError
from sdgov.hashing import canonical_json, sha256_bytes, sha256_file
from sdgov.model import Frozen

GENESIS = "0" * 64
LOG = "log.jsonl"
MANIFEST = "manifest.json"


def default_root() -> Path:
    return Path(os.environ.get("SDGOV_REGISTRY", "registry"))


class Event(Frozen):
    seq: int
    time: str
    event: str
    actor: str
    role: str
    agreement_sha256: str = ""
    release_id: str = ""
    run_id: str = ""
    decision: str = ""
    comment: str = ""
    artifacts: dict[str, str] = {}
    prev: str
    hash: str = ""

    def body_hash(self) -> str:
        return sha256_bytes(canonical_json(self.model_dump(exclude={"hash"})))


class Registry:
    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()
        try:  # a root that is a file or a symlink loop is one line here, not a traceback deep in a command
            usable = not self.root.exists() or self.root.is_dir()
            self.root.resolve(strict=self.root.is_symlink())
        except (OSError, RuntimeError) as exc:
            raise RegistryError(
                f"the registry root cannot be used ({getattr(exc, 'strerror', None) or exc})",
                str(self.root),
                "point --root (or $SDGOV_REGISTRY) at a registry directory",
            ) from None
        if not usable:
            raise RegistryError(
                "the registry root is not a directory", str(self.root), "point --root at a registry directory"
            )

    # ---------------------------------------------------------------- paths
    @property
    def log_path(self) -> Path:
        return self.root / LOG

    def run_dir(self, run_id: str) -> Path:
        return self.root / "runs" / run_id

    def release_dir(self, release_id: str) -> Path:
        return self.root / "releases" / release_id

    def measurement_path(self, key: str) -> Path:
        return self.root / "measurements" / f"{key}.json"

    @contextmanager
    def lock(self) -> Iterator[None]:
        """One writer at a time across processes (log appends, release publication, measurement draws)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    # ---------------------------------------------------------------- log
    def events(self) -> list[Event]:
        """The log's events; a line that is not an event is one :class:`RegistryError` naming it (commands that
        read the log — list, budget, release — stop there; ``verify`` reports it among its problems)."""
        if not self.log_path.exists():
            return []
        out = []
        for i, line in enumerate(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if not line:
                continue
            try:
                out.append(Event.model_validate_json(line))
            except ValueError:
                raise RegistryError(
                    f"log line {i} is not a valid event (corrupt or edited)",
                    str(self.log_path),
                    "run 'sdgov registry verify' and restore the log from a backup",
                ) from None
        return out

    def append(self, event: str, actor: str, role: str, **fields: Any) -> Event:
        with self.lock():
            return self.append_locked(event, actor, role, **fields)

    def append_locked(self, event: str, actor: str, role: str, **fields: Any) -> Event:
        """Append an event; the caller already holds :meth:`lock` (so a check and its record are one step)."""
        existing = self.events()
        prev = existing[-1].hash if existing else GENESIS
        e = Event(seq=len(existing), time=utcnow(), event=event, actor=actor, role=role, prev=prev, **fields)
        e = e.model_copy(update={"hash": e.body_hash()})
        with open(self.log_path, "ab") as f:
            f.write(canonical_json(e.model_dump()) + b"\n")
            f.flush()
            os.fsync(f.fileno())
        return e

    # ---------------------------------------------------------------- releases
    def publish(
        self,
        release_id: str,
        files: dict[str, Path],
        manifest_extra: dict[str, Any],
        actor: str,
        role: str,
        **event_fields: Any,
    ) -> tuple[Path, str]:
        """Copy ``files`` (name → source) into a new immutable release directory and log it.

        Returns the release directory and the manifest's sha256. Refuses to touch an existing release.
        """
        final = self.release_dir(release_id)
        with self.lock():
            if final.exists():
                raise RegistryError(
                    f"release {release_id!r} already exists; releases are immutable",
                    str(final),
                    "publish under a new release id",
                )
            staging = self.root / "releases" / f".staging-{release_id}"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            try:
                entries = {}
                for name, src in sorted(files.items()):
                    dst = staging / name
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dst)
                    entries[name] = {"sha256": sha256_file(dst), "bytes": dst.stat().st_size}
                manifest = {"release_id": release_id, "files": entries, **manifest_extra}
                manifest_bytes = json.dumps(manifest, sort_keys=True, indent=2).encode() + b"\n"
                atomic_write_bytes(staging / MANIFEST, manifest_bytes)
                for p in staging.rglob("*"):
                    if p.is_file():
                        p.chmod(0o444)
                os.rename(staging, final)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            manifest_sha = sha256_bytes(manifest_bytes)
            self.append_locked(
                "released",
                actor,
                role,
                release_id=release_id,
                artifacts={MANIFEST: manifest_sha, **{k: v["sha256"] for k, v in entries.items()}},
                **event_fields,
            )
        return final, manifest_sha

    def releases(self) -> list[dict[str, Any]]:
        out = []
        for e in self.events():
            if e.event == "released":
                d = self.release_dir(e.release_id)
                out.append(
                    {
                        "release_id": e.release_id,
                        "time": e.time,
                        "agreement_sha256": e.agreement_sha256,
                        "manifest_sha256": e.artifacts.get(MANIFEST, ""),
                        "path": str(d),
                    }
                )
        return out

    def manifest(self, release_id: str) -> dict[str, Any]:
        path = self.release_dir(release_id) / MANIFEST
        if not path.is_file():
            known = ", ".join(r["release_id"] for r in self.releases()) or "none"
            raise RegistryError(f"no release {release_id!r}", str(self.root), f"known releases: {known}")
        return json.loads(path.read_text())

    # ---------------------------------------------------------------- verification
    def verify(self) -> list[str]:
        """Every problem found, each naming the file (and log line) at fault. Empty means intact."""
        problems: list[str] = []
        events = self._verify_log(problems)
        released = {e.release_id: e for e in events if e.event == "released"}
        rel_root = self.root / "releases"
        dirs = sorted(p.name for p in rel_root.iterdir() if p.is_dir()) if rel_root.is_dir() else []
        for name in dirs:
            if name.startswith(".staging-"):
                problems.append(f"releases/{name}: unfinished release (staging directory left by a crash)")
            elif name not in released:
                problems.append(f"releases/{name}: release directory with no 'released' event in {LOG}")
        for rid, e in released.items():
            self._verify_release(rid, e, problems)
        for e in events:  # persisted noisy marginals must stay exactly as drawn
            for name, sha in e.artifacts.items() if e.event == "measured" else ():
                path = self.root / name
                if not path.is_file():
                    problems.append(f"{name}: persisted measurement missing (logged at line {e.seq + 1})")
                elif sha256_file(path) != sha:
                    problems.append(f"{name}: sha256 differs from the one logged at line {e.seq + 1} (modified)")
        return problems

    def _verify_log(self, problems: list[str]) -> list[Event]:
        if not self.log_path.exists():
            if (self.root / "releases").is_dir() and any((self.root / "releases").iterdir()):
                problems.append(f"{LOG}: missing, but releases exist")
            return []
        events: list[Event] = []
        prev = GENESIS
        for i, raw in enumerate(self.log_path.read_bytes().split(b"\n"), start=1):
            if not raw:
                continue
            try:
                e = Event.model_validate_json(raw)
            except ValueError:
                problems.append(f"{LOG} line {i}: not a valid event (corrupted)")
                prev = "?"
                continue
            if canonical_json(e.model_dump()) != raw:
                problems.append(f"{LOG} line {i}: bytes differ from the canonical form of its event (edited)")
            if e.hash != e.body_hash():
                problems.append(f"{LOG} line {i}: hash does not match its content (edited)")
            if e.prev != prev and prev != "?":
                problems.append(f"{LOG} line {i}: chain broken (prev hash does not match line {i - 1})")
            if e.seq != i - 1:
                problems.append(f"{LOG} line {i}: sequence number {e.seq} out of order (line removed or inserted)")
            prev = e.hash
            events.append(e)
        return events

    def _verify_release(self, rid: str, e: Event, problems: list[str]) -> None:
        d = self.release_dir(rid)
        where = f"releases/{rid}"
        mpath = d / MANIFEST
        if not mpath.is_file():
            problems.append(f"{where}/{MANIFEST}: missing")
            return
        if sha256_file(mpath) != e.artifacts.get(MANIFEST):
            problems.append(f"{where}/{MANIFEST}: sha256 differs from the one logged at release (line {e.seq + 1})")
        try:
            files = json.loads(mpath.read_text())["files"]
        except (ValueError, KeyError, UnicodeDecodeError):
            problems.append(f"{where}/{MANIFEST}: unreadable")
            return
        for name, meta in sorted(files.items()):
            p = d / name
            if not p.is_file():
                problems.append(f"{where}/{name}: missing")
            elif sha256_file(p) != meta["sha256"] or meta["sha256"] != e.artifacts.get(name):
                problems.append(f"{where}/{name}: sha256 differs from the manifest / log (modified)")
        listed = set(files) | {MANIFEST}
        for p in sorted(d.rglob("*")):
            if p.is_file() and str(p.relative_to(d)) not in listed:
                problems.append(f"{where}/{p.relative_to(d)}: file not in the manifest (added)")
