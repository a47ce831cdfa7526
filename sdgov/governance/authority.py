"""The controller's budget authority: one account per dataset, and one store of its drawn statistics, shared by every
registry the controller runs.

A registry is a place to publish, not a budget. Before the authority, each registry kept its own ledger and its own
noisy marginals, so the same file released in three registries was measured three times (three independent noise
draws, each card stating one release's ε while the dataset had lost more). The authority is the budget check's
source of truth across registries:

- a dataset's **account** (by content fingerprint, and its name label, as :mod:`sdgov.governance.ledger` links
  them): every charge any registry made against it, each naming the statistics it reserved, and its **lifetime ρ**
  (set by its first charge, then only by the controller: :mod:`sdgov.governance.authority_model`). A new statistic
  is checked against that lifetime (or the spending registry's policy, when it states less) over *all* charges, and
  charged, in one transaction;
- the **drawn statistics** (statistic key → the noisy marginal's bytes, with where and when it was drawn): the
  noise is a public DP artifact once drawn, so a second registry asking the same statistic copies it (no new draw,
  no new charge) instead of drawing a second noisy copy, which would leak more than one.

Each registry's own hash-chained log still records every charge (``budget_spent``, naming the authority's charge)
and every statistic it holds (``measured``, also for a copy, naming the authority and the original draw), so
``sdgov registry verify`` and the trail stay complete; the authority adds the cross-registry view. A registry's
charges made before the authority existed (or that it lacks) are imported when it next measures, so the account
is never smaller than what any registry's log records.

**Protocol.** The caller holds the registry's lock, then :meth:`Authority.lock` (always in that order) from the
budget check to the record of the draw, so no two processes on the controller draw the same statistic: the
authority's charge is committed (check and insert in one transaction), then the registry logs it, then the noise
is drawn, recorded in the authority (its first persistence, committed), copied into the registry and logged.
A run that dies after the charge leaves a reservation with no draw: the noise it drew was never persisted anywhere,
so the next run on the dataset (in any registry) draws it under that reservation, charging nothing more. A run
that dies after recording the draw leaves the statistic in the authority: the re-run copies it, never re-draws.

**Where it lives** (from the process's settings only, :mod:`sdgov.base.settings`, like the registry key: a registry
must not be able to name its own budget): ``$SDGOV_AUTHORITY`` — a file path (SQLite), or a ``postgresql://`` URL
for a team — else ``$XDG_DATA_HOME/sdgov/authority.sqlite`` (``~/.local/share/sdgov/authority.sqlite``). The site
(:class:`sdgov.governance.site.Site`) opens it once per process.

**Why SQLite for the embedded default.** The check-and-charge must be one atomic step across processes, and a
charge must be durable before any noise is drawn: SQLite (in the standard library) gives exactly that with a
``BEGIN IMMEDIATE`` transaction (one writer; a crash rolls back a half-written charge), in one file that the
controller backs up beside the registry key. A locked directory of JSON files would need its own write-ahead
protocol for the same guarantees. The SQL is plain (four tables, no SQLite extension), so a PostgreSQL backend
implements the same :class:`Authority` interface with the same transactions and an advisory lock in place of the
lock file: :mod:`sdgov.governance.authority_pg`, selected by a ``postgresql://`` location.

The authority is the controller's, not published: it holds dataset fingerprints (a function of the data) and is
protected like the registry key (mode 600, directory 700). What a card publishes from it is its id (a random
uuid) and figures that are sums of ρ.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

from sdgov.base.clock import utcnow
from sdgov.base.errors import RegistryError, full_disk_at
from sdgov.base.hashing import sha256_bytes
from sdgov.base.settings import AUTHORITY, load_settings
from sdgov.governance.authority_model import (
    Authority,
    AuthorityBroken,
    Charge,
    Drawn,
    Governor,
    Head,
    Lifetime,
    LifetimeAbove,
    LifetimeSetElsewhere,
    LifetimeUnset,
    Overspend,
    Row,
    chain_problems,
    check_chain,
    check_governor,
    decide_charge,
    governed_lifetime,
    governor,
    head_of,
    latest_settings,
    new_row,
)
from sdgov.registry.key import Signer

__all__ = [
    "Authority",
    "AuthorityBroken",
    "Head",
    "LifetimeSetElsewhere",
    "LifetimeUnset",
    "Charge",
    "Drawn",
    "Lifetime",
    "LifetimeAbove",
    "Overspend",
    "SqliteAuthority",
    "location",
    "open_authority",
]

FILE = "authority.sqlite"
_LIFETIMES = "SELECT seq, fingerprint, dataset, lifetime_rho, time, registry_id, source FROM lifetimes ORDER BY seq"

_held = threading.local()  # authority locations whose lock this thread holds (re-entrant within a thread)


def location() -> str:
    """Where the controller's authority is by the process's settings: ``$SDGOV_AUTHORITY``, else under the user's
    data directory."""
    return load_settings().authority()


def open_authority(where: str | None = None) -> Authority:
    """The controller's budget authority at ``where`` (the site's), else at :func:`location`."""
    where = where or location()
    if where.startswith(("postgresql://", "postgres://")):
        from sdgov.governance.authority_pg import PostgresAuthority  # asyncpg: only a team's controller loads it

        return PostgresAuthority(where)
    return SqliteAuthority(Path(where))


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS charges (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ref TEXT NOT NULL UNIQUE, time TEXT NOT NULL, dataset TEXT NOT NULL,
    fingerprint TEXT NOT NULL, rho REAL NOT NULL, agreement_sha256 TEXT NOT NULL, run_id TEXT NOT NULL,
    registry_id TEXT NOT NULL, lifetime_rho REAL);
CREATE TABLE IF NOT EXISTS reserved (
    ref TEXT NOT NULL REFERENCES charges(ref), key TEXT NOT NULL, rho REAL NOT NULL, PRIMARY KEY (ref, key));
CREATE INDEX IF NOT EXISTS reserved_key ON reserved(key);
CREATE TABLE IF NOT EXISTS statistics (
    key TEXT PRIMARY KEY, sha256 TEXT NOT NULL, payload BLOB NOT NULL, registry_id TEXT NOT NULL,
    run_id TEXT NOT NULL, time TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lifetimes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL, dataset TEXT NOT NULL,
    lifetime_rho REAL NOT NULL, time TEXT NOT NULL, registry_id TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chain (
    seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, ref TEXT NOT NULL, body TEXT NOT NULL, prev TEXT NOT NULL,
    hash TEXT NOT NULL, registry_id TEXT NOT NULL, public_key TEXT NOT NULL, sig TEXT NOT NULL);
"""


class SqliteAuthority:
    """The embedded authority: one SQLite file (``BEGIN IMMEDIATE`` transactions) and a lock file beside it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def where(self) -> str:
        """The SQLite file."""
        return str(self.path)

    # ---------------------------------------------------------------- connection
    @contextlib.contextmanager
    def _db(self, write: bool) -> Iterator[sqlite3.Connection | None]:
        """A connection in one transaction (``BEGIN IMMEDIATE`` to write); None when reading an authority that does
        not exist yet (nothing charged, nothing drawn)."""
        if not write and not self.path.is_file():
            yield None
            return
        if self.path.is_symlink():
            raise RegistryError("the budget authority is a symbolic link (refused)", str(self.path), _FIX)
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                if not self.path.exists():
                    os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            con = sqlite3.connect(self.path, timeout=120, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise RegistryError(f"the budget authority cannot be opened ({exc})", str(self.path), _FIX) from None
        try:
            con.execute("PRAGMA synchronous=FULL")
            con.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            if not write and con.execute("SELECT 1 FROM sqlite_master WHERE name = 'statistics'").fetchone() is None:
                yield None  # created by a first write that has not committed its tables yet: nothing in it
                con.execute("COMMIT")
                return
            if write:
                for stmt in filter(str.strip, _SCHEMA.split(";")):
                    con.execute(stmt)
                if con.execute("SELECT value FROM meta WHERE name = 'authority_id'").fetchone() is None:
                    con.execute("INSERT INTO meta VALUES ('authority_id', ?)", (uuid.uuid4().hex,))
            yield con
            con.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(sqlite3.Error):
                con.execute("ROLLBACK")
            if "disk is full" in str(exc) or "disk I/O error" in str(exc):
                raise full_disk_at(self.path) from None
            raise RegistryError(f"the budget authority is unreadable ({exc})", str(self.path), _FIX) from None
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                con.execute("ROLLBACK")
            raise
        finally:
            con.close()

    @property
    def authority_id(self) -> str:
        """Created with the database, in its ``meta`` table."""
        with self._db(write=True) as con:
            assert con is not None
            return str(con.execute("SELECT value FROM meta WHERE name = 'authority_id'").fetchone()[0])

    def identity(self) -> str | None:
        """Read only: None when there is no authority file (or no id in it yet)."""
        with self._db(write=False) as con:
            row = None if con is None else con.execute("SELECT value FROM meta WHERE name = 'authority_id'").fetchone()
            return None if row is None else str(row[0])

    # ---------------------------------------------------------------- the chain
    @staticmethod
    def _rows(con: sqlite3.Connection) -> list[Row]:
        if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'chain'").fetchone() is None:
            return []  # an authority made before chains, read before its next write
        cols = "seq, kind, ref, body, prev, hash, registry_id, public_key, sig"
        return [Row(**dict(zip(cols.split(", "), r))) for r in con.execute(f"SELECT {cols} FROM chain ORDER BY seq")]

    @staticmethod
    def _tables(con: sqlite3.Connection) -> tuple[list[Charge], list[Lifetime]]:
        rows = con.execute(
            "SELECT seq, ref, time, dataset, fingerprint, rho, agreement_sha256, run_id, registry_id, lifetime_rho "
            "FROM charges ORDER BY seq"
        ).fetchall()
        return [_charge(con, r) for r in rows], [_lifetime(r) for r in con.execute(_LIFETIMES)]

    def rows(self) -> list[Row]:
        """Read in one transaction."""
        with self._db(write=False) as con:
            return [] if con is None else self._rows(con)

    def verify(self) -> list[str]:
        """The chain against the tables, in one read transaction."""
        with self._db(write=False) as con:
            rows = [] if con is None else self._rows(con)
            return chain_problems(rows, *self._tables(con)) if con is not None and rows else []

    def _checked(self, con: sqlite3.Connection, signer: Signer) -> list[Row]:
        """The chain, verified, before a write adds to it; an authority made before chains is sealed first (every
        row it holds chained and signed by ``signer``, the registry writing now)."""
        rows = self._rows(con)
        charges, lifetimes = self._tables(con)
        if not rows and (charges or lifetimes):
            for c in charges:
                self._chain(con, rows, c, signer)
            for lt in lifetimes:
                self._chain(con, rows, lt, signer)
        check_chain(rows, charges, lifetimes, str(self.path))
        return rows

    @staticmethod
    def _chain(con: sqlite3.Connection, rows: list[Row], item: Charge | Lifetime | Governor, signer: Signer) -> Row:
        """Append ``item``'s row to the chain (and to ``rows``)."""
        row = new_row(rows[-1] if rows else None, item, signer)
        rows.append(row)
        con.execute(
            "INSERT INTO chain (seq, kind, ref, body, prev, hash, registry_id, public_key, sig) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row.seq, row.kind, row.ref, row.body, row.prev, row.hash, row.registry_id, row.public_key, row.sig),
        )
        return row

    def _govern(self, con: sqlite3.Connection, rows: list[Row], signer: Signer, governs: bool) -> Governor | None:
        """The governing registry; ``signer``'s registry from now on when ``governs`` and nobody governs yet."""
        gov = governor(rows)
        if gov is None and governs:
            gov = Governor(registry_id=signer.registry_id, public_key=signer.public_key, time=utcnow())
            self._chain(con, rows, gov, signer)
        return gov

    def _head(self, con: sqlite3.Connection, rows: list[Row]) -> Head:
        found = con.execute("SELECT value FROM meta WHERE name = 'authority_id'").fetchone()
        head = head_of(str(found[0]), rows)
        assert head is not None  # a write has just added a row
        return head

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """``flock`` on ``<file>.lock`` (re-entrant within a thread); a PostgreSQL backend takes an advisory lock."""
        held: set[str] = _held.__dict__.setdefault("paths", set())
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            key = str(self.path.resolve())
            fd = -1 if key in held else os.open(f"{self.path}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        except OSError as exc:
            raise RegistryError(
                f"the budget authority cannot be used ({exc.strerror or exc})", str(self.path), _FIX
            ) from None
        if fd < 0:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held.add(key)
            try:
                yield
            finally:
                held.discard(key)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # ---------------------------------------------------------------- accounts
    @staticmethod
    def _account(con: sqlite3.Connection, fingerprint: str, dataset: str) -> list[Charge]:
        rows = con.execute(
            "SELECT seq, ref, time, dataset, fingerprint, rho, agreement_sha256, run_id, registry_id, lifetime_rho "
            "FROM charges WHERE fingerprint = ? OR dataset = ? ORDER BY seq",
            (fingerprint, dataset),
        ).fetchall()
        return [_charge(con, r) for r in rows]

    def charges(self, fingerprint: str, dataset: str) -> list[Charge]:
        """Read in one transaction; none before the first charge (the file is created by the first write)."""
        with self._db(write=False) as con:
            return [] if con is None else self._account(con, fingerprint, dataset)

    def charge(
        self, charge: Charge, lifetime_rho: float, source: str, signer: Signer, governs: bool = False
    ) -> tuple[Charge, list[Charge], Head]:
        """The chain's check, the account, its lifetime and the inserts (rows chained) in one ``BEGIN IMMEDIATE``
        transaction: no other writer between them."""
        with self._db(write=True) as con:
            assert con is not None
            rows = self._checked(con, signer)
            gov = self._govern(con, rows, signer, governs)
            before = self._account(con, charge.fingerprint, charge.dataset)
            account = self._lifetime(con, charge.fingerprint, charge.dataset, before, gov)
            checked, setting = decide_charge(charge, before, account, lifetime_rho, source, gov)
            if setting is not None:
                self._chain(con, rows, self._insert_lifetime(con, setting), signer)
            stored = self._insert(con, checked)
            self._chain(con, rows, stored, signer)
            head = self._head(con, rows)
        return stored, before, head

    def _lifetime(
        self, con: sqlite3.Connection, fingerprint: str, dataset: str, charges: list[Charge], gov: Governor | None
    ) -> Lifetime | None:
        rows: list[tuple] = []  # none in an authority made before lifetimes were kept, read before its next write
        if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'lifetimes'").fetchone() is not None:
            rows = con.execute(_LIFETIMES).fetchall()
        return governed_lifetime(latest_settings([_lifetime(r) for r in rows], gov, fingerprint, dataset), charges, gov)

    def lifetime(self, fingerprint: str, dataset: str) -> Lifetime | None:
        """Read in one transaction."""
        with self._db(write=False) as con:
            if con is None:
                return None
            gov = governor(self._rows(con))
            return self._lifetime(con, fingerprint, dataset, self._account(con, fingerprint, dataset), gov)

    def accounts(self, dataset: str) -> list[tuple[str, str]]:
        """From the latest setting of each account, else its latest charge."""
        with self._db(write=False) as con:
            if con is None:
                return []
            found = {r[0]: r[1] for r in con.execute(
                "SELECT fingerprint, dataset FROM charges WHERE fingerprint = ? OR dataset = ? ORDER BY seq",
                (dataset, dataset))}  # fmt: skip
            if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'lifetimes'").fetchone() is not None:
                rows = con.execute(
                    "SELECT fingerprint, dataset FROM lifetimes WHERE fingerprint = ? OR dataset = ? ORDER BY seq",
                    (dataset, dataset),
                )
                found.update({r[0]: r[1] for r in rows})
            return sorted(found.items())

    def set_lifetime(
        self, settings: list[Lifetime], signer: Signer, governs: bool = False
    ) -> tuple[list[Lifetime], Head]:
        """Inserted and chained in one ``BEGIN IMMEDIATE`` transaction, through the governing registry only."""
        with self._db(write=True) as con:
            assert con is not None
            rows = self._checked(con, signer)
            check_governor(self._govern(con, rows, signer, governs), signer, str(self.path))
            stored = []
            for s in settings:
                stored.append(self._insert_lifetime(con, s))
                self._chain(con, rows, stored[-1], signer)
            return stored, self._head(con, rows)

    @staticmethod
    def _insert_lifetime(con: sqlite3.Connection, s: Lifetime) -> Lifetime:
        cur = con.execute(
            "INSERT INTO lifetimes (fingerprint, dataset, lifetime_rho, time, registry_id, source) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (s.fingerprint, s.dataset, s.lifetime_rho, s.time, s.registry_id, s.source),
        )
        return s.model_copy(update={"seq": int(cur.lastrowid or 0)})

    def import_charges(self, charges: list[Charge], signer: Signer) -> None:
        """One transaction for all of them; a ``ref`` already stored is skipped; each one chained."""
        if not charges:
            return
        with self._db(write=True) as con:
            assert con is not None
            known = {r[0] for r in con.execute("SELECT ref FROM charges")}
            fresh = [c for c in charges if c.ref not in known]
            if fresh:
                rows = self._checked(con, signer)
                for c in fresh:
                    stored = self._insert(con, c)
                    self._chain(con, rows, stored, signer)

    @staticmethod
    def _insert(con: sqlite3.Connection, c: Charge) -> Charge:
        cur = con.execute(
            "INSERT INTO charges (ref, time, dataset, fingerprint, rho, agreement_sha256, run_id, registry_id, "
            "lifetime_rho) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (c.ref, c.time, c.dataset, c.fingerprint, c.rho, c.agreement_sha256, c.run_id, c.registry_id,
             c.lifetime_rho),
        )  # fmt: skip
        con.executemany(
            "INSERT INTO reserved (ref, key, rho) VALUES (?, ?, ?)", [(c.ref, k, v) for k, v in c.statistics.items()]
        )
        return c.model_copy(update={"seq": int(cur.lastrowid or 0)})

    def reservation(self, key: str) -> Charge | None:
        """The first charge naming ``key`` (a statistic is reserved once)."""
        with self._db(write=False) as con:
            if con is None:
                return None
            row = con.execute(
                "SELECT c.seq, c.ref, c.time, c.dataset, c.fingerprint, c.rho, c.agreement_sha256, c.run_id, "
                "c.registry_id, c.lifetime_rho FROM charges c JOIN reserved r ON r.ref = c.ref WHERE r.key = ? "
                "ORDER BY c.seq LIMIT 1",
                (key,),
            ).fetchone()
            return None if row is None else _charge(con, row)

    # ---------------------------------------------------------------- statistics
    def drawn(self, key: str) -> tuple[Drawn, bytes] | None:
        """The stored bytes, checked against their recorded sha256."""
        with self._db(write=False) as con:
            if con is None:
                return None
            row = con.execute(
                "SELECT key, sha256, registry_id, run_id, time, payload FROM statistics WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        payload = bytes(row[5])
        if sha256_bytes(payload) != row[1]:
            raise RegistryError(
                f"statistic {key[:12]}… in the budget authority does not match its recorded hash",
                str(self.path),
                "restore the authority from its backup; never re-draw noise for the same statistic",
            )
        return Drawn(key=row[0], sha256=row[1], registry_id=row[2], run_id=row[3], time=row[4]), payload

    def record(self, key: str, payload: bytes, registry_id: str, run_id: str, time: str | None = None) -> Drawn:
        """Inserted in one ``BEGIN IMMEDIATE`` transaction, committed (durable) before it returns."""
        sha = sha256_bytes(payload)
        with self._db(write=True) as con:
            assert con is not None
            row = con.execute("SELECT sha256, registry_id, run_id, time FROM statistics WHERE key = ?", (key,))
            found = row.fetchone()
            if found is not None:
                if found[0] != sha:
                    raise RegistryError(
                        f"statistic {key[:12]}… was drawn before with other noise (the authority keeps the first "
                        "draw; two noisy copies of one statistic would leak more than one)",
                        str(self.path),
                        "use the authority's copy; never draw a statistic twice",
                    )
                return Drawn(key=key, sha256=sha, registry_id=found[1], run_id=found[2], time=found[3])
            drawn = Drawn(key=key, sha256=sha, registry_id=registry_id, run_id=run_id, time=time or utcnow())
            con.execute(
                "INSERT INTO statistics (key, sha256, payload, registry_id, run_id, time) VALUES (?, ?, ?, ?, ?, ?)",
                (key, sha, payload, registry_id, run_id, drawn.time),
            )
        return drawn

    def keys(self) -> set[str]:
        """One read of the statistics table's keys."""
        with self._db(write=False) as con:
            return set() if con is None else {r[0] for r in con.execute("SELECT key FROM statistics")}


_FIX = f"restore the controller's budget authority from its backup, or point ${AUTHORITY} at it"


def _lifetime(row: tuple) -> Lifetime:
    return Lifetime(seq=row[0], fingerprint=row[1], dataset=row[2], lifetime_rho=float(row[3]), time=row[4],
                    registry_id=row[5], source=row[6])  # fmt: skip


def _charge(con: sqlite3.Connection, row: tuple) -> Charge:
    stats = {k: float(v) for k, v in con.execute("SELECT key, rho FROM reserved WHERE ref = ?", (row[1],))}
    return Charge(
        seq=row[0],
        ref=row[1],
        time=row[2],
        dataset=row[3],
        fingerprint=row[4],
        rho=float(row[5]),
        statistics=stats,
        agreement_sha256=row[6],
        run_id=row[7],
        registry_id=row[8],
        lifetime_rho=row[9],
    )
