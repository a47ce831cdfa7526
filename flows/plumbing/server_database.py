"""The Prefect server's database for a team: a PostgreSQL URL, checked, shown without its password, and reached.

One person's server keeps Prefect's SQLite file in ``PREFECT_HOME``; a team's runs on PostgreSQL
(``sdgov server start --database postgresql://USER@HOST:PORT/DB``). The URL often carries a password: it goes to
the server's environment only, and every line sdgov prints shows :func:`masked` instead. A URL that is not a
PostgreSQL URL, or a database that does not answer, is one line before the server starts, not Prefect's traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from sdgov.base.errors import SdgovError

SCHEMES = {"postgresql", "postgresql+asyncpg", "postgres"}
FIX = (
    "e.g. --database postgresql://prefect@127.0.0.1:5432/prefect (password: PGPASSWORD or ~/.pgpass; one in the URL "
    "percent-encodes / @ :)"
)


@dataclass(frozen=True)
class ServerDatabase:
    """A checked PostgreSQL URL: ``url`` is what Prefect's server is given (asyncpg driver, password included),
    ``shown`` the same without the password."""

    url: str
    shown: str
    host: str
    port: int
    user: str | None
    password: str | None
    name: str


def parse(raw: str) -> ServerDatabase:
    """Check ``raw`` (``postgresql[+asyncpg]://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE``); an ``SdgovError`` that
    never repeats the password says what is wrong."""
    shown = _shown(raw)
    try:
        parts = urlsplit(raw.strip())
        port = parts.port or 5432
    except ValueError:
        raise SdgovError(f"'{shown}' has a port that is not a number", "--database", FIX) from None
    if parts.scheme not in SCHEMES:
        raise SdgovError(
            f"'{shown}' is not a PostgreSQL URL (scheme '{parts.scheme}'); SQLite is the default without --database",
            "--database",
            FIX,
        )
    name = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not name or "/" in name or parts.query or parts.fragment:
        raise SdgovError(f"'{shown}' needs a host and a database name, and nothing after them", "--database", FIX)
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    host = parts.hostname
    netloc = _netloc(user, password, host, port)
    return ServerDatabase(
        url=f"postgresql+asyncpg://{netloc}/{quote(name, safe='')}",
        shown=f"postgresql://{_netloc(user, '***' if password is not None else None, host, port)}/{name}",
        host=host,
        port=port,
        user=user,
        password=password,
        name=name,
    )


def _netloc(user: str | None, password: str | None, host: str, port: int) -> str:
    who = quote(user, safe="") if user else ""
    if password is not None:
        who += ":" + (password if password == "***" else quote(password, safe=""))
    host = f"[{host}]" if ":" in host else host
    return f"{who + '@' if who else ''}{host}:{port}"


def _shown(raw: str) -> str:
    """``raw`` as given, whatever follows the user name up to the last ``@`` replaced by ``***`` (for error lines:
    a password typed without percent-encoding may hold ``/``, ``@`` or ``:``, which defeat a URL parser)."""
    head, sep, rest = raw.strip().partition("://")
    if not sep or "@" not in rest:
        return raw.strip()
    userinfo, _, host = rest.rpartition("@")
    user, colon, _password = userinfo.partition(":")
    return f"{head}://{user}{':***' if colon else ''}@{host}"


def check_reachable(db: ServerDatabase, timeout: float = 10.0) -> None:
    """Connect once and close: a database that refuses, or does not answer within ``timeout`` seconds, is an
    ``SdgovError`` naming it (without its password), so the server is not started against it."""
    import asyncio

    import asyncpg

    async def connect() -> None:
        conn = await asyncpg.connect(
            host=db.host, port=db.port, user=db.user, password=db.password, database=db.name, timeout=timeout
        )
        await conn.close()

    try:
        asyncio.run(connect())
    except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        if db.password:
            why = why.replace(db.password, "***")
        raise SdgovError(
            f"the PostgreSQL database {db.shown} did not accept a connection ({why}); the server was not started",
            "--database",
            "start PostgreSQL, create the database (createdb) and check the user, host, port and password",
        ) from None
