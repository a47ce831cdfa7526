"""The artifact registry: immutable release directories and an append-only, hash-chained event log.

Layout under the store root (``--root``, else ``$SDGOV_REGISTRY``, else ``./registry``: :mod:`sdgov.base.settings`)::

    registry.json                  the registry's id and public key (also in the log's first, genesis event)
    log.jsonl                      one canonical-JSON event per line; each carries the hash of the one before
                                   and an Ed25519 signature by the registry key, kept outside this directory
    policy.yaml                    the data controller's release policy (sdgov/governance/policy.py; `sdgov init` writes it)
    measurements/<key>.json        one noisy marginal, drawn once per (dataset fingerprint, attributes, σ)
    runs/<run_id>/                 stage work directories (intermediate artifacts, provenance records)
    releases/<release_id>/         immutable: synthetic data, card.{html,md,json}, artifacts, manifest.json,
                                   provenance.intoto.json (an in-toto statement, sdgov/registry/attestation.py)

A release directory is assembled in a staging directory and renamed into place in one step, its files made
read-only, and its manifest's sha256 written into the log's ``released`` event. :func:`verify` recomputes
everything and names the first byte-level discrepancy in each file or log line.

The chain alone proves nothing against someone who can rewrite the whole file: every event is therefore signed
by the registry key (:mod:`sdgov.registry.key`, never stored in the registry), and ``sdgov registry checkpoint``
exports a signed head to keep elsewhere, which ``verify --checkpoint`` checks the log still extends
(:mod:`sdgov.registry.checkpoint`). Symbolic links are refused anywhere in the log or a release: a released file must not
be a pointer to something editable.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdgov.identity import keys

from sdgov.registry import access
from sdgov.registry import key as registry_key
from sdgov.base.atomic import atomic_write_bytes, writing
from sdgov.registry.attestation import FILE as STATEMENT
from sdgov.registry.attestation import release_statement
from sdgov.base.clock import utcnow
from sdgov.base.errors import RegistryError
from sdgov.base.hashing import canonical_json, sha256_bytes, sha256_file
from sdgov.base.model import Frozen
from sdgov.base.settings import REGISTRY, load_settings
from sdgov.registry.key import KeyStore

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

GENESIS = "0" * 64
LOG = "log.jsonl"
MANIFEST = "manifest.json"
CONFIG = "registry.json"
POLICY_FILE = "policy.yaml"  # the controller's release policy (sdgov/governance/policy.py); its hash is logged with every spend
CREATED = "registry_created"  # the genesis event: registry id and public key
ACCESS = "access_changed"  # the readers' group named (sdgov init --readers): registry.json keeps it, the log vouches
EVENT_DOMAIN = "sdgov-log-event:v1"
STAGING_PREFIX = ".staging-"

_held = threading.local()  # roots whose lock this thread holds (the lock is re-entrant within a thread)


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
    signatures: dict[str, str] = {}  # an actor's own signature(s) over what they decided, if any (hashed)
    prev: str
    hash: str = ""
    sig: str = ""  # the registry key's Ed25519 signature of ``hash``

    def body_hash(self) -> str:
        return sha256_bytes(canonical_json(self.model_dump(exclude={"hash", "sig"})))


class LogBroken(RegistryError):
    """The log fails verification: nothing may be computed from it (spends, budgets, reuse)."""

    def __init__(self, line: int, reason: str, where: str, root: Path) -> None:
        self.line = line  # 0: not a log line (a release, a persisted measurement)
        super().__init__(
            f"the registry log is broken at line {line} ({reason}); nothing is spent or reused from a broken log"
            if line
            else f"the registry fails verification ({reason}); nothing is spent or reused from it",
            where,
            f"run 'sdgov registry verify --root {root}'",
        )


def log_head(seq: int, head: str, registry_id: str) -> dict[str, Any]:
    """What a release records of the log it joins: the head *just before* its own ``released`` event (which
    cannot name its own hash, since it names the manifest that holds this), i.e. that event's ``prev``."""
    return {
        "registry_id": registry_id,
        "sequence": seq,
        "hash": head,
        "released_event": seq + 1,
        "note": f"the release is log event {seq + 1}; its 'prev' is this hash, the head of events 0..{seq}",
    }


class Registry:
    """One registry: its directory (``root``) and where its signing key and commitment secret are kept (``keys``).

    A process builds it once, where it starts, as part of the controller's site
    (:class:`sdgov.governance.site.Site`); without ``keys`` (or ``root``) it takes them from the process's settings
    as they are now (:mod:`sdgov.base.settings`)."""

    unchecked = 0
    """How many persisted measurements the last verification could not see (a reader's: the controller's store)."""

    def __init__(self, root: str | Path | None = None, keys: KeyStore | None = None) -> None:
        if root is None or keys is None:
            settings = load_settings()
            root = settings.registry_root(root)
            keys = keys or KeyStore.from_settings(settings)
        self.root = Path(root)
        self.keys = keys
        try:  # a root that is a file or a symlink loop is one line here, not a traceback deep in a command
            usable = not self.root.exists() or self.root.is_dir()
            self.root.resolve(strict=self.root.is_symlink())
        except (OSError, RuntimeError) as exc:
            raise RegistryError(
                f"the registry root cannot be used ({getattr(exc, 'strerror', None) or exc})",
                str(self.root),
                f"point --root (or ${REGISTRY}) at a registry directory",
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
        """One writer at a time across processes (log appends, release publication, measurement draws).

        Re-entrant within a thread, so that a caller can hold it across several steps (building a card that
        names the log head, then publishing) while the steps take it too."""
        held: set[str] = _held.__dict__.setdefault("roots", set())
        key = str(self.root.resolve())
        if key in held:
            yield
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            f = open(self.root / ".lock", "a")  # noqa: SIM115  (closed by the with below)
        except PermissionError:
            raise RegistryError(
                "this user may read the registry but not write it (a reader: the controller's account writes)",
                str(self.root),
                "run it as the controller's account (the worker), or only read: verify, trail, runs, budget",
            ) from None
        with f:
            fcntl.flock(f, fcntl.LOCK_EX)
            held.add(key)
            try:
                access.protect(self.root, self.readers_group())  # who may read what, whatever was written before
                yield
            finally:
                held.discard(key)
                with contextlib.suppress(OSError):  # what the step wrote at the top level: back as the layout says
                    access.protect(self.root, self.readers_group())
                fcntl.flock(f, fcntl.LOCK_UN)

    # ---------------------------------------------------------------- identity
    def is_registry(self) -> bool:
        return self.root.is_dir() and ((self.root / LOG).exists() or (self.root / CONFIG).exists())

    def require_existing(self) -> None:
        """A one-line error unless ``root`` is an sdgov registry (never 'ok' on a missing path or a file)."""
        if not self.root.exists():
            what, fix = "no registry here (the path does not exist)", "give the registry's directory with --root"
        elif not self.root.is_dir():
            what, fix = "not a registry (a file, not a directory)", "give the registry's directory with --root"
        elif not self.is_registry():
            what = f"not an sdgov registry (no {LOG} or {CONFIG})"
            fix = "give the directory that 'sdgov release' / 'sdgov propose' wrote to with --root"
        else:
            return
        raise RegistryError(what, str(self.root), fix)

    def config(self) -> dict[str, Any]:
        path = self.root / CONFIG
        if not path.is_file() or path.is_symlink():
            return {}
        try:
            d = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            return {}
        return d if isinstance(d, dict) else {}

    def registry_id(self) -> str:
        """The registry's id (``registry.json``; '' before its genesis)."""
        return str(self.config().get("registry_id", ""))

    def readers_group(self) -> str | None:
        """The group that may read the registry's public parts (``sdgov init --readers``); None: the owner alone."""
        return self.config().get("readers_group") or None

    def set_readers_group(self, group: str) -> Event:
        """Name the readers' group (``sdgov init --readers``): kept in ``registry.json``, logged (``access_changed``)
        and applied to the registry's top level at once."""
        access.group_id(group)
        with self.lock():
            self.genesis_locked()
            config = {**self.config(), "readers_group": group}
            atomic_write_bytes(self.root / CONFIG, json.dumps(config, sort_keys=True, indent=2).encode() + b"\n")
            access.protect(self.root, group)
            return self.append_locked(
                ACCESS, "sdgov", "system", comment=f"the readers' group is {group!r}", artifacts={"readers_group": group}
            )

    def signer(self) -> registry_key.Signer:
        """This registry's key as a signer of what it writes elsewhere (the budget authority's rows); a one-line
        error where the key is not on this machine."""
        rid = self.registry_id()
        return registry_key.Signer(rid, registry_key.require(self.keys, rid))

    def genesis_locked(self) -> Ed25519PrivateKey:
        """The signing key, creating the registry (id, key outside, config, genesis event) on first write."""
        cfg = self.config()
        if cfg.get("registry_id"):
            if not self.log_path.exists() or self.log_path.stat().st_size == 0:
                raise RegistryError(
                    f"{CONFIG} names registry {cfg['registry_id']}, but its log is missing or empty",
                    str(self.log_path),
                    "restore log.jsonl from a backup (and check it with 'sdgov registry verify --checkpoint')",
                )
            return registry_key.require(self.keys, str(cfg["registry_id"]))
        if self.log_path.exists() and self.log_path.stat().st_size:
            raise RegistryError(
                f"the log has events but there is no {CONFIG} naming the registry and its key",
                str(self.root),
                "restore registry.json from a backup",
            )
        rid = uuid.uuid4().hex
        key = registry_key.create(self.keys, rid)
        public = keys.public_line(key.public_key())
        config = {"registry_id": rid, "public_key": public, "key_hint": str(self.keys.key_path(rid))}
        atomic_write_bytes(self.root / CONFIG, json.dumps(config, sort_keys=True, indent=2).encode() + b"\n")
        self._write_event(
            key,
            Event(
                seq=0,
                time=utcnow(),
                event=CREATED,
                actor="sdgov",
                role="system",
                artifacts={"registry_id": rid, "registry_public_key": public},
                prev=GENESIS,
            ),
        )
        return key

    # ---------------------------------------------------------------- log
    def events(self) -> list[Event]:
        """The events as written, unverified (for display); anything that computes from them uses
        :meth:`verified_events`. A line that is not an event is one :class:`RegistryError` naming it (commands
        that read the log — list, budget, release — stop there; ``verify`` reports it among its problems)."""
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

    def verified_events(self) -> list[Event]:
        """The events, after the checks :meth:`verify` makes — the chain, every signature, the genesis key, every
        release (files, manifest, the log heads its manifest and card name, symbolic links) and every persisted
        measurement; :class:`LogBroken` names the first problem. The controller's files (``policy.yaml``
        included) are checked by the ledger and :func:`sdgov.governance.controller.check_controller_files`.

        Spends, budgets and measurement reuse are computed only from this: a deleted ``budget_spent`` line must
        not give budget back, even when whoever deleted it re-signed the log with the registry key (the log heads
        that the releases name no longer match)."""
        problems: list[tuple[int, str]] = []
        events = self._verify_log(problems)
        if problems:
            line, reason = problems[0]
            raise LogBroken(max(line, 1), reason, str(self.log_path), self.root)
        contents = self._verify_contents(events)
        if contents:
            raise LogBroken(0, contents[0], str(self.root), self.root)
        return events

    def head(self) -> tuple[int, str]:
        """(sequence, hash) of the last event; (-1, GENESIS) for an empty log."""
        events = self.events()
        return (events[-1].seq, events[-1].hash) if events else (-1, GENESIS)

    def append(self, event: str, actor: str, role: str, **fields: Any) -> Event:
        with self.lock():
            return self.append_locked(event, actor, role, **fields)

    def append_locked(self, event: str, actor: str, role: str, **fields: Any) -> Event:
        """Append an event; the caller already holds :meth:`lock` (so a check and its record are one step)."""
        key = self.genesis_locked()
        existing = self.events()
        prev = existing[-1].hash if existing else GENESIS
        e = Event(seq=len(existing), time=utcnow(), event=event, actor=actor, role=role, prev=prev, **fields)
        return self._write_event(key, e)

    def append_measured_locked(
        self, agreement_sha256: str, run_id: str, artifacts: dict[str, str], comment: str
    ) -> Event:
        """The system's record that noisy statistics were persisted (``artifacts``: path → sha256), under the lock
        the draw held: the one event both draw-once stores write (measurements, selection proposals)."""
        return self.append_locked(
            "measured",
            "sdgov",
            "system",
            agreement_sha256=agreement_sha256,
            run_id=run_id,
            artifacts=artifacts,
            comment=comment,
        )

    def _write_event(self, key: Ed25519PrivateKey, e: Event) -> Event:
        if self.log_path.is_symlink():
            raise RegistryError("the log is a symbolic link", str(self.log_path), "restore the real log.jsonl")
        h = e.body_hash()
        e = e.model_copy(update={"hash": h, "sig": registry_key.sign_framed(key, EVENT_DOMAIN, h.encode())})
        self.root.mkdir(parents=True, exist_ok=True)
        line = canonical_json(e.model_dump()) + b"\n"
        with writing(self.log_path), open(self.log_path, "ab", buffering=0) as f:
            end = os.fstat(f.fileno()).st_size
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(f.fileno(), view) :]
                os.fsync(f.fileno())
            except OSError:  # a full disk: no half line left behind (the log stays verifiable)
                os.ftruncate(f.fileno(), end)
                raise
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
            self.recover_locked()  # a crashed publish's staging directory: nothing was released from it
            self.genesis_locked()
            seq, head = self.head()
            staging = self.root / "releases" / f"{STAGING_PREFIX}{release_id}"
            staging.mkdir(parents=True)
            try:
                entries: dict[str, dict[str, Any]] = {}
                for name, src in sorted(files.items()):
                    dst = staging / name
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dst)
                    entries[name] = {"sha256": sha256_file(dst), "bytes": dst.stat().st_size}
                head_info = log_head(seq, head, self.registry_id())
                statement = release_statement(
                    release_id,
                    {k: v["sha256"] for k, v in entries.items()},
                    manifest_extra,
                    head_info,
                    run_id=str(event_fields.get("run_id", "")),
                    approver=actor,
                )
                atomic_write_bytes(staging / STATEMENT, json.dumps(statement, indent=2).encode() + b"\n")
                entries[STATEMENT] = {
                    "sha256": sha256_file(staging / STATEMENT),
                    "bytes": (staging / STATEMENT).stat().st_size,
                }
                manifest = {"release_id": release_id, "files": entries, **manifest_extra, "log_head": head_info}
                manifest_bytes = json.dumps(manifest, sort_keys=True, indent=2).encode() + b"\n"
                atomic_write_bytes(staging / MANIFEST, manifest_bytes)
                for p in staging.rglob("*"):  # read-only, and readable behind the registry's gate
                    p.chmod(0o444 if p.is_file() else 0o755)
                staging.chmod(0o755)
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

    def stale_staging(self) -> list[str]:
        """Staging directories no publication is using now (each publication holds the lock throughout), i.e.
        left by a crash. Empty while another process holds the lock: its staging directory may be live."""
        rel = self.root / "releases"
        if not rel.is_dir():
            return []
        try:  # read-only: a reader tests the lock without writing anything (no lock file: nobody holds it)
            fd = os.open(self.root / ".lock", os.O_RDONLY)
        except FileNotFoundError:
            fd = -1
        except PermissionError:
            return []
        if fd >= 0:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except BlockingIOError:
                return []
            finally:
                os.close(fd)
        return sorted(f"releases/{p.name}" for p in rel.iterdir() if p.name.startswith(STAGING_PREFIX))

    def recover(self) -> list[str]:
        """Remove the staging directories left by crashed publications; returns what was removed."""
        with self.lock():
            return self.recover_locked()

    def recover_locked(self) -> list[str]:
        rel = self.root / "releases"
        removed = []
        for p in sorted(rel.iterdir()) if rel.is_dir() else []:
            if p.name.startswith(STAGING_PREFIX):
                if p.is_symlink() or not p.is_dir():
                    p.unlink()
                else:
                    shutil.rmtree(p)
                removed.append(f"releases/{p.name}")
        return removed

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
        """Every problem found, each one line naming the file (and log line) at fault. Empty means intact.

        Raises :class:`RegistryError` when ``root`` is not a registry at all (so a typo is never 'ok')."""
        self.require_existing()
        problems: list[str] = []
        lines: list[tuple[int, str]] = []
        events = self._verify_log(lines)
        problems += [f"{LOG} line {i}: {reason}" if i else f"{LOG}: {reason}" for i, reason in lines]
        problems += self._verify_contents(events)
        problems += policy_problems(self, events)
        problems += self._secret_problems(events)
        problems += self._access_problems(events)
        return problems

    def _access_problems(self, events: list[Event]) -> list[str]:
        """The readers' group ``registry.json`` names must be the one last logged; and, checked by the registry's
        owner (who alone can see everything), nothing confidential may be readable by others
        (:func:`sdgov.registry.access.exposed`)."""
        logged = next((e.artifacts.get("readers_group") for e in reversed(events) if e.event == ACCESS), None)
        problems = []
        if (logged or None) != self.readers_group():
            problems.append(f"{CONFIG}: readers' group {self.readers_group()!r} is not the one logged ({logged!r})")
        if os.geteuid() == self.root.stat().st_uid:
            problems += access.exposed(self.root)
        return problems

    def _secret_problems(self, events: list[Event]) -> list[str]:
        """Where this machine holds the registry's key (the controller's), the commitment secret must be the one the
        log committed to (:mod:`sdgov.registry.commitment`); elsewhere it is not ours to see."""
        from sdgov.registry.commitment import secret_problem

        rid = self.registry_id()
        if not rid or registry_key.load_registry_key(self.keys, rid) is None:
            return []
        problem = secret_problem(self, events)
        return [] if problem is None else [problem]

    def _verify_contents(self, events: list[Event]) -> list[str]:
        """What the log vouches for: every release and every persisted measurement, exactly as logged."""
        problems: list[str] = []
        released = {e.release_id: e for e in events if e.event == "released"}
        rel_root = self.root / "releases"
        if rel_root.is_symlink():
            problems.append("releases: a symbolic link (refused: a release must live in the registry)")
        dirs = sorted(p.name for p in rel_root.iterdir() if p.is_dir()) if rel_root.is_dir() else []
        for name in dirs:
            if not name.startswith(STAGING_PREFIX) and name not in released:
                problems.append(f"releases/{name}: release directory with no 'released' event in {LOG}")
        for rid, e in released.items():
            self._verify_release(rid, e, problems)
        self.unchecked = 0
        for e in events:  # persisted noisy marginals must stay exactly as drawn
            for name, sha in e.artifacts.items() if e.event == "measured" else ():
                path = self.root / name
                if not _visible(path):  # the controller's store: a reader's verify leaves it to the controller's
                    self.unchecked += 1
                elif path.is_symlink():
                    problems.append(f"{name}: a symbolic link (refused: logged at line {e.seq + 1})")
                elif not path.is_file():
                    problems.append(f"{name}: persisted measurement missing (logged at line {e.seq + 1})")
                elif sha256_file(path) != sha:
                    problems.append(f"{name}: sha256 differs from the one logged at line {e.seq + 1} (modified)")
        return problems

    def _verify_log(self, problems: list[tuple[int, str]]) -> list[Event]:
        """Parse, chain and signature checks of the log; appends (line, reason) for each problem (line 0: the
        file as a whole)."""
        if self.log_path.is_symlink():
            problems.append((1, "the log is a symbolic link (refused)"))
            return []
        if not self.log_path.exists():
            if (self.root / "releases").is_dir() and any((self.root / "releases").iterdir()):
                problems.append((0, "missing, but releases exist"))
            if self.registry_id():
                problems.append((0, f"missing, but {CONFIG} names registry {self.registry_id()}"))
            return []
        events: list[Event] = []
        prev = GENESIS
        public = None
        for i, raw in enumerate(self.log_path.read_bytes().split(b"\n"), start=1):
            if not raw:
                continue
            try:
                e = Event.model_validate_json(raw)
            except ValueError:
                problems.append((i, "not a valid event (corrupted)"))
                prev = "?"
                continue
            if canonical_json(e.model_dump()) != raw:
                problems.append((i, "bytes differ from the canonical form of its event (edited)"))
            if e.hash != e.body_hash():
                problems.append((i, "hash does not match its content (edited)"))
            if e.prev != prev and prev != "?":
                problems.append((i, f"chain broken (prev hash does not match line {i - 1})"))
            if e.seq != i - 1:
                problems.append((i, f"sequence number {e.seq} out of order (line removed or inserted)"))
            if i == 1:
                public = self._genesis_key(e, problems)
            elif e.event == CREATED:
                problems.append((i, "a second genesis event (refused)"))
            if public is not None and not registry_key.signature_ok(public, EVENT_DOMAIN, e.hash.encode(), e.sig):
                problems.append((i, "registry signature does not verify (forged, edited or re-chained)"))
            prev = e.hash
            events.append(e)
        return events

    def _genesis_key(self, e: Event, problems: list[tuple[int, str]]) -> Ed25519PublicKey | None:
        """The registry public key named by the genesis event, cross-checked against registry.json and, where
        this machine holds it, the private key kept outside the registry (a re-keyed log fails here)."""
        rid, text = e.artifacts.get("registry_id", ""), e.artifacts.get("registry_public_key", "")
        if e.event != CREATED or e.seq != 0 or not rid or not text:
            problems.append((1, "the first event is not the registry's genesis (registry id and public key)"))
            return None
        try:
            public = registry_key.parse_registry_public_key(text, str(self.log_path))
        except RegistryError as exc:
            problems.append((1, exc.what))
            return None
        cfg = self.config()
        if cfg.get("registry_id") != rid or cfg.get("public_key") != text:
            problems.append((1, f"the genesis event and {CONFIG} disagree on the registry id or public key"))
        private = registry_key.load_registry_key(self.keys, rid)
        if private is not None and keys.public_line(private.public_key()) != text:
            problems.append(
                (
                    1,
                    f"the genesis public key is not that of this registry's key {self.keys.key_path(rid)} "
                    "(re-keyed)",
                )
            )
        return public

    def _verify_release(self, rid: str, e: Event, problems: list[str]) -> None:
        d = self.release_dir(rid)
        where = f"releases/{rid}"
        links = [p for p in [d, *d.rglob("*")] if p.is_symlink()]
        for p in links:
            problems.append(
                f"{where}/{p.relative_to(d)}: a symbolic link (refused: released files live in the release)"
            )
        if d.is_symlink():
            return
        mpath = d / MANIFEST
        if not mpath.is_file():
            problems.append(f"{where}/{MANIFEST}: missing")
            return
        if sha256_file(mpath) != e.artifacts.get(MANIFEST):
            problems.append(f"{where}/{MANIFEST}: sha256 differs from the one logged at release (line {e.seq + 1})")
        try:
            manifest = json.loads(mpath.read_text())
            files = manifest["files"]
        except (ValueError, KeyError, UnicodeDecodeError):
            problems.append(f"{where}/{MANIFEST}: unreadable")
            return
        heads = {MANIFEST: manifest.get("log_head")}
        card = d / "card.json"
        if card.is_file() and not card.is_symlink():
            with contextlib.suppress(ValueError, UnicodeDecodeError, AttributeError):  # then its sha256 fails below
                heads["card.json"] = json.loads(card.read_text()).get("provenance", {}).get("log_head")
        for name, head in heads.items():
            if isinstance(head, dict) and (head.get("hash") != e.prev or head.get("sequence") != e.seq - 1):
                problems.append(
                    f"{where}/{name}: its log head is not the prev of its 'released' event (line {e.seq + 1})"
                )
        for name, meta in sorted(files.items()):
            p = d / name
            if p.is_symlink():
                continue  # reported above
            if not p.is_file():
                problems.append(f"{where}/{name}: missing")
            elif sha256_file(p) != meta["sha256"] or meta["sha256"] != e.artifacts.get(name):
                problems.append(f"{where}/{name}: sha256 differs from the manifest / log (modified)")
        listed = set(files) | {MANIFEST}
        for p in sorted(d.rglob("*")):
            if p.is_file() and not p.is_symlink() and str(p.relative_to(d)) not in listed:
                problems.append(f"{where}/{p.relative_to(d)}: file not in the manifest (added)")


def _visible(path: Path) -> bool:
    """Whether this user may look at ``path`` at all (a reader may not enter the controller's private folders)."""
    try:
        path.lstat()
    except PermissionError:
        return False
    except OSError:
        return True  # missing: the checks that follow say so
    return True


def logged_policy(events: list[Event]) -> tuple[str | None, int]:
    """The budget policy's sha256 as last logged ("" when logged as absent), and the line; (None, 0) if never."""
    for e in reversed(events):
        if POLICY_FILE in e.artifacts:
            return e.artifacts[POLICY_FILE], e.seq + 1
    return None, 0


def policy_problems(registry: Registry, events: list[Event]) -> list[str]:
    """The controller's ``policy.yaml`` must be the one last logged: raising a lifetime budget by editing the
    file (or deleting it: no limit) is detected, and refused by the ledger, until the change is recorded."""
    logged, line = logged_policy(events)
    if logged is None:
        return []
    path = registry.root / POLICY_FILE
    if path.is_symlink():
        return [f"{POLICY_FILE}: a symbolic link (refused)"]
    current = sha256_file(path) if path.is_file() else ""
    if current == logged:
        return []
    what = "deleted" if not current else "changed"
    return [f"{POLICY_FILE}: {what} since its hash was logged at line {line} (no logged policy change)"]
