"""What every ``sdgov`` command shares: the one output helper, the site, the parent parsers of the shared flags, the
registration helper and ``json_object_arg``. What the commands do is not here: each calls one use case, in the core
or in the flows (:mod:`sdgov.flows.pauses` for the commands that answer a paused run).

Nothing heavy is imported here at module level (``sdgov keygen`` must not load Prefect or JAX): each helper
imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sdgov.governance.site import Site

Command = Callable[[argparse.Namespace], int]
ROOT_HELP = "registry root (default: $SDGOV_REGISTRY or ./registry)"

# ------------------------------------------------------------------------------------------------ output


def emit(args: argparse.Namespace, payload: Any, human: str, *, indent: int = 2, ensure_ascii: bool = True) -> None:
    """``--json``: the payload on stdout (anything JSON cannot hold as its ``str``); else the human text."""
    print(json.dumps(payload, indent=indent, default=str, ensure_ascii=ensure_ascii) if args.json else human)


# ------------------------------------------------------------------------------------------------ the site


def site_of(args: argparse.Namespace) -> Site:
    """The controller's site the command works against (:class:`~sdgov.governance.site.Site`): the registry of
    ``--root`` (else ``$SDGOV_REGISTRY``, else ``./registry``), its keys, secret and budget authority, from this
    process's settings — resolved once per command, and passed down from here."""
    site = getattr(args, "site", None)
    if site is None:
        from sdgov.governance.site import Site

        site = args.site = Site.resolve(getattr(args, "root", None))
    return site


# ------------------------------------------------------------------------------------------------ parsers


@dataclass(frozen=True)
class Parents:
    """The parent parsers of the shared flags: each flag is declared once, here, and a command lists the ones it
    takes (``--json`` is given to every command by :func:`command`)."""

    json: argparse.ArgumentParser
    root: argparse.ArgumentParser
    spec: argparse.ArgumentParser
    data: argparse.ArgumentParser


def _parent(*names: str, **kwargs: Any) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(*names, **kwargs)
    return p


def parent_parsers() -> Parents:
    return Parents(
        json=_parent("--json", action="store_true", help="machine-readable output on stdout"),
        root=_parent("--root", help=ROOT_HELP),
        spec=_parent("--spec", required=True),
        data=_parent("--data", help="override the spec's dataset path"),
    )


def command(
    subparsers: argparse._SubParsersAction,
    parents: Parents,
    name: str,
    fn: Command,
    help_: str,
    takes: Sequence[argparse.ArgumentParser] = (),
) -> argparse.ArgumentParser:
    """Register one command: its help (also its description), ``--json``, the shared flags it ``takes``, and the
    function that runs it (``args.fn``)."""
    sp = subparsers.add_parser(name, help=help_, description=help_, parents=[parents.json, *takes])
    sp.set_defaults(fn=fn)
    return sp


def json_object_arg(text: str, flag: str, example: str) -> dict:
    """A command-line option holding a JSON object, or one clear error naming the option."""
    from sdgov.audits.generator_protocol import AuditError

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AuditError(f"{flag} is not JSON ({exc.msg})", flag, f"write e.g. '{example}'") from None
    if not isinstance(value, dict):
        raise AuditError(f"{flag} must be a JSON object", flag)
    return value
