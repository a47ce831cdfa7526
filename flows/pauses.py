"""A governed run's pauses, answered from outside the flow: list them, sign a decision, approve, review a Φ proposal.

The use cases of ``sdgov runs`` (:func:`runs_overview`), ``sdgov sign`` (:func:`sign_decision`), ``sdgov approve``
(:func:`approve_decision`) and ``sdgov review`` (:func:`review_phi`). A paused run waits in the process that runs it
(:mod:`sdgov.flows.governed`, :mod:`sdgov.flows.phi_review`); these reach it through the Prefect server's REST API
(:mod:`sdgov.flows.plumbing.prefect_api`). Prefect is transport: what a pause awaits is read from the registry's own
record of it (:func:`verified_pending`), a statement is signed and checked here exactly as the flow will check it —
a decision the flow would refuse is never sent — and a decision counts as taken only once the run's process logged
it in the registry.

Nothing heavy is imported at module level (no Prefect, no numerical stack): a person typing ``sdgov sign`` should
wait well under a second.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from sdgov.base.errors import SdgovError

if TYPE_CHECKING:
    from sdgov.flows.plumbing.prefect_api import FlowRun, PrefectApi, RunState
    from sdgov.governance.site import Site
    from sdgov.measurement.selection.review import EdgeReview
    from sdgov.registry.log import Registry

TAKEN_WAIT_S = 60.0
"""How long ``sdgov approve`` waits for the run's process to log the decision it sent (the flow looks for one every
``poll_interval_s``): the server accepting a resume says nothing about whether anyone will act on it."""

FAILED_RUN = "accepted; run ended Failed"
"""How ``sdgov approve --wait`` words a run that ended in Prefect's Failed state after the decision (a crash, or a
pause that timed out): the command exits 1."""

# ------------------------------------------------------------------------------------------------ the server


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


# ------------------------------------------------------------------------------------------------ sdgov runs


def runs_overview(root: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """``sdgov runs``: the paused runs and whom each awaits (:func:`paused_runs`), the runs the pinned registry logged
    as finished (:func:`finished_runs_of`) and what it logged as tampered with on the server (:func:`tampered_runs`)."""
    return {"paused": paused_runs(root), "finished": finished_runs_of(root), "tampered": tampered_runs(root)}


def paused_runs(root: str | None = None) -> list[dict[str, Any]]:
    """Every paused run on the configured server (one line without ``PREFECT_API_URL``) with its pending decision as
    the registry recorded it (:func:`verified_pending`): the subject and its hash, the role awaited and who is
    eligible, the proposer, the deadline and the UI link. A run whose copy on the server was rewritten says which
    fields; one the registry has no record of is shown as unverified, without its summary."""
    from sdgov.flows.plumbing.prefect_api import PrefectApi, require_server, ui_link

    settings = require_server()
    out = []
    with PrefectApi(settings) as api:
        for fr in api.paused_runs():
            posted = pending(api, fr) or {}
            rewritten: list[str] = []
            try:
                p, rewritten, _ = verified_pending(fr, posted, root)
                unverified = ""
            except SdgovError as exc:
                p, unverified = {"registry": posted.get("registry", "")}, exc.what
            out.append(
                {
                    "run_id": str(fr.id),
                    "name": fr.name,
                    "paused_since": str(fr.state.timestamp) if fr.state else "",
                    "subject": p.get("subject", "?"),
                    "sha256": p.get("sha256", ""),
                    "awaiting_role": p.get("required_role", "?"),
                    "eligible": p.get("eligible", []),
                    "proposer": p.get("proposer", ""),
                    "attempt": p.get("attempt"),
                    "note": p.get("note", ""),
                    "deadline": p.get("deadline", ""),
                    "registry": p.get("registry", ""),
                    "summary": p.get("summary") or {},
                    "ui": ui_link(fr.id, settings),
                    "verified": not unverified,
                    "unverified": unverified,
                    "rewritten": rewritten,
                }
            )
    return out


def tampered_runs(root: str | None) -> list[dict[str, str]]:
    """What the pinned registry (``--root`` or ``$SDGOV_REGISTRY``) logged as changed by someone else on the Prefect
    server (``run_tampered``: a rewritten pause input, patched parameters, a forced state), newest last; none when
    no registry is pinned or it is not there."""
    from sdgov.governance.site import Site

    pinned = pinned_root(root)
    if not pinned or not (Path(pinned) / "log.jsonl").is_file():
        return []
    return [
        {"flow_run_id": e.artifacts.get("flow_run_id", ""), "time": e.time, "what": e.comment}
        for e in Site.resolve(pinned).registry.verified_events()
        if e.event == "run_tampered"
    ]


def finished_runs_of(root: str | None) -> list[dict[str, str]]:
    """The runs the pinned registry (``--root`` or ``$SDGOV_REGISTRY``) logged as ended, with their outcome (from
    its verified log: Prefect's states are transport, the registry's record is the evidence); none when no registry
    is pinned or it is not there."""
    from sdgov.registry.log import Registry
    from sdgov.registry.trail import finished_runs

    pinned = pinned_root(root)
    if not pinned or not (Path(pinned) / "log.jsonl").is_file():
        return []
    return finished_runs(Registry(pinned).verified_events())


# ------------------------------------------------------------------------------------------------ sign / approve


@dataclass(frozen=True)
class DecisionAsked:
    """A person's decision on one paused run, as they ask for it: the run, who decides with which key, approve or
    reject, and the registry they pinned (``--root``; else ``$SDGOV_REGISTRY``, else the one the run names)."""

    run_id: str
    who: str
    key: str
    reject: bool
    root: str | None

    @property
    def decision(self) -> str:
        """``approve`` or ``reject``."""
        return "reject" if self.reject else "approve"


@dataclass(frozen=True)
class SignedDecision:
    """A decision signed for one pause: the run, what its pause awaits (the registry's record, with ``warnings``),
    ``approve`` or ``reject``, and the signed statement."""

    run_id: UUID
    run: FlowRun
    pending: dict[str, Any]
    decision: str
    signature: str


def sign_decision(site: Site, asked: DecisionAsked) -> SignedDecision:
    """``sdgov sign``: the decision on the run's pause, signed with the person's key after the checks the flow will
    make (a decision the flow would refuse — unknown name, wrong role, own proposal, wrong key — is logged and
    refused here); a missing or unreadable key is one line before the server is contacted."""
    from sdgov.flows.plumbing.prefect_api import PrefectApi, require_server
    from sdgov.identity.keys import load_private_key

    load_private_key(asked.key)
    settings = require_server()
    with PrefectApi(settings) as api:
        rid, fr, p = paused_decision(api, asked.run_id, asked.root)
        return SignedDecision(rid, fr, p, asked.decision, _signed_statement(site, asked, p))


def _signed_statement(site: Site, asked: DecisionAsked, p: dict[str, Any]) -> str:
    """Sign (registry id, run, nonce, subject, hash, decision, name, time), after the checks the flow will make."""
    from sdgov.base.clock import utcnow
    from sdgov.governance.approvers import REQUIRED_ROLE, ApprovalRefused, Challenge, check_decision
    from sdgov.governance.controller import controller_approvers
    from sdgov.governance.decisions import record_cli_refused
    from sdgov.identity.statements import SignOffStatement, encode_statement

    if p["subject"] not in REQUIRED_ROLE:
        raise SdgovError(
            f"run {p['run_id']} awaits a {p['subject']}, not a decision",
            asked.run_id,
            "review a Φ proposal with 'sdgov review RUN_ID --drop A,B --force C,D --why TEXT --as NAME --key KEY'",
        )
    challenge = Challenge(**{k: p[k] for k in ("registry_id", "run_id", "nonce", "subject", "sha256")})
    decision, who = asked.decision, asked.who
    stmt = SignOffStatement(**challenge.model_dump(), decision=decision, approver=who, time=utcnow())
    token = encode_statement(stmt, asked.key)
    # the same check the flow makes after resuming: refused here (and logged), the run is never resumed
    registry = site.at(pinned_root(asked.root) or p["registry"]).registry  # whose record was signed
    try:
        check_decision(
            controller_approvers(registry),
            name=who,
            decision=decision,
            proposer=p["proposer"],
            challenge=challenge,
            signature=token,
        )
    except ApprovalRefused as exc:
        record_cli_refused(registry, challenge, who, decision, exc, token)
        raise
    return token


def approve_decision(
    site: Site, asked: DecisionAsked, comment: str, wait: float, confirm: Callable[[dict[str, Any]], str]
) -> dict[str, Any]:
    """``sdgov approve``: sign the decision (:func:`sign_decision`), resume the run with it and return once the run's
    process logged it in the registry; an approval first takes ``confirm(pending)``, the hash's first 8 characters
    typed back. A refused decision, a run the registry logged as ended, a decision no process logged within ``wait``
    seconds (default :data:`TAKEN_WAIT_S`), or (``wait``) the flow asking again is one line; with ``wait``, what the
    run then did is watched for that long (``ok`` false: it ended Failed)."""
    from sdgov.flows.plumbing.prefect_api import PrefectApi
    from sdgov.registry.log import Registry

    signed = sign_decision(site, asked)
    rid, fr, p, decision, who = signed.run_id, signed.run, signed.pending, signed.decision, asked.who
    registry = Registry(pinned_root(asked.root) or p["registry"])  # the registry whose record of the pause was shown
    not_ended(registry, str(rid))
    confirmed = confirm(p) if decision == "approve" else ""
    run_input = {"approver": who, "decision": decision, "comment": comment or "", "signature": signed.signature}
    if p["subject"] == "release":
        run_input["confirm_hash"] = confirmed  # the release form's field (required, checked by the flow)
    with PrefectApi() as api:
        resume(api, rid, run_input)
        event = decision_taken(registry, str(rid), p["nonce"], wait or TAKEN_WAIT_S)
        outcome = f"taken by the run: {event.event}, event {event.seq} of the registry's log"
        asked_key = fr.state.pause_key if fr.state else None
        for now, st in _watched(api, rid, wait):  # optionally watch what the flow made of the decision
            if st.is_paused() and st.pause_key != asked_key:
                nxt = pending(api, now) or {}
                if nxt.get("subject") == p["subject"]:  # the same decision asked again: the flow refused it
                    raise SdgovError(
                        f"the flow refused the decision: {nxt.get('note', '')}", str(rid), "see 'sdgov runs'"
                    )
                outcome = f"accepted; now paused for the {nxt.get('subject', '?')} decision"
                break
            if st.is_final():
                name = "Failed" if st.type in ("FAILED", "CRASHED") else st.name
                outcome = f"accepted; run ended {name}" + (f": {st.message}" if st.message else "")
                break
            if st.is_running():
                outcome = "accepted; the run goes on"
    return {
        "ok": not outcome.startswith(FAILED_RUN),  # the run ended Failed after the decision: not a success
        "run_id": str(rid),
        "subject": p["subject"],
        "sha256": p["sha256"],
        "approver": who,
        "decision": decision,
        "signed": True,
        "state": outcome,
    }


def _watched(api: PrefectApi, run_id: UUID, wait: float) -> Iterator[tuple[FlowRun, RunState]]:
    """The run and its state every half second, for up to ``wait`` seconds after a resume (a poll the server answers
    without a state is skipped): the caller stops once it has seen what the flow made of what it sent."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(0.5)
        fr = api.flow_run(run_id)
        if fr.state is not None:
            yield fr, fr.state


def not_ended(registry: Registry, flow_run_id: str) -> None:
    """Refuse (one line) to decide on a run the registry logged as ended (``run_ended``): nobody executes it."""
    from sdgov.governance.decisions import run_ended

    ended = run_ended(registry.events(), flow_run_id)
    if ended is not None:
        raise SdgovError(
            f"the registry logged this run as ended (event {ended.seq}: {ended.comment}): nobody executes it",
            flow_run_id,
            "nothing to decide; the analyst proposes again",
        )


def decision_taken(registry: Registry, flow_run_id: str, nonce: str, wait_s: float) -> Any:
    """The registry's record of the decision sent to the pause with ``nonce``, once the run's process logged it (the
    flow logs every decision it takes, accepted or refused, with the pause's nonce); a refusal, or nothing logged
    within ``wait_s`` (no process is executing the run), is one line."""
    deadline = time.monotonic() + wait_s
    while True:
        event = next((e for e in registry.events() if e.artifacts.get("nonce") == nonce), None)
        if event is not None and event.event == "approval_refused":
            raise SdgovError(f"the run refused the decision: {event.comment}", flow_run_id, "see 'sdgov runs'")
        if event is not None:
            return event
        not_ended(registry, flow_run_id)
        if time.monotonic() > deadline:
            raise SdgovError(
                f"the server resumed the run, but no process took the decision within {wait_s:.0f} s: nobody may be "
                "executing this run (was the controller's worker stopped?)",
                flow_run_id,
                "ask the controller; once a worker restarts it ends the run and logs it ('sdgov trail')",
            )
        time.sleep(0.5)


# ------------------------------------------------------------------------------------------------ sdgov review


@dataclass(frozen=True)
class ReviewSent:
    """A Φ review signed for one pause: the run, the review (bound to the proposal's hash), the signed statement,
    what the flow made of it (``None``: only signed, not sent) and the warnings to show."""

    run_id: UUID
    review: EdgeReview
    signature: str
    state: str | None
    warnings: list[str]


def review_phi(
    site: Site, run_id: str, review: EdgeReview, key: str, *, root: str | None, send: bool, wait: float
) -> ReviewSent:
    """``sdgov review``: sign the Φ review for the run's pause, check it as the flow will, and (``send``) resume the run
    with it, then watch the run for up to ``wait`` seconds; a review the check or the flow refuses is an
    ``SdgovError``. The caller has loaded ``key`` (``sdgov review`` does, before it reads the review's flags)."""
    from sdgov.flows.plumbing.prefect_api import PrefectApi, require_server
    from sdgov.measurement.selection.review import format_pairs

    settings = require_server()
    with PrefectApi(settings) as api:
        rid, fr, p = paused_decision(api, run_id, root)
        review = review.model_copy(update={"proposal_sha256": p["sha256"]})  # bound to the proposal under review
        token = _signed_review(site, run_id, key, review, p)
        if not send:
            return ReviewSent(rid, review, token, None, p.get("warnings", []))
        form = {
            "reviewer": review.reviewer,
            "reason": review.reason,
            "drop": format_pairs(review.drop),
            "force": format_pairs(review.force),
            "close": review.close,
            "part": review.part or "",
            "signature": token,
        }
        resume(api, rid, form)
        outcome = _watch_review(api, rid, fr.state.pause_key if fr.state else None, wait)
    return ReviewSent(rid, review, token, outcome, p.get("warnings", []))


def _signed_review(site: Site, run_id: str, key: str, review: EdgeReview, p: dict[str, Any]) -> str:
    """The statement over this review for this pause, after the check the flow will make."""
    from sdgov.base.clock import utcnow
    from sdgov.governance.approvers import Challenge
    from sdgov.governance.controller import controller_approvers
    from sdgov.identity.statements import SignOffStatement, encode_statement
    from sdgov.measurement.selection.review import DECISION, SUBJECT, check_reviewer, review_sha256

    if p["subject"] != SUBJECT:
        raise SdgovError(
            f"run {p['run_id']} awaits a decision on the {p['subject']}, not a Φ review",
            run_id,
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
        SignOffStatement(**challenge.model_dump(), decision=DECISION, approver=review.reviewer, time=utcnow()), key
    )
    check_reviewer(controller_approvers(site.at(p["registry"]).registry), review, challenge, token)
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


def _watch_review(api: PrefectApi, run_id: UUID, pause_key: str | None, wait: float) -> str:
    """What the flow made of the review, watched for up to ``wait`` seconds: a refusal is one error line."""
    for fr, st in _watched(api, run_id, wait):
        if st.is_paused() and st.pause_key != pause_key:
            nxt = pending(api, fr) or {}
            if nxt.get("note"):  # the flow refused the review and paused again
                raise SdgovError(f"the flow refused the review: {nxt['note']}", str(run_id), "see 'sdgov runs'")
            return f"accepted; now paused for the {nxt.get('subject', '?')}"
        if st.is_final():
            return f"accepted; run ended {st.name}" + (f": {st.message}" if st.message else "")
    return "resumed"
