"""``sdgov`` — the command line.

Every command prints one line of error (what, where, fix) and exits 2 on bad input; ``--json`` prints a
machine-readable result on stdout (logs go to stderr).

One module per command (or group of commands sharing their flags), each exposing ``add_parser(subparsers, parents)
-> None`` and listed once in :data:`COMMANDS`; the shared flags are parent parsers in :mod:`._common`. A command
parses its flags, calls one use case — in the core, or in :mod:`sdgov.flows` where it starts or answers a Prefect run
— and prints what it returned (docs/architecture.md lists them). This module holds only ``main``, the parser, and
the one mapping of exceptions to exit codes. Importing it changes nothing: the environment defaults are set by
:func:`main`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from types import ModuleType
from typing import NoReturn

from sdgov.commands import (
    audit,
    channel,
    controller_files,
    decide,
    keys,
    propose,
    registry,
    release,
    report,
    review,
    runs,
    schedule,
    schema,
    server,
    stage,
    worker,
)
from sdgov.commands._common import Parents, parent_parsers

COMMANDS: list[ModuleType] = [
    release,
    stage,
    registry,
    report,
    schema,
    server,
    propose,
    runs,
    decide,
    keys,
    controller_files,
    review,
    schedule,
    worker,
    audit,
    channel,
]

ENV_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    "DVC_NO_ANALYTICS": "1",
}


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad flag is one ``sdgov: error:`` line and exit 2 like every other refusal (argparse's own
    usage block plus its error would be several lines, and a non-integer ``--K 2^40`` would read like a crash).
    Sub-commands inherit the class (argparse builds sub-parsers with the parent's class)."""

    def error(self, message: str) -> NoReturn:
        """Print the bad flag or argument as one ``sdgov: error:`` line (what, where, fix) and exit 2; never returns."""
        from sdgov.base.errors import SdgovError

        err = SdgovError(message, self.prog, f"see '{self.prog} --help'")
        self.exit(2, f"sdgov: error: {err.one_line()}\n")


def parser(parents: Parents | None = None) -> argparse.ArgumentParser:
    """The ``sdgov`` parser: every module of :data:`COMMANDS` adds its commands, with the shared flags of
    ``parents`` (new parent parsers unless given)."""
    p = OneLineParser(prog="sdgov", description="Governed, auditable synthetic-data releases.")
    subparsers = p.add_subparsers(dest="command", required=True)
    parents = parents or parent_parsers()
    for module in COMMANDS:
        module.add_parser(subparsers, parents)
    return p


def _error_json(args: argparse.Namespace, payload: dict) -> None:
    if args.json:
        print(json.dumps({"ok": False, **payload}))


def _server_unreachable(exc: BaseException) -> bool:
    """A Prefect client call that found no server (httpx's transport errors; httpx is loaded only by commands that
    talk to the server, so checking it costs the others nothing)."""
    httpx = sys.modules.get("httpx")
    return httpx is not None and isinstance(exc, httpx.TransportError)


FITS = {
    *("demo", "release", "validate", "propose", "stage", "audit"),
    *("regenerate", "verify-release", "schedule", "worker"),
}
"""The commands that fit (or dry-run) a model in their own process: the ones :func:`fixed_hash_seed` restarts."""


def fixed_hash_seed() -> None:
    """Restart once with ``PYTHONHASHSEED=0`` unless the caller chose a seed.

    mbi traces its compiled programs by iterating over sets of attribute names, and Python randomises string hashes
    per process, so the same model traced in two processes is a different program: JAX's compilation cache
    (:mod:`sdgov.base.jaxsetup`) then never serves a later command — ``sdgov release`` compiled again what ``sdgov
    validate`` had just compiled (12+ CPU s on the census extract's MST tree) — and the fit's floating-point
    operations come in an order that changes from process to process. One fixed seed: one program for one model,
    compiled once per machine. Only the commands that fit restart (:data:`FITS`): a restart imports the CLI again
    (~0.1 CPU s), which ``keygen`` or ``sign`` should not pay.
    """
    if os.environ.get("PYTHONHASHSEED") is None:
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, sys.orig_argv)


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` names and return its exit code: the command's own, 2 for a user's mistake (an
    ``SdgovError``, each pre-flight problem on its own line, a path the file system refused), 1 for a bug in sdgov;
    every error is one line on stderr (``--json``: also ``{"ok": false, ...}`` on stdout). Run as a program (no
    ``argv``), a command that fits a model first gets :func:`fixed_hash_seed`."""
    if argv is None and len(sys.argv) > 1 and sys.argv[1] in FITS:
        fixed_hash_seed()
    for name, value in ENV_DEFAULTS.items():  # here, not at import: importing the CLI changes nothing
        os.environ.setdefault(name, value)
    args = parser().parse_args(argv)
    from sdgov.base.errors import InternalError, PreflightError, SdgovError, disk_full

    try:
        return args.fn(args)
    except PreflightError as exc:  # every problem found before the first draw, one line each
        for problem in exc.problems:
            print(f"sdgov: error: {problem.one_line()}", file=sys.stderr)
        lines = [p.one_line() for p in exc.problems]
        _error_json(args, {"error": lines[0], "errors": lines, "type": "PreflightError"})
        return 2
    except (SdgovError, InternalError) as exc:  # a user's mistake exits 2, a bug in sdgov exits 1
        print(f"sdgov: error: {exc.one_line()}", file=sys.stderr)
        _error_json(args, {"error": exc.one_line(), "type": type(exc).__name__})
        return 2 if isinstance(exc, SdgovError) else 1
    except OSError as exc:  # the file system refused a path the user gave (too long, a loop, a directory...)
        err = disk_full(exc, str(getattr(args, "root", None) or "")) or SdgovError(
            exc.strerror or type(exc).__name__, str(exc.filename or ""), "check the path"
        )
        print(f"sdgov: error: {err.one_line()}", file=sys.stderr)
        _error_json(args, {"error": err.one_line(), "type": type(exc).__name__})
        return 2
    except Exception as exc:  # a Prefect client call that found no server: one line, not httpx's traceback
        if not _server_unreachable(exc):
            raise
        from sdgov.flows.plumbing.prefect_api import api_settings

        err = SdgovError(
            f"the Prefect server did not answer ({type(exc).__name__})",
            api_settings().url or "PREFECT_API_URL",
            "start it (sdgov server start) or point PREFECT_API_URL at the running one",
        )
        print(f"sdgov: error: {err.one_line()}", file=sys.stderr)
        _error_json(args, {"error": err.one_line(), "type": type(exc).__name__})
        return 2
