"""``sdgov server start --database URL``: a team's Prefect server on PostgreSQL. The URL reaches the server's
environment whole (asyncpg driver, password included) and every line sdgov prints shows it without the password; a
URL that is not PostgreSQL's, or a database that does not answer, is one line and exit 2, no server started."""

from __future__ import annotations

import contextlib
import io
import socket

import pytest
from sqlalchemy.engine import make_url

from sdgov.base.errors import SdgovError
from sdgov.commands import main
from sdgov.flows.plumbing.local_server import server_env
from sdgov.flows.plumbing.server_database import parse

SECRET = "s3cr:t/@pw"  # characters a URL must escape
ESCAPED = "s3cr%3At%2F%40pw"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_the_server_gets_the_whole_url_and_nobody_sees_the_password(tmp_path):
    given = f"postgresql://prefect:{ESCAPED}@db:6543/pf"
    env = server_env(tmp_path, 4200, "ops:x", given)
    url = make_url(env["PREFECT_SERVER_DATABASE_CONNECTION_URL"])  # what Prefect's SQLAlchemy engine will parse
    assert (url.drivername, url.username, url.password, url.host, url.port, url.database) == (
        "postgresql+asyncpg",
        "prefect",
        SECRET,
        "db",
        6543,
        "pf",
    )
    assert parse(given).shown == "postgresql://prefect:***@db:6543/pf"
    assert parse("postgres://u@db/pf").shown == "postgresql://u@db:5432/pf"  # no password: none shown, default port
    assert server_env(tmp_path, 4200, None)["PREFECT_SERVER_DATABASE_CONNECTION_URL"].startswith("sqlite+aiosqlite")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        (f"mysql://u:{ESCAPED}@h/db", "'mysql://u:***@h/db' is not a PostgreSQL URL"),
        ("sqlite:///prefect.db", "is not a PostgreSQL URL"),
        (f"postgresql://u:{ESCAPED}@h:port/db", "'postgresql://u:***@h:port/db' has a port that is not a number"),
        (f"postgresql://u:{ESCAPED}@h:5432/", "needs a host and a database name"),
        (f"postgresql://u:{ESCAPED}@/db", "needs a host and a database name"),
        (f"postgresql://u:{ESCAPED}@h/db?sslmode=disable", "nothing after them"),
        (f"postgresql://u:{SECRET}@h/db", "'postgresql://u:***@h/db'"),  # not percent-encoded: still never shown
    ],
)
def test_a_malformed_url_is_one_line_without_its_password(url, why):
    with pytest.raises(SdgovError) as caught:
        parse(url)
    assert why in str(caught.value) and "s3cr" not in str(caught.value)
    code, out, err = _run("server", "start", "--database", url, "--port", "1")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert why in err and "--database" in err and "s3cr" not in err


def test_a_database_that_does_not_answer_is_one_line_and_no_server(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = _run(
        "server", "start", "--home", str(tmp_path), "--database", f"postgresql://u:hunter2@127.0.0.1:{port}/pf"
    )
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"postgresql://u:***@127.0.0.1:{port}/pf did not accept a connection" in err and "hunter2" not in err
    assert "the server was not started" in err and not (tmp_path / "prefect.db").exists()
