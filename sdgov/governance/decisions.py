"""Human decisions taken while a flow run waits: whether a submitted one counts, and what the log records of it.

A flow (:mod:`sdgov.flows.governed`, :mod:`sdgov.flows.phi_review`) pauses, shows a form and polls; everything
else about a decision is here and needs no orchestrator. Each pause is one :class:`Pause` — the registry, the
run, the subject and its hash, and a fresh nonce — and a decision submitted to it is checked against the rules:

- the nonce of the pause was never used before in the registry log (a resume replayed from another pause, or sent
  twice, is refused);
- a release approval carries the first :data:`CONFIRM_CHARS` characters of the candidate hash typed back;
- the approver is an eligible controller (never the proposer), and the signed statement is for this registry,
  run, nonce, subject, hash and decision, verified with their registered key
  (:func:`sdgov.governance.approvers.check_decision`; unsigned counts only under the sandbox switch).

A refused decision is logged as ``approval_refused`` and the flow pauses again with :attr:`Refused.note` in the
form; an accepted one becomes a :class:`SignOff` (its ``via`` says how the identity was established) and is
logged as ``agreement_approved`` / ``release_approved`` / ``budget_retry_approved`` or ``<subject>_rejected``; no
decision in time is ``approval_timeout``. The stakeholders' reviews of Φ are recorded here too
(``phi_reviewed`` / ``phi_review_refused``); their acceptance rules live beside the review itself
(:func:`sdgov.measurement.selection.review.decide_review`).
"""

from __future__ import annotations

import contextlib
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from sdgov.base.clock import utcnow
from sdgov.base.errors import SdgovError
from sdgov.base.hashing import sha256_file, write_json
from sdgov.base.model import Frozen
from sdgov.governance.approvers import ApprovalRefused, Approver, Challenge, check_decision, statement_problem
from sdgov.governance.controller import controller_approvers, load_config
from sdgov.governance.signoff import SignOff
from sdgov.identity.names import same_person
from sdgov.registry.access import share
from sdgov.registry.log import Event, Registry

__all__ = [
    "APPROVED_EVENT",
    "CONFIRM_CHARS",
    "Pause",
    "Refused",
    "Submitted",
    "accept_decision",
    "check_confirmation",
    "check_nonce_unused",
    "check_shown_files",
    "decide",
    "eligible",
    "PENDING_EVENT",
    "SHOWN_FILES",
    "pending_record",
    "record_decision",
    "record_pending",
    "record_tampered",
    "rewritten_fields",
    "shown_files",
    "record_cli_refused",
    "record_refused",
    "record_run_ended",
    "record_run_refused",
    "run_ended",
    "record_review",
    "record_review_refused",
    "record_timeout",
    "refusal_note",
    "rejection_message",
    "signoff",
    "timeout_message",
    "via",
]

CONFIRM_CHARS = 8
APPROVED_EVENT = {"agreement": "agreement_approved", "release": "release_approved", "budget": "budget_retry_approved"}
DecisionSubject = Literal["agreement", "release", "budget"]


@dataclass(frozen=True)
class Pause:
    """One pause of a flow run awaiting a human: what a decision submitted to it must be bound to.

    ``run_id`` is the sdgov run the log's events name; ``flow_run_id`` the orchestrator's run the signed statement
    names; ``sha256`` the hash of the subject under decision (for a review of Φ, the draft under review)."""

    registry: Registry
    registry_id: str
    flow_run_id: str
    run_id: str
    agreement_sha256: str
    subject: str
    sha256: str
    attempt: int
    nonce: str

    @classmethod
    def new(
        cls,
        registry: Registry,
        *,
        registry_id: str,
        flow_run_id: str,
        run_id: str,
        agreement_sha256: str,
        subject: str,
        sha256: str,
        attempt: int,
    ) -> Pause:
        """A pause with a fresh nonce (kept by the flow: a copy in the form only tells ``sdgov sign`` what to sign)."""
        return cls(
            registry=registry,
            registry_id=registry_id,
            flow_run_id=flow_run_id,
            run_id=run_id,
            agreement_sha256=agreement_sha256,
            subject=subject,
            sha256=sha256,
            attempt=attempt,
            nonce=secrets.token_hex(16),
        )

    def challenge(self, subject: str | None = None, sha256: str | None = None) -> Challenge:
        """What a statement must be signed over; a review signs its own hash under the review's subject."""
        return Challenge(
            registry_id=self.registry_id,
            run_id=self.flow_run_id,
            nonce=self.nonce,
            subject=subject or self.subject,
            sha256=sha256 or self.sha256,
        )


class Submitted(Frozen):
    """A decision as the form (or ``sdgov approve``) submitted it; ``confirm_hash`` only on the release form."""

    approver: str
    decision: Literal["approve", "reject"]
    comment: str = ""
    signature: str = ""
    confirm_hash: str = ""


@dataclass(frozen=True)
class Refused:
    """A submitted decision or review that did not count (already logged): the error and the form's next note."""

    error: SdgovError
    note: str


def eligible(registry: Registry, exclude: str | None = None, role: str | None = "controller") -> tuple[list[str], str]:
    """Who may decide now (re-read: the controller may commit a fix while paused): the people with ``role`` (anyone
    when None) but ``exclude`` (the proposer); and, when the approvers registry cannot be used (e.g. an unsigned
    edit of approvers.yaml: nobody can decide until it is signed), nobody and the reason."""
    try:
        book = controller_approvers(registry)
    except SdgovError as exc:
        return [], exc.what
    people = book.approvers if role is None else book.with_role(role)
    return [a.name for a in people if exclude is None or not same_person(a.name, exclude)], ""


def check_nonce_unused(registry: Registry, nonce: str) -> None:
    """A pause's nonce counts once: refused when any event of the log already names it."""
    if nonce in {e.artifacts["nonce"] for e in registry.events() if e.artifacts.get("nonce")}:
        raise ApprovalRefused("the nonce of this pause was already used", "log.jsonl", "sign again")


def check_confirmation(subject: str, sha256: str, decision: str, confirm_hash: str | None) -> None:
    """A release is approved only with the first 8 characters of its candidate hash typed back (a rejection needs
    none): the approver has the hash in front of them, not just a button."""
    if subject != "release" or decision != "approve":
        return
    typed = (confirm_hash or "").strip().lower()
    if typed != sha256[:CONFIRM_CHARS]:
        raise ApprovalRefused(
            f"the confirmation {typed[:16]!r} is not the first {CONFIRM_CHARS} characters of the candidate hash",
            "confirm_hash",
            "read the hash in the form and type its first 8 characters",
        )


def accept_decision(pause: Pause, submitted: Submitted, proposer: str) -> tuple[Approver, bool]:
    """The registered controller who decided and whether their key verified it, or :class:`SdgovError` (an
    :class:`ApprovalRefused`, or controller files changed without a signed commit while paused)."""
    approvers = controller_approvers(pause.registry)  # as committed now: a change while paused must be signed
    check_nonce_unused(pause.registry, pause.nonce)
    check_confirmation(pause.subject, pause.sha256, submitted.decision, submitted.confirm_hash)
    return check_decision(
        approvers,
        name=submitted.approver,
        decision=submitted.decision,
        proposer=proposer,
        challenge=pause.challenge(),
        signature=submitted.signature,
        allow_unsigned=load_config(pause.registry).allow_unsigned_ui_approvals,
    )


def via(flow_run_id: str, name: str, verified: bool) -> str:
    """How a decision reached the run and how its author's identity was established (the sign-off's ``via``)."""
    return f"Prefect resume form / sdgov approve (flow run {flow_run_id}), " + (
        f"identity verified: Ed25519 signature with {name}'s registered key"
        if verified
        else "identity NOT verified: unsigned decision accepted under the sandbox policy "
        "allow_unsigned_ui_approvals (anyone who could reach the Prefect API could have typed this name)"
    )


def signoff(pause: Pause, submitted: Submitted, who: Approver, verified: bool) -> SignOff:
    """The card's record of an accepted decision (a budget retry is signed off as an agreement decision)."""
    return SignOff(
        name=who.name,
        role=who.role,
        subject="release" if pause.subject == "release" else "agreement",
        decision=submitted.decision,
        subject_sha256=pause.sha256,
        time=utcnow(),
        comment=submitted.comment,
        via=via(pause.flow_run_id, who.name, verified),
        identity_verified=verified,
    )


def refusal_note(pause: Pause, who: str, error: SdgovError) -> str:
    """The next form's note after a refused attempt: who was refused, why, and that the run is paused again."""
    return f"Attempt {pause.attempt} by {who!r} was refused: {error.what}. The run is paused again."


def signer(registry: Registry, name: str, decision: str, challenge: Challenge, signature: str) -> Approver | None:
    """The registered person whose key verifies ``signature`` as their statement of ``decision`` over ``challenge``
    — so a refused attempt (a wrong confirmation, a proposer deciding, a wrong role) is logged as theirs — or None
    (no signature, or one that does not hold: the typed name is unverified)."""
    if not signature.strip():
        return None
    try:
        who = controller_approvers(registry).find(name or "")
    except SdgovError:
        return None
    return who if who is not None and statement_problem(who, decision, challenge, signature) is None else None


def _refused_as(who: Approver | None, signature: str) -> tuple[str, dict[str, str]]:
    """The role a refused attempt is logged under and what says whether its identity was verified."""
    if who is None:
        return "unverified", {"identity_verified": "false"}
    return who.role, {"identity_verified": "true", "statement": signature}


def record_refused(pause: Pause, submitted: Submitted, error: SdgovError) -> Refused:
    """Log ``approval_refused`` — as the person whose valid signature it carries (their role, identity verified),
    else as the typed name, unverified — and say why in the next form."""
    who = signer(pause.registry, submitted.approver, submitted.decision, pause.challenge(), submitted.signature)
    role, identity = _refused_as(who, submitted.signature)
    pause.registry.append(
        "approval_refused",
        submitted.approver or "?",
        role,
        agreement_sha256=pause.agreement_sha256,
        run_id=pause.run_id,
        decision=submitted.decision,
        comment=f"{error.what} | comment: {submitted.comment}",
        artifacts={pause.subject: pause.sha256, "nonce": pause.nonce, "flow_run_id": pause.flow_run_id, **identity},
    )
    return Refused(error, refusal_note(pause, submitted.approver, error))


def record_cli_refused(
    registry: Registry, challenge: Challenge, who: str, decision: str, error: SdgovError, signature: str = ""
) -> None:
    """Log ``approval_refused`` for a decision that ``sdgov sign`` / ``sdgov approve`` refused before anything
    reached the run (the proposer deciding, a wrong key, a wrong role): every refusal is in the log, not only those
    the flow sees. ``refused_by`` tells it from a refused resume (the pause stays as it was: same nonce). A registry
    this machine cannot append to (no key, a broken log) leaves the refusal on the terminal only. Logged as the
    person whose key signed ``signature`` when it verifies (:func:`signer`), else unverified."""
    with contextlib.suppress(SdgovError):
        if registry.registry_id() != challenge.registry_id:
            return  # not the registry the pause names
        role, identity = _refused_as(signer(registry, who, decision, challenge, signature), signature)
        registry.append(
            "approval_refused",
            who or "?",
            role,
            decision=decision,
            comment=f"{error.what} | refused by sdgov before the run was resumed",
            artifacts={
                challenge.subject: challenge.sha256,
                "pause_nonce": challenge.nonce,  # not 'nonce': that marks a pause's nonce as used
                "flow_run_id": challenge.run_id,
                "refused_by": "sdgov approve/sign",
                **identity,
            },
        )


def record_run_refused(registry: Registry, run_id: str, error: SdgovError, config_sha256: str = "") -> None:
    """Log ``run_refused``: a run nobody watches (a scheduled one, a proposal to the controller's worker) could not
    start; ``config_sha256`` names the worker configuration that refused it. A log that cannot take the line (it
    fails verification, or its key is missing) refused the run already; that refusal is the run's state."""
    with contextlib.suppress(SdgovError):
        registry.append(
            "run_refused",
            "sdgov",
            "system",
            run_id=run_id,
            comment=error.one_line(),
            artifacts={"worker_config": config_sha256} if config_sha256 else {},
        )


RUN_ENDED = "run_ended"


def run_ended(events: list[Event], flow_run_id: str) -> Event | None:
    """The ``run_ended`` event of this flow run in ``events`` (None: not ended so)."""
    return next((e for e in events if e.event == RUN_ENDED and e.artifacts.get("flow_run_id") == flow_run_id), None)


def record_run_ended(registry: Registry, flow_run_id: str, why: str, config_sha256: str = "") -> None:
    """Log ``run_ended`` (once per flow run): a run nobody can go on with — forced out of its pause, or held by a
    worker that stopped — ended with nothing released by it. The event names the sdgov run when a pause of it is
    logged, and says whether a budget spend of that run stands (what was drawn is kept, never drawn again)."""
    with contextlib.suppress(SdgovError), registry.lock():
        events = registry.events()
        if run_ended(events, flow_run_id) is not None:
            return
        run_id = next(
            (e.run_id for e in events if e.event == PENDING_EVENT and e.artifacts.get("flow_run_id") == flow_run_id),
            f"flow-run-{flow_run_id}",
        )
        spent = [e.seq for e in events if e.event == "budget_spent" and e.run_id == run_id]
        released = any(e.event == "released" and e.run_id == run_id for e in events)
        outcome = (
            "it had been released before it ended"
            if released
            else f"nothing was released; its budget spend (event {spent[0]}) stands"
            if spent
            else "nothing was drawn, spent or released for it"
        )
        registry.append_locked(
            RUN_ENDED,
            "sdgov",
            "system",
            run_id=run_id,
            comment=f"{why}: {outcome}",
            artifacts={"flow_run_id": flow_run_id, **({"worker_config": config_sha256} if config_sha256 else {})},
        )


PENDING_EVENT = "decision_pending"


def record_pending(pause: Pause, key: str, pending: dict[str, Any]) -> str:
    """Write what pause ``key`` awaits into the registry (``runs/<run>/pauses/<key>.json``) and log its sha256
    (``decision_pending``): ``sdgov runs``, ``sign`` and ``approve`` show this record, checked against the signed
    log, never the copy the flow posts to Prefect (anyone with the server's login can rewrite that one)."""
    path = pause.registry.run_dir(pause.run_id) / "pauses" / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    sha = write_json(path, pending)
    share(path)  # approvers read it from their own accounts; the rest of the run stays the controller's
    pause.registry.append(
        PENDING_EVENT,
        "sdgov",
        "system",
        agreement_sha256=pause.agreement_sha256,
        run_id=pause.run_id,
        artifacts={
            "pause": key,
            "flow_run_id": pause.flow_run_id,
            "record": sha,
            "pause_nonce": pause.nonce,  # not 'nonce': that marks a pause's nonce as used
        },
    )
    return sha


def pending_record(registry: Registry, flow_run_id: str, key: str) -> dict[str, Any]:
    """The registry's record of pause ``key`` of ``flow_run_id``: the file the last ``decision_pending`` event of the
    verified log names, with the sha256 it logged — or a one-line :class:`SdgovError` (no such pause here, or its
    file changed since)."""
    events = [
        e
        for e in registry.verified_events()
        if e.event == PENDING_EVENT and e.artifacts.get("flow_run_id") == flow_run_id and e.artifacts["pause"] == key
    ]
    if not events:
        raise SdgovError(
            f"registry {registry.root} has no record of pause {key!r} of run {flow_run_id}",
            str(registry.root),
            "pass the registry the run belongs to with --root; do not sign what only Prefect shows",
        )
    path = registry.run_dir(events[-1].run_id) / "pauses" / f"{key}.json"
    if not path.is_file() or sha256_file(path) != events[-1].artifacts["record"]:
        raise SdgovError(
            f"the registry's record of pause {key!r} differs from the hash its log signed",
            str(path),
            "do not sign; run 'sdgov registry verify' and report it to the controller",
        )
    record = cast(dict[str, Any], json.loads(path.read_text()))
    check_shown_files(registry, record)
    return record


SHOWN_FILES = "files"
"""The pause record's summary field listing every file the approver is shown (the draft card in each format, the
evidence report), by path under the registry root, with its sha256 when the flow paused."""


def shown_files(registry: Registry, paths: list[str]) -> dict[str, str]:
    """Each of ``paths`` (files the approver will be shown) → its sha256, keyed by its path under the registry."""
    out, root = {}, registry.root.resolve()
    for p in filter(None, paths):
        path = Path(p).resolve()
        key = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        out[key] = sha256_file(path)
    return out


def check_shown_files(registry: Registry, record: dict[str, Any]) -> None:
    """Refuse (one line) a pause whose shown files changed since the flow logged their hashes with the pause: an
    approver must never sign what the flow did not show (a draft card rewritten in the registry, say).

    A file this account may not read (the evidence report is the controller's alone, ``docs/security.md``) is
    skipped here; the flow, which can, checks every file again when the decision arrives (``flows/governed.py``)."""
    listed = (record.get("summary") or {}).get(SHOWN_FILES) or {}
    for name, sha in listed.items():
        path = Path(name) if Path(name).is_absolute() else registry.root / name
        try:
            now = sha256_file(path) if path.is_file() else None
        except PermissionError:
            continue
        if now != sha:
            raise SdgovError(
                f"{path.name} was changed after the flow showed it (its sha256 is logged with the pause)",
                str(path),
                "do not sign; run 'sdgov registry verify' and report it to the controller",
            )


def rewritten_fields(posted: dict[str, Any], record: dict[str, Any]) -> list[str]:
    """The fields in which what Prefect holds for a pause (``posted``) differs from the registry's record."""
    keys = (set(posted) | set(record)) - {"record_sha256"}  # the copy on the server also names the record's hash
    return sorted(k for k in keys if posted.get(k) != record.get(k))


def record_tampered(registry: Registry, run_id: str, flow_run_id: str, what: str) -> None:
    """Log ``run_tampered``: the run's record on the Prefect server was changed by someone other than the flow (a
    rewritten pause input, patched parameters, a forced state). Prefect is transport: the release goes on from
    the registry's own records, and the log keeps the fact."""
    with contextlib.suppress(SdgovError):
        registry.append(
            "run_tampered", "sdgov", "system", run_id=run_id, comment=what, artifacts={"flow_run_id": flow_run_id}
        )


def record_decision(pause: Pause, submitted: Submitted, who: Approver, verified: bool) -> None:
    """Log an accepted decision: ``<subject>_approved`` (``budget_retry_approved``) or ``<subject>_rejected``, with
    the nonce, the flow run and, when verified, the signed statement."""
    pause.registry.append(
        APPROVED_EVENT[pause.subject] if submitted.decision == "approve" else f"{pause.subject}_rejected",
        who.name,
        who.role,
        agreement_sha256=pause.agreement_sha256,
        run_id=pause.run_id,
        decision=submitted.decision,
        comment=submitted.comment,
        artifacts={
            pause.subject: pause.sha256,
            "nonce": pause.nonce,
            "flow_run_id": pause.flow_run_id,
            "identity_verified": str(verified).lower(),
            **({"statement": submitted.signature} if verified else {}),
        },
    )


def decide(pause: Pause, submitted: Submitted, proposer: str) -> SignOff | Refused:
    """Apply the rules to a submitted decision and log the outcome: the sign-off when it counts (an approval or a
    rejection), else :class:`Refused` — the flow then pauses again with its note."""
    try:
        who, verified = accept_decision(pause, submitted, proposer)
    except SdgovError as exc:
        return record_refused(pause, submitted, exc)
    record_decision(pause, submitted, who, verified)
    return signoff(pause, submitted, who, verified)


def decided_message(s: SignOff, subject: str, sha256: str) -> str:
    """The run log's line for a decision that counted: 'Carl Controller approved the release 3f5c…'."""
    return f"{s.name} {'approved' if s.decision == 'approve' else 'rejected'} the {subject} {sha256[:12]}…"


def rejection_message(pause: Pause, s: SignOff) -> str:
    """The run log's line for a rejection: who rejected which subject, that nothing was released, and their comment."""
    msg = f"{s.name} ({s.role}) rejected the {pause.subject} {pause.sha256[:12]}…: nothing was released"
    return msg + (f" — {s.comment}" if s.comment else "")


def timeout_message(subject: str, sha256: str) -> str:
    """The run log's line for a pause nobody decided on in time: the run ends and nothing was released."""
    return f"no decision on the {subject} {sha256[:12]}… within the timeout: the run ends here and nothing was released"


def record_timeout(pause: Pause, comment: str) -> None:
    """Log ``approval_timeout``: nobody decided on the pause's subject in time."""
    pause.registry.append(
        "approval_timeout",
        "sdgov",
        "system",
        agreement_sha256=pause.agreement_sha256,
        run_id=pause.run_id,
        decision="timeout",
        comment=comment,
        artifacts={pause.subject: pause.sha256},
    )


def record_review_refused(pause: Pause, reviewer: str, error: SdgovError, details: str) -> Refused:
    """Log ``phi_review_refused`` (as the typed name, unverified); ``details`` is what the form asked for."""
    pause.registry.append(
        "phi_review_refused",
        reviewer or "?",
        "unverified",
        agreement_sha256=pause.agreement_sha256,
        run_id=pause.run_id,
        decision="review",
        comment=f"{error.what} | {details}",
        artifacts={"nonce": pause.nonce, "flow_run_id": pause.flow_run_id},
    )
    return Refused(error, refusal_note(pause, reviewer, error))


def record_review(
    pause: Pause,
    who: Approver,
    verified: bool,
    *,
    review_sha256: str,
    close: bool,
    comment: str,
    drop: str,
    force: str,
    signature: str,
) -> None:
    """Log ``phi_reviewed``: a review that counted, with its hash, its pairs as the form wrote them, and, when
    verified, the signed statement."""
    pause.registry.append(
        "phi_reviewed",
        who.name,
        who.role,
        agreement_sha256=pause.agreement_sha256,
        run_id=pause.run_id,
        decision="close" if close else "review",
        comment=comment,
        artifacts={
            "review_sha256": review_sha256,
            "drop": drop,
            "force": force,
            "nonce": pause.nonce,
            "flow_run_id": pause.flow_run_id,
            "identity_verified": str(verified).lower(),
            **({"statement": signature} if verified else {}),
        },
    )
