"""``sdgov propose``: an analyst proposes Φ — a governed release, a private selection, or a submission to the
controller's worker. Each mode is one use case of :mod:`sdgov.flows.proposals`.

    sdgov propose --spec FILE --as ANALYST [--key KEY] [--root DIR] [--timeout S]   runs and pauses for the controller
    sdgov propose --select mst --spec DRAFT --as ANALYST [--out FILE]   private selection of Φ: a proposed spec
    sdgov propose --select mst --spec DRAFT --as ANALYST --review       the same, paused for the stakeholders' review
    sdgov propose --submit [WORKER] --spec FILE --as ANALYST --key KEY  a run of the controller's worker
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sdgov.base.errors import SdgovError
from sdgov.commands._common import Parents, command, emit, site_of
from sdgov.flows.proposals import DEFAULT_POLL_S, DEFAULT_TIMEOUT_S

if TYPE_CHECKING:
    from sdgov.flows.governed import GovernedOutcome


def cmd_propose(args: argparse.Namespace) -> int:
    """Run a governed release that pauses for the controller's decisions (``--select``: write a Φ proposal instead;
    with ``--review``: the Φ review first; ``--submit``: a run of the controller's worker): exit 0 released or
    proposed, 1 no release. A run needs ``PREFECT_API_URL``; a refusal, or a run that failed (a decision that never
    came), is one line, exit 2."""
    from sdgov.flows import proposals

    if args.review and not args.select:
        raise SdgovError("--review reviews a private selection", "--review", "add --select mst")
    if args.select and args.review:
        return _outcome(
            args,
            proposals.propose_reviewed(
                site_of(args), args.spec, args.who, args.key, args.data, args.out, args.timeout, args.poll
            ),
        )
    if args.select:
        return _selection(args)
    if args.submit:
        return _submitted(args)
    out = proposals.propose_release(site_of(args), args.spec, args.who, args.key, args.data, args.timeout, args.poll)
    return _outcome(args, out)


def _outcome(args: argparse.Namespace, out: GovernedOutcome) -> int:
    """A governed or reviewed run's outcome: its JSON, or its message and the card; exit 0 only when released."""
    card = f"\n  card: {out.release.card_html}" if out.release else ""
    emit(args, out.model_dump(mode="json"), out.message + card)
    return 0 if out.status == "released" else 1


def _submitted(args: argparse.Namespace) -> int:
    """``propose --submit``: exit 0 once the worker's run is created (follow it with ``sdgov runs``)."""
    from sdgov.flows.proposals import submit_proposal

    payload = submit_proposal(args.spec, args.who, args.key, args.submit, args.timeout, args.poll)
    emit(
        args,
        payload,
        f"submitted run {payload['flow_run_id']} of {payload['deployment']}: agreement "
        f"{payload['agreement_sha256']}, signed by {args.who} for registry {payload['registry_id']}\n"
        "  follow it with 'sdgov runs'; the controller decides in the Prefect UI or with 'sdgov approve'",
    )
    return 0


def _selection(args: argparse.Namespace) -> int:
    """``propose --select mst|aim``: the proposals, where they were written, and the proposed spec's agreement hash
    (``--json``: ``agreement_sha256``)."""
    from sdgov.flows.proposals import propose_phi_selection

    sel = propose_phi_selection(site_of(args), args.spec, args.out, args.who, args.key, args.data, args.select)
    lines = []
    for part, proposal in sel.proposals.items():
        of = "" if part is None else f" of split part {part!r}"
        how = sel.summary["how"]
        lines += [f"Φ proposal{of} ({proposal.method}, ρ {proposal.budget.rho:.6g} for selection, {how}):"]
        lines += [f"  {e.how:8} {' × '.join(e.pair)}  score≈{_score(e.noisy_score)}" for e in proposal.selected]
        lines += [f"  near     {' × '.join(c.pair)}  score≈{_score(c.noisy_score)}" for c in proposal.near_threshold]
    lines += [f"  proposal: {sel.proposal_file}", f"  proposed spec: {sel.proposed_spec}"]
    lines += [f"  proposed agreement: {sel.agreement_sha256}"]
    payload = {**sel.summary, "proposed_spec": str(sel.proposed_spec), "agreement_sha256": sel.agreement_sha256}
    emit(args, {**payload, "run_id": sel.run_id}, "\n".join(lines))
    return 0


def _score(s: float | None) -> str:
    return "–" if s is None else f"{s:,.0f}"


HELP = "run a governed release: propose Φ, then pause for the controller's decisions"


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``propose``."""
    p = command(subparsers, parents, "propose", cmd_propose, HELP, [parents.spec, parents.data, parents.root])
    p.add_argument("--as", dest="who", required=True, help="the proposing analyst (in the approvers registry)")
    p.add_argument("--key", help="your Ed25519 private key: signs the proposal (a governed registry requires it)")
    p.add_argument(
        "--submit",
        metavar="WORKER",
        nargs="?",
        const="controller",
        help="submit the signed proposal to the controller's worker (its deployment name, default 'controller') "
        "instead of running the release in this process",
    )
    p.add_argument(
        "--timeout",
        type=int,
        help=f"seconds to wait for the decisions (default {DEFAULT_TIMEOUT_S}; with --submit the worker decides)",
    )
    p.add_argument("--poll", type=int, help=f"seconds between checks for a decision (default {DEFAULT_POLL_S})")
    p.add_argument(
        "--select",
        choices=["mst", "aim"],
        help="private selection (the draft's privacy.selection.method): spend its share, write a Φ proposal and a "
        "proposed spec",
    )
    p.add_argument("--out", help="with --select: where to write the proposed spec (default DRAFT.proposed.yaml)")
    p.add_argument(
        "--review",
        action="store_true",
        help="with --select: pause for the stakeholders' review (sdgov review), then the governed agreement",
    )
