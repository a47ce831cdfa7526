"""``sdgov review``: a stakeholder's signed review of a Φ proposal on a paused run (what ``sdgov approve`` is to a
decision).

    sdgov review RUN_ID --as NAME --key KEY --why TEXT [--part P] [--drop A,B]... [--force C,D]... [--close] [--print]

The review (drops, forces, reason, close) is bound to one hash, signed with the reviewer's key for this registry,
run and pause (nonce), checked here exactly as the flow will check it — a review that would be refused is never
sent — and sent through the Prefect resume API; ``--print`` only prints the signed statement, to paste into the
form's *Signature* field in the UI (with the same fields typed there).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from sdgov.base.errors import SdgovError
from sdgov.commands._common import Parents, command, emit, site_of

if TYPE_CHECKING:
    from sdgov.measurement.selection.review import EdgeReview


def _review(args: argparse.Namespace) -> EdgeReview:
    """The review the flags say (drops, forces, reason, part, close); without a reason, one line."""
    from sdgov.measurement.selection.review import EdgeReview, parse_pairs

    if not args.why.strip():
        raise SdgovError("a review needs a reason", "--why", "say why: it is logged with every change")
    return EdgeReview(
        reviewer=args.who,
        drop=[p for text in args.drop for p in parse_pairs(text, "--drop")],
        force=[p for text in args.force for p in parse_pairs(text, "--force")],
        reason=args.why,
        close=args.close,
        part=args.part or None,
    )


def cmd_review(args: argparse.Namespace) -> int:
    """Sign the Φ review for the run's pause, check it as the flow will, and resume the run with it
    (:func:`sdgov.flows.pauses.review_phi`); exit 0.

    ``--print`` prints the signed statement instead of sending it; a review the check or the flow refuses is an
    ``SdgovError`` (exit 2)."""
    from sdgov.flows.pauses import review_phi
    from sdgov.identity.keys import load_private_key

    load_private_key(args.key)  # a missing or unreadable key: one line before the flags' review is read
    review = _review(args)
    sent = review_phi(site_of(args), args.run_id, review, args.key, root=args.root, send=not args.print, wait=args.wait)
    if sent.state is None:
        emit(args, {"run_id": str(sent.run_id), "signature": sent.signature}, sent.signature)
        return 0
    payload = {"ok": True, "run_id": str(sent.run_id), **sent.review.model_dump(mode="json"), "signed": True}
    emit(
        args,
        {**payload, "state": sent.state},
        f"{args.who} reviewed the Φ proposal of run {sent.run_id} ({sent.state})",
    )
    for w in sent.warnings:
        print(f"sdgov: {w}", file=sys.stderr)
    return 0


HELP = "review a Φ proposal on a paused run: drop or force pairs, say why, sign, resume"


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``review``."""
    r = command(subparsers, parents, "review", cmd_review, HELP, [parents.root])
    r.add_argument("run_id")
    r.add_argument("--as", dest="who", required=True, help="your name, as in the approvers registry")
    r.add_argument("--key", required=True, help="your Ed25519 private key (PEM or OpenSSH)")
    r.add_argument("--why", required=True, help="the reason, logged with every change and shown on the card")
    r.add_argument("--drop", action="append", default=[], help="a pair to take out of Φ: A,B (repeat, or 'A,B; C,D')")
    r.add_argument("--force", action="append", default=[], help="a pair to add to Φ: A,B (repeat, or 'A,B; C,D')")
    r.add_argument("--part", help="a split synthesis: the part whose Φ the drops and forces edit")
    r.add_argument("--close", action="store_true", help="the last review: the reviewed Φ goes to the agreement")
    r.add_argument("--print", action="store_true", help="only print the signed statement, to paste into the UI form")
    r.add_argument("--wait", type=float, default=0, help="seconds to watch the run after resuming it")
