"""The budget authority on PostgreSQL: one account per dataset for a team's controller, with real transactions.

The same :class:`~sdgov.governance.authority.Authority` as the embedded SQLite one, over the same tables, for a
controller whose workers run on more than one machine (or who keeps the budget in the database the team already
backs up). ``$SDGOV_AUTHORITY=postgresql://USER@HOST:PORT/DATABASE`` selects it (the password from ``PGPASSWORD`` or
``~/.pgpass``, or in the URL; it is never printed).

- **One check-and-charge at a time.** A charge sums the dataset's account, reads its lifetime and inserts in one
  transaction that first takes ``LOCK TABLE charges, lifetimes IN SHARE ROW EXCLUSIVE MODE``: two writers cannot both
  read the old sum, nor the old lifetime.
- **One measuring process at a time**, from the budget check to the draw's record: a session-level advisory lock,
  held on a connection of its own for as long as :meth:`PostgresAuthority.lock` is held (released by the server if
  the process dies).
- **Durable before any noise**: each transaction commits before it returns.

The driver is asyncpg, which the Prefect server already installs for its own PostgreSQL database; its coroutines run
on one private event loop in a daemon thread, so callers stay synchronous like the SQLite authority's.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import uuid
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import asyncpg  # the Prefect server's own PostgreSQL driver; only a postgresql:// authority imports this module

from sdgov.base.clock import utcnow
from sdgov.base.errors import RegistryError
from sdgov.base.hashing import sha256_bytes
from sdgov.base.settings import AUTHORITY
from sdgov.governance.authority_model import (
    Charge,
    Drawn,
    Governor,
    Head,
    Lifetime,
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

T = TypeVar("T")
LOCK_KEY = 0x5D60_B0D6  # the advisory lock's key: one per database, so one per authority

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS charges (
    seq BIGSERIAL PRIMARY KEY, ref TEXT NOT NULL UNIQUE, time TEXT NOT NULL, dataset TEXT NOT NULL,
    fingerprint TEXT NOT NULL, rho DOUBLE PRECISION NOT NULL, agreement_sha256 TEXT NOT NULL, run_id TEXT NOT NULL,
    registry_id TEXT NOT NULL, lifetime_rho DOUBLE PRECISION);
CREATE TABLE IF NOT EXISTS reserved (
    ref TEXT NOT NULL REFERENCES charges(ref), key TEXT NOT NULL, rho DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (ref, key));
CREATE INDEX IF NOT EXISTS reserved_key ON reserved(key);
CREATE TABLE IF NOT EXISTS statistics (
    key TEXT PRIMARY KEY, sha256 TEXT NOT NULL, payload BYTEA NOT NULL, registry_id TEXT NOT NULL,
    run_id TEXT NOT NULL, time TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lifetimes (
    seq BIGSERIAL PRIMARY KEY, fingerprint TEXT NOT NULL, dataset TEXT NOT NULL,
    lifetime_rho DOUBLE PRECISION NOT NULL, time TEXT NOT NULL, registry_id TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chain (
    seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, ref TEXT NOT NULL, body TEXT NOT NULL, prev TEXT NOT NULL,
    hash TEXT NOT NULL, registry_id TEXT NOT NULL, public_key TEXT NOT NULL, sig TEXT NOT NULL)
"""
_ROWS = "SELECT seq, kind, ref, body, prev, hash, registry_id, public_key, sig FROM chain ORDER BY seq"
_LIFETIMES = "SELECT seq, fingerprint, dataset, lifetime_rho, time, registry_id, source FROM lifetimes ORDER BY seq"
_WRITE_LOCK = "LOCK TABLE charges, lifetimes, chain IN SHARE ROW EXCLUSIVE MODE"
_COLUMNS = "c.seq, c.ref, c.time, c.dataset, c.fingerprint, c.rho, c.agreement_sha256, c.run_id, c.registry_id, " \
    "c.lifetime_rho"  # fmt: skip

_FAILURES = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)  # a server away, a refusal, …
_held = threading.local()  # authority URLs whose advisory lock this thread holds (re-entrant within a thread)


def masked(url: str) -> str:
    """The URL as printed: any password replaced by ``***``."""
    return re.sub(r"^(\w+://[^:/@]+):[^@]*@", r"\1:***@", url)


class _Loop:
    """One private event loop in a daemon thread, shared by every PostgreSQL authority of this process."""

    _loop: asyncio.AbstractEventLoop | None = None
    _guard = threading.Lock()

    @classmethod
    def run(cls, coro: Coroutine[Any, Any, T]) -> T:
        with cls._guard:
            if cls._loop is None:
                cls._loop = asyncio.new_event_loop()
                threading.Thread(target=cls._loop.run_forever, name="sdgov-authority", daemon=True).start()
        return asyncio.run_coroutine_threadsafe(coro, cls._loop).result()


class PostgresAuthority:
    """The authority in a PostgreSQL database (``url``): tables created on first use, an advisory lock for
    :meth:`lock`, a table lock around each check-and-charge."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._ready = False

    @property
    def where(self) -> str:
        """The database URL without its password."""
        return masked(self.url)

    # ---------------------------------------------------------------- connection
    def _run(self, work: Any, *args: Any) -> Any:
        """``await work(connection, *args)`` in one transaction on a fresh connection; a server that refuses, or a
        database that fails, is one line naming the URL without its password."""

        async def go() -> Any:
            con = await asyncpg.connect(self.url, timeout=30)
            try:
                async with con.transaction():
                    if not self._ready:
                        await con.execute(_SCHEMA)
                        await con.execute(
                            "INSERT INTO meta VALUES ('authority_id', $1) ON CONFLICT (name) DO NOTHING",
                            uuid.uuid4().hex,
                        )
                    out = await work(con, *args)
                self._ready = True
                return out
            finally:
                await con.close()

        try:
            return _Loop.run(go())
        except _FAILURES as exc:
            raise self._failed("failed", exc) from None

    def _failed(self, what: str, exc: BaseException) -> RegistryError:
        """One line naming the database without its password, what went wrong and how to fix it."""
        first = (str(exc).splitlines() or [""])[0][:120]
        return RegistryError(
            f"the budget authority's database {what} ({type(exc).__name__}: {first})",
            masked(self.url),
            f"check the PostgreSQL server and ${AUTHORITY} (the password from PGPASSWORD or ~/.pgpass)",
        )

    @property
    def authority_id(self) -> str:
        """Created with the tables, in ``meta``."""

        async def get(con: Any) -> str:
            return str(await con.fetchval("SELECT value FROM meta WHERE name = 'authority_id'"))

        return str(self._run(get))

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """``pg_advisory_lock`` on a connection held for the block (re-entrant within a thread)."""
        held: set[str] = _held.__dict__.setdefault("urls", set())
        if self.url in held:
            yield
            return

        async def take() -> Any:
            con = await asyncpg.connect(self.url, timeout=30)
            await con.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)
            return con

        async def give(con: Any) -> None:
            try:
                await con.execute("SELECT pg_advisory_unlock($1)", LOCK_KEY)
            finally:
                await con.close()

        try:
            con = _Loop.run(take())
        except _FAILURES as exc:
            raise self._failed("cannot be locked", exc) from None
        held.add(self.url)
        try:
            yield
        finally:
            held.discard(self.url)
            _Loop.run(give(con))

    def identity(self) -> str | None:
        """Its id (a database is created on first connection, so it always has one once reachable)."""
        return self.authority_id

    # ---------------------------------------------------------------- the chain
    @staticmethod
    async def _rows(con: Any) -> list[Row]:
        return [Row(**dict(r)) for r in await con.fetch(_ROWS)]

    @staticmethod
    async def _tables(con: Any) -> tuple[list[Charge], list[Lifetime]]:
        rows = await con.fetch(f"SELECT {_COLUMNS} FROM charges c ORDER BY c.seq")
        return [await _charge(con, r) for r in rows], [_lifetime(r) for r in await con.fetch(_LIFETIMES)]

    def rows(self) -> list[Row]:
        """Read in one transaction."""
        return list(self._run(self._rows))

    def verify(self) -> list[str]:
        """The chain against the tables, in one transaction."""

        async def work(con: Any) -> list[str]:
            rows = await self._rows(con)
            return chain_problems(rows, *(await self._tables(con))) if rows else []

        return list(self._run(work))

    async def _checked(self, con: Any, signer: Signer) -> list[Row]:
        """The chain, verified, before a write adds to it (sealing an authority made before chains)."""
        rows = await self._rows(con)
        charges, lifetimes = await self._tables(con)
        if not rows and (charges or lifetimes):
            for c in charges:
                await self._chain(con, rows, c, signer)
            for lt in lifetimes:
                await self._chain(con, rows, lt, signer)
        check_chain(rows, charges, lifetimes, masked(self.url))
        return rows

    @staticmethod
    async def _chain(con: Any, rows: list[Row], item: Charge | Lifetime | Governor, signer: Signer) -> Row:
        row = new_row(rows[-1] if rows else None, item, signer)
        rows.append(row)
        await con.execute(
            "INSERT INTO chain (seq, kind, ref, body, prev, hash, registry_id, public_key, sig) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            row.seq, row.kind, row.ref, row.body, row.prev, row.hash, row.registry_id, row.public_key, row.sig,
        )  # fmt: skip
        return row

    async def _govern(self, con: Any, rows: list[Row], signer: Signer, governs: bool) -> Governor | None:
        gov = governor(rows)
        if gov is None and governs:
            gov = Governor(registry_id=signer.registry_id, public_key=signer.public_key, time=utcnow())
            await self._chain(con, rows, gov, signer)
        return gov

    @staticmethod
    async def _head(con: Any, rows: list[Row]) -> Head:
        head = head_of(str(await con.fetchval("SELECT value FROM meta WHERE name = 'authority_id'")), rows)
        assert head is not None
        return head

    # ---------------------------------------------------------------- accounts
    @staticmethod
    async def _account(con: Any, fingerprint: str, dataset: str) -> list[Charge]:
        rows = await con.fetch(
            f"SELECT {_COLUMNS} FROM charges c WHERE c.fingerprint = $1 OR c.dataset = $2 ORDER BY c.seq",
            fingerprint,
            dataset,
        )
        return [await _charge(con, r) for r in rows]

    def charges(self, fingerprint: str, dataset: str) -> list[Charge]:
        """Read in one transaction."""
        return list(self._run(self._account, fingerprint, dataset))

    def charge(
        self, charge: Charge, lifetime_rho: float, source: str, signer: Signer, governs: bool = False
    ) -> tuple[Charge, list[Charge], Head]:
        """The chain's check, the account, its lifetime and the inserts (rows chained) in one transaction holding
        the charges, lifetimes and chain tables' lock."""

        async def work(con: Any) -> tuple[Charge, list[Charge], Head]:
            await con.execute(_WRITE_LOCK)
            rows = await self._checked(con, signer)
            gov = await self._govern(con, rows, signer, governs)
            before = await self._account(con, charge.fingerprint, charge.dataset)
            account = await self._lifetime(con, charge.fingerprint, charge.dataset, before, gov)
            checked, setting = decide_charge(charge, before, account, lifetime_rho, source, gov)
            if setting is not None:
                await self._chain(con, rows, await self._insert_lifetime(con, setting), signer)
            stored = await self._insert(con, checked)
            await self._chain(con, rows, stored, signer)
            return stored, before, await self._head(con, rows)

        return self._run(work)

    @staticmethod
    async def _lifetime(
        con: Any, fingerprint: str, dataset: str, charges: list[Charge], gov: Governor | None
    ) -> Lifetime | None:
        settings = [_lifetime(r) for r in await con.fetch(_LIFETIMES)]
        return governed_lifetime(latest_settings(settings, gov, fingerprint, dataset), charges, gov)

    def lifetime(self, fingerprint: str, dataset: str) -> Lifetime | None:
        """Read in one transaction."""

        async def work(con: Any) -> Lifetime | None:
            gov = governor(await self._rows(con))
            charges = await self._account(con, fingerprint, dataset)
            return await self._lifetime(con, fingerprint, dataset, charges, gov)

        return self._run(work)

    def accounts(self, dataset: str) -> list[tuple[str, str]]:
        """From the latest setting of each account, else its latest charge."""

        async def work(con: Any) -> list[tuple[str, str]]:
            charged = await con.fetch(
                "SELECT fingerprint, dataset FROM charges WHERE fingerprint = $1 OR dataset = $1 ORDER BY seq", dataset
            )
            found = {r["fingerprint"]: r["dataset"] for r in charged}
            settings = await con.fetch(
                "SELECT fingerprint, dataset FROM lifetimes WHERE fingerprint = $1 OR dataset = $1 ORDER BY seq",
                dataset,
            )
            found.update({r["fingerprint"]: r["dataset"] for r in settings})
            return sorted(found.items())

        return list(self._run(work))

    def set_lifetime(
        self, settings: list[Lifetime], signer: Signer, governs: bool = False
    ) -> tuple[list[Lifetime], Head]:
        """Inserted and chained in one transaction holding the tables' lock, through the governing registry only."""

        async def work(con: Any) -> tuple[list[Lifetime], Head]:
            await con.execute(_WRITE_LOCK)
            rows = await self._checked(con, signer)
            check_governor(await self._govern(con, rows, signer, governs), signer, masked(self.url))
            stored = []
            for s in settings:
                stored.append(await self._insert_lifetime(con, s))
                await self._chain(con, rows, stored[-1], signer)
            return stored, await self._head(con, rows)

        return self._run(work)

    @staticmethod
    async def _insert_lifetime(con: Any, s: Lifetime) -> Lifetime:
        seq = await con.fetchval(
            "INSERT INTO lifetimes (fingerprint, dataset, lifetime_rho, time, registry_id, source) "
            "VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
            s.fingerprint, s.dataset, s.lifetime_rho, s.time, s.registry_id, s.source,
        )  # fmt: skip
        return s.model_copy(update={"seq": int(seq)})

    def import_charges(self, charges: list[Charge], signer: Signer) -> None:
        """One transaction for all of them; a ``ref`` already stored is skipped; each one chained."""
        if not charges:
            return

        async def work(con: Any) -> None:
            await con.execute(_WRITE_LOCK)
            known = {r["ref"] for r in await con.fetch("SELECT ref FROM charges")}
            fresh = [c for c in charges if c.ref not in known]
            if fresh:
                rows = await self._checked(con, signer)
                for c in fresh:
                    await self._chain(con, rows, await self._insert(con, c), signer)

        self._run(work)

    @staticmethod
    async def _insert(con: Any, c: Charge) -> Charge:
        seq = await con.fetchval(
            "INSERT INTO charges (ref, time, dataset, fingerprint, rho, agreement_sha256, run_id, registry_id, "
            "lifetime_rho) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING seq",
            c.ref, c.time, c.dataset, c.fingerprint, c.rho, c.agreement_sha256, c.run_id, c.registry_id,
            c.lifetime_rho,
        )  # fmt: skip
        await con.executemany(
            "INSERT INTO reserved (ref, key, rho) VALUES ($1, $2, $3)", [(c.ref, k, v) for k, v in c.statistics.items()]
        )
        return c.model_copy(update={"seq": int(seq)})

    def reservation(self, key: str) -> Charge | None:
        """The first charge naming ``key``."""

        async def work(con: Any) -> Charge | None:
            row = await con.fetchrow(
                f"SELECT {_COLUMNS} FROM charges c JOIN reserved r ON r.ref = c.ref WHERE r.key = $1 "
                "ORDER BY c.seq LIMIT 1",
                key,
            )
            return None if row is None else await _charge(con, row)

        return self._run(work)

    # ---------------------------------------------------------------- statistics
    def drawn(self, key: str) -> tuple[Drawn, bytes] | None:
        """The stored bytes, checked against their recorded sha256."""

        async def work(con: Any) -> Any:
            return await con.fetchrow(
                "SELECT key, sha256, registry_id, run_id, time, payload FROM statistics WHERE key = $1", key
            )

        row = self._run(work)
        if row is None:
            return None
        payload = bytes(row["payload"])
        if sha256_bytes(payload) != row["sha256"]:
            raise RegistryError(
                f"statistic {key[:12]}… in the budget authority does not match its recorded hash",
                masked(self.url),
                "restore the authority from its backup; never re-draw noise for the same statistic",
            )
        drawn = Drawn(key=row["key"], sha256=row["sha256"], registry_id=row["registry_id"], run_id=row["run_id"],
                      time=row["time"])  # fmt: skip
        return drawn, payload

    def record(self, key: str, payload: bytes, registry_id: str, run_id: str, time: str | None = None) -> Drawn:
        """Inserted (or found, with the same bytes) in one committed transaction."""
        sha = sha256_bytes(payload)

        async def work(con: Any) -> Drawn:
            await con.execute("LOCK TABLE statistics IN SHARE ROW EXCLUSIVE MODE")
            found = await con.fetchrow("SELECT sha256, registry_id, run_id, time FROM statistics WHERE key = $1", key)
            if found is not None:
                if found["sha256"] != sha:
                    raise RegistryError(
                        f"statistic {key[:12]}… was drawn before with other noise (the authority keeps the first "
                        "draw; two noisy copies of one statistic would leak more than one)",
                        masked(self.url),
                        "use the authority's copy; never draw a statistic twice",
                    )
                return Drawn(key=key, sha256=sha, registry_id=found["registry_id"], run_id=found["run_id"],
                             time=found["time"])  # fmt: skip
            drawn = Drawn(key=key, sha256=sha, registry_id=registry_id, run_id=run_id, time=time or utcnow())
            await con.execute(
                "INSERT INTO statistics (key, sha256, payload, registry_id, run_id, time) "
                "VALUES ($1, $2, $3, $4, $5, $6)",
                key, sha, payload, registry_id, run_id, drawn.time,
            )  # fmt: skip
            return drawn

        return self._run(work)

    def keys(self) -> set[str]:
        """One read of the statistics table's keys."""

        async def work(con: Any) -> set[str]:
            return {r["key"] for r in await con.fetch("SELECT key FROM statistics")}

        return set(self._run(work))


def _lifetime(row: Any) -> Lifetime:
    return Lifetime(seq=row["seq"], fingerprint=row["fingerprint"], dataset=row["dataset"],
                    lifetime_rho=float(row["lifetime_rho"]), time=row["time"], registry_id=row["registry_id"],
                    source=row["source"])  # fmt: skip


async def _charge(con: Any, row: Any) -> Charge:
    stats = {
        r["key"]: float(r["rho"]) for r in await con.fetch("SELECT key, rho FROM reserved WHERE ref = $1", row["ref"])
    }
    return Charge(
        seq=row["seq"],
        ref=row["ref"],
        time=row["time"],
        dataset=row["dataset"],
        fingerprint=row["fingerprint"],
        rho=float(row["rho"]),
        statistics=stats,
        agreement_sha256=row["agreement_sha256"],
        run_id=row["run_id"],
        registry_id=row["registry_id"],
        lifetime_rho=row["lifetime_rho"],
    )
