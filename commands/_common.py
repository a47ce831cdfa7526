"""What every ``sdgov`` command shares: the one output helper, the parent parsers of the shared flags, the
registration helper, ``json_object_arg``, and the Prefect-server helpers that ``govern`` and ``review`` both use.

Nothing heavy is imported here at module level (``sdgov keygen`` must not load Prefect or JAX): each helper
imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from sdgov.base.errors import SdgovError

if TYPE_CHECKING:
    from sdgov.flows.plumbing.prefect_api import ApiSettings, FlowRun, PrefectApi
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


# ------------------------------------------------------------------------------------------------ the server


def require_server() -> ApiSettings:
    """Paused runs live on the server the flow runs against: where it is
    (:func:`~sdgov.flows.plumbing.prefect_api.api_settings`), or without ``PREFECT_API_URL``, one line."""
    from sdgov.flows.plumbing.prefect_api import api_settings

    settings = api_settings()
    if not settings.url:
        raise SdgovError(
            "no Prefect server configured: paused runs live on the server the flow runs against",
            "PREFECT_API_URL",
            'eval "$(sdgov server start --print-env)" (add --auth USER:PASS if the server has basic auth)',
        )
    return settings


def pending(api: PrefectApi, fr: FlowRun) -> dict[str, Any] | None:
    """What a paused run's pause awaits (the flow's pending-decision input), or None."""
    from sdgov.flows.plumbing.pending import PENDING_PREFIX

    if not (fr.state and fr.state.is_paused() and fr.state.pause_key):
        return None
    try:
        return json.loads(api.run_input(fr.id, PENDING_PREFIX + fr.state.pause_key))
    except Exception:
        return None


def paused_decision(api: PrefectApi, run_id_text: str, root: str | None = None) -> tuple[UUID, FlowRun, dict[str, Any]]:
    """The paused flow run and what its pause awaits (subject, hash, the nonce to sign) — from the registry's record
    of the pause (:func:`verified_pending`), never from what Prefect holds, with ``warnings`` (a registry taken from
    the run, fields rewritten on the server) — or a one-line error."""
    from sdgov.flows.plumbing.prefect_api import NotFound

    try:
        run_id = UUID(run_id_text)
    except ValueError:
        raise SdgovError(f"{run_id_text!r} is not a flow run id", "RUN_ID", "see 'sdgov runs'") from None
    try:
        fr = api.flow_run(run_id)
    except NotFound:
        raise SdgovError(f"no flow run {run_id}", str(run_id), "see 'sdgov runs'") from None
    if not (fr.state and fr.state.is_paused()):
        raise SdgovError(
            f"run {run_id} is not paused (state {fr.state.name if fr.state else '?'})",
            str(run_id),
            "only paused runs await a decision: see 'sdgov runs'",
        )
    p = pending(api, fr)
    if p is None or "nonce" not in p:
        raise SdgovError(f"run {run_id} is paused, but not for an sdgov decision", str(run_id), "use the Prefect UI")
    record, rewritten, note = verified_pending(fr, p, root)
    # shown with the summary (approve) or after the statement (sign): a refusal stays one line
    record["warnings"] = [w for w in (note, rewritten and _rewritten_line(rewritten)) if w]
    return run_id, fr, record


def _rewritten_line(fields: list[str]) -> str:
    return (
        f"WARNING: the run's input on the Prefect server was rewritten ({', '.join(fields)} differ from the "
        "registry's record); shown and signed: the registry's record"
    )


def pinned_root(root: str | None) -> str | None:
    """The registry the person trusts: ``--root``, else ``$SDGOV_REGISTRY``; None when neither names one."""
    from sdgov.base.settings import load_settings

    return load_settings().pinned_registry(root)


def verified_pending(
    fr: FlowRun, posted: dict[str, Any], root: str | None = None
) -> tuple[dict[str, Any], list[str], str]:
    """What a paused run awaits as its registry recorded it (checked against the signed log), the fields in which the
    copy on the Prefect server differs (rewritten by someone with the server's login), and a note when the registry
    was not pinned. The registry is ``root`` (``--root``) or ``$SDGOV_REGISTRY``; without either, the path the run
    names, which the note says (pin it: anyone who can rewrite run inputs could point at a registry of their own)."""
    from sdgov.governance.decisions import pending_record, rewritten_fields
    from sdgov.governance.site import Site

    pinned = pinned_root(root)
    registry = Site.resolve(pinned or str(posted.get("registry", ""))).registry
    record = pending_record(registry, str(fr.id), (fr.state.pause_key if fr.state else None) or "")
    if record.get("registry_id") != registry.registry_id() or record.get("run_id") != str(fr.id):
        raise SdgovError(
            f"the registry's record of run {fr.id} names another registry or run: someone altered it",
            str(registry.root),
            "do not sign; run 'sdgov registry verify' and report it to the controller",
        )
    note = "" if pinned else f"registry {registry.root} taken from the run (pin it with --root or $SDGOV_REGISTRY)"
    return record, rewritten_fields(posted, record), note


def resume(api: PrefectApi, run_id: UUID, run_input: dict[str, Any]) -> None:
    """Resume a paused run with its form's input; a refusal by the server is one line."""
    status, reason = api.resume(run_id, run_input)
    if status != "ACCEPT":
        raise SdgovError(f"the server did not resume run {run_id}: {reason}", str(run_id), "see 'sdgov runs'")
