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
import functools
import sys
import time
from typing import TYPE_CHECKING, Any

from sdgov.base.errors import SdgovError
from sdgov.commands._common import Parents, command, emit, paused_decision, pending, require_server, resume, site_of

if TYPE_CHECKING:
    from sdgov.flows.plumbing.prefect_api import PrefectApi


def _review(args: argparse.Namespace) -> Any:
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


def _signed(args: argparse.Namespace, review: Any, p: dict[str, Any]) -> str:
    """The statement over this review for this pause, after the check the flow will make."""
    from sdgov.base.clock import utcnow
    from sdgov.governance.approvers import Challenge
    from sdgov.governance.controller import controller_approvers
    from sdgov.identity.statements import SignOffStatement, encode_statement
    from sdgov.measurement.selection.review import DECISION, SUBJECT, check_reviewer, review_sha256

    if p["subject"] != SUBJECT:
        raise SdgovError(
            f"run {p['run_id']} awaits a decision on the {p['subject']}, not a Φ review",
            args.run_id,
            "decide with 'sdgov approve RUN_ID --as NAME --key KEY'",
        )
    challenge = Challenge(
        registry_id=p["registry_id"],
        run_id=p["run_id"],
        nonce=p["nonce"],
        subject=SUBJECT,
        sha256=review_sha256(review),
    )
    token = encode_statement(
        SignOffStatement(**challenge.model_dump(), decision=DECISION, approver=args.who, time=utcnow()), args.key
    )
    check_reviewer(controller_approvers(site_of(args).at(p["registry"]).registry), review, challenge, token)
    summary = p.get("summary") or {}
    parts = summary.get("parts") or {}
    if parts and (review.drop or review.force) and review.part not in parts:
        raise SdgovError(
            "this Φ proposal is a split synthesis's: a drop or force names the part whose Φ it edits",
            "--part",
            f"pass --part with one of {sorted(parts)}",
        )
    if not parts and review.part is not None:
        raise SdgovError("this Φ proposal is one model's: it has no parts", "--part", "leave --part out")
    shown = parts[review.part] if review.part in parts else summary.get("phi", [])
    phi = {frozenset(s.split(" × ")) for s in shown}
    for pair in review.drop:  # the flow checks these too; here nothing is sent
        if frozenset(pair) not in phi:
            raise SdgovError(f"cannot drop {pair}: it is not in the proposed Φ", "--drop", "see 'sdgov runs'")
    for pair in review.force:
        if frozenset(pair) in phi:
            raise SdgovError(f"cannot force {pair}: it is already in Φ", "--force", "force a pair not in Φ")
    return token


def cmd_review(args: argparse.Namespace) -> int:
    """Sign the Φ review for the run's pause, check it as the flow will, and resume the run with it; exit 0.

    ``--print`` prints the signed statement instead of sending it; a review the check or the flow refuses is an
    ``SdgovError`` (exit 2)."""
    from sdgov.flows.plumbing.prefect_api import PrefectApi
    from sdgov.identity.keys import load_private_key
    from sdgov.measurement.selection.review import format_pairs

    load_private_key(args.key)
    review = _review(args)
    settings = require_server()
    with PrefectApi(settings) as api:
        run_id, fr, p = paused_decision(api, args.run_id, args.root)
        review = review.model_copy(update={"proposal_sha256": p["sha256"]})  # bound to the proposal under review
        token = _signed(args, review, p)
        if args.print:
            emit(args, {"run_id": str(run_id), "signature": token}, token)
            return 0
        form = {
            "reviewer": review.reviewer,
            "reason": review.reason,
            "drop": format_pairs(review.drop),
            "force": format_pairs(review.force),
            "close": review.close,
            "part": review.part or "",
            "signature": token,
        }
        resume(api, run_id, form)
        outcome = _watch(api, run_id, fr.state.pause_key if fr.state else None, args.wait)
    payload = {"ok": True, "run_id": str(run_id), **review.model_dump(mode="json"), "signed": True, "state": outcome}
    emit(args, payload, f"{args.who} reviewed the Φ proposal of run {run_id} ({outcome})")
    for w in p.get("warnings", []):
        print(f"sdgov: {w}", file=sys.stderr)
    return 0


def _watch(api: PrefectApi, run_id: Any, pause_key: str | None, wait: float) -> str:
    """What the flow made of the review, watched for up to ``wait`` seconds: a refusal is one error line."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(0.5)
        fr = api.flow_run(run_id)
        st = fr.state
        if st is None:
            continue
        if st.is_paused() and st.pause_key != pause_key:
            nxt = pending(api, fr) or {}
            if nxt.get("note"):  # the flow refused the review and paused again
                raise SdgovError(f"the flow refused the review: {nxt['note']}", str(run_id), "see 'sdgov runs'")
            return f"accepted; now paused for the {nxt.get('subject', '?')}"
        if st.is_final():
            return f"accepted; run ended {st.name}" + (f": {st.message}" if st.message else "")
    return "resumed"


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``review``."""
    add = functools.partial(command, subparsers, parents)
    r = add(
        "review",
        cmd_review,
        "review a Φ proposal on a paused run: drop or force pairs, say why, sign, resume",
        [parents.root],
    )
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
