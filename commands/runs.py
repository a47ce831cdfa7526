"""``sdgov runs``: the paused runs and whom each awaits, as the registry recorded each pause, the runs the registry
logged as finished, and what it logged as tampered with on the server (:func:`sdgov.flows.pauses.runs_overview`)."""

from __future__ import annotations

import argparse
from typing import Any

from sdgov.commands._common import Parents, command, emit


def cmd_runs(args: argparse.Namespace) -> int:
    """Print the paused runs and whom each awaits (``no paused runs`` when there is none), the runs the pinned
    registry logged as finished and their outcome, then what it logged as tampered with on the server; exit 0."""
    from sdgov.flows.pauses import runs_overview

    overview = runs_overview(args.root)
    lines = [_paused_line(r) for r in overview["paused"]] or ["no paused runs"]
    lines += [
        f"finished {f['time']}  run {f['run_id']}: {f['outcome']}"
        + (f" {f['release_id']}" if f["release_id"] else "")
        + (f" by {f['who']}" if f["who"] and f["event"] != "run_failed" else "")
        + (f" — {f['comment']}" if f["event"] in ("run_failed", "run_refused", "release_blocked") else "")
        for f in overview["finished"]
    ]
    lines += [f"TAMPERED run {t['flow_run_id']} ({t['time']}): {t['what']}" for t in overview["tampered"]]
    emit(args, overview, "\n".join(lines))
    return 0


def _paused_line(r: dict[str, Any]) -> str:
    """One paused run: whom it awaits (not its proposer, but for a Φ review) and until when, the hash, the verdict,
    the draft card, a note, whether the registry's record verified or the server's copy was rewritten, the UI link."""
    return (
        f"{r['run_id']}  {r['name']}: {r['subject']} awaits a {r['awaiting_role']} "
        f"({', '.join(r['eligible']) or 'nobody eligible!'}"
        + ("" if r["subject"] == "phi_review" else f"; not {r['proposer']}")  # the analyst may review their Φ
        + f") until {r['deadline']}"
        f"\n    {r['subject']} hash: {r['sha256']}"
        + (f"\n    overall verdict: {r['summary']['verdict']}" if r["summary"].get("verdict") else "")
        + (f"\n    draft card: {r['summary']['draft_card']}" if r["summary"].get("draft_card") else "")
        + (f"\n    {r['note']}" if r["note"] else "")
        + (f"\n    NOT VERIFIED (do not sign): {r['unverified']}" if r["unverified"] else "")
        + (
            f"\n    WARNING: its input on the Prefect server was rewritten ({', '.join(r['rewritten'])}); shown: the "
            "registry's record"
            if r["rewritten"]
            else ""
        )
        + (f"\n    {r['ui']}" if r["ui"] else "")
    )


HELP = (
    "list paused runs and whom they await (as the registry recorded each pause), and the runs the registry logged "
    "as finished, with their outcome"
)


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``runs``."""
    command(subparsers, parents, "runs", cmd_runs, HELP, [parents.root])
