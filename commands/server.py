"""``sdgov server start``: a local Prefect server (:class:`sdgov.flows.plumbing.local_server.LocalServer`).

    sdgov server start [--port 4200] [--auth USER:PASS] [--home DIR] [--database URL] [--print-env]

Client commands reach the server named by ``PREFECT_API_URL`` (and ``PREFECT_API_AUTH_STRING`` when the server
has basic auth); ``--print-env`` prints both.
"""

from __future__ import annotations

import argparse
import sys

from sdgov.commands._common import Parents, command, emit


def cmd_server(args: argparse.Namespace) -> int:
    """Run a local Prefect server until it stops and return its exit status; it dies with this process, even on
    ``kill -9``. ``--print-env`` only prints the client settings (``export`` lines), exit 0."""
    from sdgov.flows.plumbing.local_server import LocalServer

    server = LocalServer.configure(args.home, args.port, args.auth, args.database)
    client_env = server.client_env
    if args.print_env:
        emit(args, client_env, "\n".join(f"export {k}={v}" for k, v in client_env.items()))
        return 0
    store = server.store()
    print(
        f"sdgov: Prefect server ({store}, analytics off{', basic auth on' if server.auth else ''}) "
        f"→ UI http://127.0.0.1:{args.port}\n  clients: "
        + " ".join(f"{k}={'***' if 'AUTH' in k else v}" for k, v in client_env.items()),
        file=sys.stderr,
    )
    if server.auth:
        print(
            f"  the UI asks for the password at http://127.0.0.1:{args.port}/login (once per browser); a link "
            "into the UI opened before that answers 'Authentication failed' — log in, then open it again",
            file=sys.stderr,
        )
    return server.run()


HELP = "run a local Prefect server (127.0.0.1, SQLite or PostgreSQL, no analytics, optional basic auth)"


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``server``."""
    s = command(subparsers, parents, "server", cmd_server, HELP)
    s.add_argument("action", choices=["start"])
    s.add_argument("--port", type=int, default=4200)
    s.add_argument("--auth", help="USER:PASSWORD: enable the server's basic auth (PREFECT_SERVER_API_AUTH_STRING)")
    s.add_argument("--home", help="PREFECT_HOME holding the SQLite database (default: $PREFECT_HOME or ~/.prefect)")
    s.add_argument(
        "--database",
        "--postgres",
        metavar="URL",
        help="postgresql://USER[:PASSWORD]@HOST[:PORT]/DB: a team's server on PostgreSQL instead of SQLite (default: "
        "$SDGOV_SERVER_DATABASE; keep the password in PGPASSWORD or ~/.pgpass, never on the command line)",
    )
    s.add_argument("--print-env", action="store_true", help="print the client settings and exit")
