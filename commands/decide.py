"""``sdgov sign`` and ``sdgov approve``: a person's decision on a paused run (:mod:`sdgov.flows.pauses`).

    sdgov sign RUN_ID --as NAME --key KEY [--reject]           the signed statement to paste into the UI form
    sdgov approve RUN_ID --as NAME --key KEY [--reject] [--comment TEXT] [--wait S] [--yes --hash PREFIX]
                                                               show Φ, ε/δ, verdict, hash, draft card; sign, resume

Client commands reach the server named by ``PREFECT_API_URL`` (and ``PREFECT_API_AUTH_STRING`` when the server
has basic auth); ``sdgov server start --print-env`` prints both. ``sdgov review`` (a Φ review) is in :mod:`.review`.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import TYPE_CHECKING, Any

from sdgov.base.errors import SdgovError
from sdgov.commands._common import Parents, command, emit, site_of
from sdgov.flows.pauses import TAKEN_WAIT_S

if TYPE_CHECKING:
    from sdgov.flows.pauses import DecisionAsked


def cmd_sign(args: argparse.Namespace) -> int:
    """Print the signed decision for the run's pause, to paste into its Prefect UI form; exit 0. A decision the flow
    would refuse (unknown name, wrong role, own proposal, wrong key) is logged and refused here, exit 2."""
    from sdgov.flows.pauses import sign_decision

    signed = sign_decision(site_of(args), _asked(args))
    run_id, decision, token = signed.run_id, signed.decision, signed.signature
    payload = {"run_id": str(run_id), "subject": signed.pending["subject"], "decision": decision, "signature": token}
    emit(args, payload, token)
    for w in signed.pending.get("warnings", []):
        print(f"sdgov: {w}", file=sys.stderr)
    print(
        f"sdgov: paste the line above into the 'Signature' field of run {run_id}'s resume form, with your name "
        f"{args.who!r} and decision {decision!r}; it is valid for this pause only",
        file=sys.stderr,
    )
    return 0


def cmd_approve(args: argparse.Namespace) -> int:
    """Sign the decision, resume the run with it and exit 0 once the run's process logged it in the registry
    (:func:`sdgov.flows.pauses.approve_decision`); an approval first shows what is approved and asks for the hash's
    first 8 characters (``--yes --hash PREFIX``). A refused decision, a wrong prefix, a run the registry logged as
    ended, a decision no process logged within ``--wait`` seconds (default :data:`TAKEN_WAIT_S`), or (``--wait``) the
    flow asking again is one line, exit 2; (``--wait``) a run that then ends Failed, exit 1."""
    from sdgov.flows.pauses import approve_decision

    confirm = functools.partial(_confirmation, args)
    payload = approve_decision(site_of(args), _asked(args), args.comment, args.wait, confirm)
    done = "approved" if payload["decision"] == "approve" else "rejected"
    emit(
        args,
        payload,
        f"{args.who} {done} the {payload['subject']} {payload['sha256']} of run {payload['run_id']} "
        f"({payload['state']})",
    )
    return 0 if payload["ok"] else 1


def _asked(args: argparse.Namespace) -> DecisionAsked:
    """The decision the flags ask for: the run, ``--as``, ``--key``, ``--reject`` and the pinned ``--root``."""
    from sdgov.flows.pauses import DecisionAsked

    return DecisionAsked(args.run_id, args.who, args.key, args.reject, args.root)


def approval_summary(p: dict[str, Any]) -> str:
    """What ``sdgov approve`` shows before asking for the hash: Φ, ε/δ, the verdict, the full hash, the draft card."""
    s = p.get("summary") or {}
    lines = [f"sdgov: {w}" for w in p.get("warnings", [])]
    lines.append(
        f"sdgov: run {p['run_id']} awaits a decision on the {p['subject']} proposed by {p.get('proposer', '?')}"
    )
    if s.get("phi"):
        lines.append("  Φ: " + "; ".join(s["phi"]))
    if s.get("privacy"):  # the privacy statement's words (the agreement's: its plan's, before any draw)
        lines.append(f"  privacy: {s['privacy']}")
    if s.get("rows"):
        lines.append(f"  rows to release: {int(s['rows']):,} synthetic records")
    if s.get("verdict"):
        lines.append(f"  overall verdict: {s['verdict']}")
    lines.append(f"  {p['subject']} hash: {p['sha256']}")
    if s.get("draft_card"):
        lines.append(f"  draft card (published as is, plus the sign-offs): {s['draft_card']}")
        lines.append(f"    Markdown: {s.get('draft_card_md', '')}")
    if s.get("evidence_report"):
        lines.append(f"  evidence report (controller only): {s['evidence_report']}")
    return "\n".join(lines)


def _confirmation(args: argparse.Namespace, p: dict[str, Any]) -> str:
    """Show the summary, then take the first 8 characters of the hash, typed by the approver (``--yes --hash
    PREFIX`` in scripts); a missing or wrong prefix is one line and nothing is sent."""
    from sdgov.governance.decisions import CONFIRM_CHARS

    if args.yes and not args.hash:
        raise SdgovError(
            "--yes needs --hash PREFIX", "--hash", f"pass the first {CONFIRM_CHARS} characters of the hash"
        )
    if not args.hash and not sys.stdin.isatty():
        raise SdgovError(
            f"approving needs the first {CONFIRM_CHARS} characters of the {p['subject']} hash {p['sha256']}",
            args.run_id,
            "run it at a terminal and type them when asked, or pass --yes --hash PREFIX",
        )
    print(approval_summary(p), file=sys.stderr)
    if args.hash:
        typed = args.hash
    else:
        print(
            f"Type the first {CONFIRM_CHARS} characters of the {p['subject']} hash to approve: ",
            end="",
            file=sys.stderr,
        )
        sys.stderr.flush()
        typed = sys.stdin.readline()
    typed = typed.strip().lower()
    if typed != p["sha256"][:CONFIRM_CHARS]:
        raise SdgovError(
            f"{typed[:16]!r} is not the first {CONFIRM_CHARS} characters of the {p['subject']} hash",
            args.run_id,
            "read the hash above and type its first 8 characters; nothing was sent",
        )
    return typed


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``sign`` and ``approve``."""
    add = functools.partial(command, subparsers, parents)
    for name, fn, help_ in (
        ("sign", cmd_sign, "print your signed decision on a paused run, to paste into the Prefect UI form"),
        ("approve", cmd_approve, "sign your decision on a paused run and resume it through the Prefect API"),
    ):
        a = add(name, fn, help_, [parents.root])
        a.add_argument("run_id")
        a.add_argument("--as", dest="who", required=True, help="your name, as in the approvers registry")
        a.add_argument("--key", required=True, help="your Ed25519 private key (PEM or OpenSSH)")
        a.add_argument("--reject", action="store_true", help="reject (default: approve)")
        if fn is cmd_approve:
            a.add_argument("--comment", default="")
            a.add_argument(
                "--wait",
                type=float,
                default=0,
                help=f"seconds to wait for the run to take it (default {TAKEN_WAIT_S:.0f}), then to watch the run",
            )
            a.add_argument("--hash", help="the first 8 characters of the hash you approve (asked for when omitted)")
            a.add_argument("--yes", action="store_true", help="do not ask: for scripts, with --hash PREFIX")
