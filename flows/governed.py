"""The governed release flow: human decisions in the Prefect UI (or ``sdgov approve``), with separation of duties.

    propose Φ ─► [controller approves Φ] ─► measure (ledger) ─► generate ─► audit ─► utility ─► draft card
      ─► [controller signs off] ─► release

``approval="interactive"`` pauses at both brackets with ``pause_flow_run(wait_for_input=Decision)``. What is signed
is in the form's fields, which the Prefect UI renders at full height at any window size (its text above the fields
collapses to nothing on a laptop screen): the Decision field's title and help carry Φ, the rows to release, the
verdict and each audit row, ε/δ (the privacy statement's), the deadline and the full hash; the name field's help
carries a refused attempt's reason; the confirmation's help the hash again
(:mod:`sdgov.reporting.approver_summaries`). Before the release pause the candidate stage has rendered the draft
generator card — the card exactly as it will be published, less the sign-offs — and shown it as artifacts on the
run; an approval of the release (:class:`ReleaseDecision`) counts only with the first 8 characters of its candidate
hash typed back (a wrong one is refused like a bad signature); a rejection needs none.

A decision counts only with a signed statement (the form's *Signature* field, from ``sdgov sign``, or
``sdgov approve --key``) over this registry's id, this flow run, a nonce issued for this very pause, the subject,
its hash and the decision, verified with the key the controller's approvers registry lists for the approver
(:mod:`sdgov.governance.approvers`, :mod:`sdgov.governance.controller`). An unsigned, forged, replayed or wrongly-keyed
resume — a raw
``POST /api/flow_runs/{id}/resume`` included — is refused, logged as ``approval_refused``, and the run pauses
again with a fresh nonce (unless the controller's sandbox switch ``allow_unsigned_ui_approvals`` lets unsigned
decisions count, recorded as identity not verified); a rejection ends the run with nothing released (final state
``Rejected``); no decision within ``timeout_s`` ends it (Prefect's server turns a
timed-out pause into ``Failed``: "The flow was timed out and never resumed."). Every decision is in the
hash-chained log and in the card's sign-offs.

``approval="standing"`` (scheduled releases, flows/schedule.py) takes the Φ agreement from the standing-approval
file, and auto-releases only if every audit check passed; otherwise — or when the privacy budget refuses the
measurement — it pauses for a human exactly like the interactive mode. A standing run that cannot start (the spec
changed since the standing approval was signed, a lapsed or unsigned approval, controller files changed without a
signature, bad inputs) is refused before anything is written or drawn: ``run_refused`` in the log, final state
``Refused``.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypeVar, cast
from uuid import UUID

from prefect import flow, get_run_logger
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import pause_flow_run
from prefect.input import RunInput
from prefect.input.actions import create_flow_run_input
from prefect.states import Cancelled, Completed, State
from pydantic import BaseModel, Field, create_model

from sdgov import __version__
from sdgov.agreement.spec import Agreement
from sdgov.artifacts import load_agreement
from sdgov.audits.protocol import AuditReport
from sdgov.base.errors import BudgetError, SdgovError
from sdgov.budget.statement import headline, key_facts, release_epsilon
from sdgov.contracts import Agreed, Measured, ReleaseResult
from sdgov.flows.handover import proposal_inputs, release_inputs
from sdgov.flows.plumbing.pending import PENDING_PREFIX
from sdgov.flows.plumbing.prefect_api import ui_link
from sdgov.flows.plumbing.worker_runs import die_with_worker, end_run
from sdgov.flows.release import evaluate, new_run_id, publish, standing_release_signoff
from sdgov.governance import decisions, ledger, worker
from sdgov.governance.approvers import ApprovalRefused
from sdgov.governance.controller import load_config, registry_id
from sdgov.governance.decisions import DecisionSubject, Pause, Submitted
from sdgov.governance.policy import check_plan_allowed
from sdgov.governance.signoff import SignOff
from sdgov.governance.site import Site
from sdgov.governance.standing import StandingApproval, load_approvals
from sdgov.registry.log import Registry
from sdgov.reporting.approver_summaries import (
    agreement_facts,
    agreement_md,
    budget_md,
    form_fields,
    release_facts,
    release_md,
)
from sdgov.reporting.card import Card
from sdgov.reporting.publish import ReleaseCandidate, log_blocked, log_failed
from sdgov.tasks.agree_phi import agree_phi
from sdgov.tasks.measure import measure
from sdgov.tasks.propose_phi import propose_phi


class Decision(RunInput):
    """The resume form. ``approver`` and ``decision`` have no default: the form cannot be sent without them."""

    approver: str = Field(title="Your name", description="exactly as listed in the approvers registry")
    decision: Literal["approve", "reject"] = Field(title="Decision")
    comment: str = Field(default="", title="Comment", description="recorded in the audit trail")
    signature: str = Field(
        min_length=1,
        title="Signature",
        description="paste the output of 'sdgov sign RUN_ID --as NAME --key KEY' (sdgov approve --key does it all)",
    )

    @classmethod
    def for_pause(cls, description: str, texts: dict[str, tuple[str, str]]) -> type[Decision]:
        """This pause's form: the text above the fields, and each field's title and help as ``texts`` (field name →
        (title, Markdown)) gives them — where what is signed goes, as the Prefect UI renders a field's title and
        help at full height and collapses the text above the fields on a laptop screen."""
        form = cls.with_initial_data(description=description)
        fields: dict[str, Any] = {}
        for name, (title, help_) in texts.items():
            info = cls.model_fields[name]
            fields[name] = (
                info.annotation,
                Field(default=info.default, title=title, description=help_ or None)
                if not info.is_required()
                else Field(title=title, description=help_ or None, min_length=1 if name == "signature" else None),
            )
        return cast(type[Decision], create_model(cls.__name__, __base__=form, **fields))


class ReleaseDecision(Decision):
    """The release form: also the first 8 characters of the candidate hash, typed by the approver to approve (a
    rejection needs none: :func:`sdgov.governance.decisions.check_confirmation`)."""

    confirm_hash: str = Field(
        default="",
        title="Confirm hash",
        description="type the first 8 characters of the release candidate hash to approve (not needed to reject)",
    )


UNSIGNED_OK = Field(
    default="",
    title="Signature (optional in this sandbox registry)",
    description="the controller's sandbox switch (allow_unsigned_ui_approvals) lets an unsigned decision count, "
    "recorded as identity not verified; a signature given must still verify ('sdgov sign RUN_ID --as NAME --key KEY')",
)


class SandboxDecision(Decision):
    """The form where the controller allows unsigned UI decisions: the signature may be left empty."""

    signature: str = UNSIGNED_OK


class SandboxReleaseDecision(ReleaseDecision):
    signature: str = UNSIGNED_OK


def form_for(subject: str, allow_unsigned: bool) -> type[Decision]:
    """The resume form of a pause: the release form asks for the hash; only a sandbox registry's leaves the
    signature optional (everywhere else a decision counts only signed, so the form requires it)."""
    if subject == "release":
        return SandboxReleaseDecision if allow_unsigned else ReleaseDecision
    return SandboxDecision if allow_unsigned else Decision


F = TypeVar("F", bound=RunInput)

FormText = Callable[[str, str], tuple[str, dict[str, tuple[str, str]]]]
"""A pause's form from the last refusal's note and the deadline (UTC): the text above the fields and each field's
(title, help) — :meth:`Decision.for_pause`."""

Status = Literal["released", "rejected", "timed_out", "blocked", "budget_refused", "refused", "cancelled"]


class GovernedOutcome(BaseModel):
    status: Status
    message: str
    release: ReleaseResult | None = None
    agreement_sha256: str = ""


def end_state(status: Status, message: str, agreement_sha256: str = "") -> State[GovernedOutcome]:
    """The run's final state for an ending without a release (named for the Prefect UI), with its outcome."""
    # a pause that timed out cannot leave Paused for anything but Failed (Prefect's server rule); it reads
    # "The flow was timed out and never resumed." — the log's 'approval_timeout' event says which decision
    outcome = GovernedOutcome(status=status, message=message, agreement_sha256=agreement_sha256)
    if status == "cancelled":  # forced out of its pause: nothing will resume it
        return Cancelled(message=message, data=outcome)
    name = {
        "rejected": "Rejected",
        "timed_out": "Timed out",
        "blocked": "Blocked",
        "budget_refused": "BudgetRefused",
        "refused": "Refused",
    }
    return Completed(
        name=name[status],
        message=message,
        data=outcome,
    )


class _Stop(Exception):
    def __init__(self, state: State[GovernedOutcome]) -> None:
        self.state = state


def with_note(description: str, note: str, deadline: str = "") -> str:
    """The form's text with the reason the last attempt was refused at the top, where the approver looks first, and
    the decision's deadline (the controller's ``decision_timeout_s`` in the worker) under it."""
    due = f"**Decide by {deadline.replace('T', ' ').rstrip('Z')} UTC**: after that the run ends, nothing released.\n\n"
    return (f"> **{note}**\n\n" if note else "") + (due if deadline else "") + description


class ForcedOut(Exception):
    """A paused run that someone forced into a final state through the API (``set_state`` COMPLETED): nothing will
    resume it, so it ended here (logged); ``state`` is the run's final state."""

    def __init__(self, state: State[GovernedOutcome]) -> None:
        super().__init__(state.message)
        self.state = state


def wait_for_input(
    form: type[F],
    deadline: float,
    poll_interval: int,
    key: str,
    waiting: str,
    act: str,
    pause: Pause | None = None,
) -> F | None:
    """Pause this run until someone sends ``form``, or None once ``deadline`` (``time.monotonic()``) passes (already
    past: no pause). ``waiting`` is logged first, with the seconds left and where to ``act`` in the UI.

    Prefect's pause waits in a thread of its own while this one reads the run's state every ``poll_interval``
    seconds: a final state someone forced through the API while the run is paused (``set_state`` COMPLETED) means
    nothing will ever resume it, so the run ends here — logged as ``run_tampered`` and ``run_ended`` in ``pause``'s
    registry — and :class:`ForcedOut` is raised with its final state (*Cancelled*): its process ends and the worker's
    slot is free for the next run."""
    from prefect.runtime import flow_run

    remaining = int(deadline - time.monotonic())
    link = ui_link(flow_run.id)
    get_run_logger().info("%s; %ds left%s", waiting, remaining, f"; {act} at {link}" if link else "")
    if remaining <= 0:
        return None
    outcome: dict[str, Any] = {}
    done = threading.Event()
    context = contextvars.copy_context()  # the flow run's context, for Prefect's pause in its own thread

    def wait() -> None:
        try:
            outcome["input"] = context.run(
                pause_flow_run, wait_for_input=form, timeout=remaining, poll_interval=poll_interval, key=key
            )
        except FlowPauseTimeout:
            outcome["input"] = None
        except BaseException as exc:  # re-raised in the flow's thread below
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=wait, name=f"sdgov-pause-{key}", daemon=True).start()
    report = log_tampering(pause) if pause is not None else None  # made here: the run logger of the flow's thread
    while not done.wait(max(1, poll_interval)):
        # past the deadline the server may fail the pause itself (its pause-expiration service): a timeout, which
        # Prefect's pause reports a moment later, not a forced state
        forced = _forced_state(str(flow_run.id)) if time.monotonic() < deadline - 10 else None
        if forced is None:
            continue
        if report is not None and pause is not None:
            report(forced)
            end_run(pause.registry, pause.flow_run_id, forced)
        raise ForcedOut(end_state("cancelled", f"{forced}: the run ended here and nothing was released"))
    if "error" in outcome:
        raise outcome["error"]
    return cast(F | None, outcome["input"])


def _forced_state(flow_run_id: str) -> str | None:
    """What the server shows when someone forced this paused run into a final state (nobody but this flow ends it),
    else None (a server away for a moment is looked at again later)."""
    from prefect import get_client

    try:
        with get_client(sync_client=True) as c:
            state = c.read_flow_run(UUID(flow_run_id)).state
    except Exception:
        return None
    if state is None or not state.is_final():
        return None
    return f"the run's state was forced to {state.type.value} ({state.name}) while it awaited a decision"


def deadline_utc(deadline: float) -> str:
    """A ``time.monotonic()`` deadline as the UTC time it falls at (what the form, ``sdgov runs`` and the record
    say)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + deadline - time.monotonic()))


def post_pending(key: str, pause: Pause, deadline: float, **fields: object) -> dict[str, Any]:
    """What the pause awaits: written into the registry and logged (:func:`decisions.record_pending`, what ``sdgov
    runs``, ``sign`` and ``approve`` trust), and the same as a flow-run input (how they find it); returned as posted."""
    pending = {
        **pause.challenge().model_dump(),
        **fields,
        "registry": str(pause.registry.root),
        "deadline": deadline_utc(deadline),
    }
    pending["record_sha256"] = decisions.record_pending(pause, key, pending)
    create_flow_run_input(PENDING_PREFIX + key, pending)
    return pending


def check_run_record(pause: Pause, key: str, posted: dict[str, Any]) -> None:
    """After a pause: log (``run_tampered``) what someone changed in the run's record on the server meanwhile — the
    pause's input rewritten or deleted, the run's parameters patched. The flow goes on from its own state and the
    registry's records; the server's copy was only ever transport."""
    from prefect import get_client
    from prefect.runtime import flow_run

    problems = []
    with get_client(sync_client=True) as c:
        try:
            now = json.loads(c.read_flow_run_input(UUID(pause.flow_run_id), PENDING_PREFIX + key))
        except Exception:
            now = None
        server_params = c.read_flow_run(UUID(pause.flow_run_id)).parameters
    if now is None:
        problems.append(f"the pause's run input {PENDING_PREFIX + key} was deleted")
    elif fields := decisions.rewritten_fields(now, posted):
        problems.append(f"the pause's run input {PENDING_PREFIX + key} was rewritten ({', '.join(fields)})")
    started = json.loads(json.dumps(dict(flow_run.parameters), default=str))
    if patched := sorted(k for k in set(started) | set(server_params) if started.get(k) != server_params.get(k)):
        problems.append(f"the run's parameters were patched on the server ({', '.join(patched)}); the run ignores it")
    report = log_tampering(pause)
    for what in problems:
        report(what)


def await_decision(
    registry: Registry,
    *,
    subject: DecisionSubject,
    sha256: str,
    proposer: str,
    agreement_sha256: str,
    run_id: str,
    form_text: FormText,
    deadline: float,
    poll_interval: int,
    summary: dict[str, Any] | None = None,
) -> tuple[SignOff, dict[str, str]]:
    """Pause until an eligible approver decides (:func:`sdgov.governance.decisions.decide`); refused attempts are
    logged there and the run pauses again.

    Each pause gets a fresh nonce, kept here in the flow (the copy in the pending input only tells ``sdgov sign``
    what to sign): a statement signed for an earlier pause, or another run, names another nonce and is refused."""
    from prefect.runtime import flow_run

    log = get_run_logger()
    note, attempt = "", 0
    rid, flow_run_id = registry_id(registry), str(flow_run.id)
    form_class = form_for(subject, load_config(registry).allow_unsigned_ui_approvals)
    while True:
        attempt += 1
        people, problem = decisions.eligible(registry, exclude=proposer)
        note = note or problem
        key = f"{subject}-{attempt}"
        pause = Pause.new(
            registry,
            registry_id=rid,
            flow_run_id=flow_run_id,
            run_id=run_id,
            agreement_sha256=agreement_sha256,
            subject=subject,
            sha256=sha256,
            attempt=attempt,
        )
        posted = post_pending(
            key,
            pause,
            deadline,
            required_role="controller",
            eligible=people,
            proposer=proposer,
            attempt=attempt,
            note=note,
            agreement_sha256=agreement_sha256,
            summary=summary or {},  # what `sdgov approve` prints before asking for the hash
        )
        description, texts = form_text(note, posted["deadline"])
        form = form_class.for_pause(with_note(description, note, posted["deadline"]), texts)
        eligible = ", ".join(people) or "nobody — fix the approvers registry"
        waiting = f"waiting for a data controller to decide on the {subject} {sha256} (eligible: {eligible})"
        try:
            d = wait_for_input(form, deadline, poll_interval, key, waiting, "decide", pause)
        except ForcedOut as out:
            raise _Stop(out.state) from None
        check_run_record(pause, key, posted)
        if d is not None:  # the approver's account may not read every shown file (the evidence): this one can
            try:
                decisions.check_shown_files(registry, posted)
            except SdgovError as exc:
                decisions.record_tampered(registry, run_id, flow_run_id, exc.one_line())
                raise _Stop(end_state("blocked", f"nothing released: {exc.one_line()}", agreement_sha256)) from None
        if d is None:
            msg = decisions.timeout_message(subject, sha256)
            decisions.record_timeout(pause, msg)
            log.warning(msg)
            raise _Stop(end_state("timed_out", msg, agreement_sha256)) from None
        submitted = Submitted(
            approver=d.approver,
            decision=d.decision,
            comment=d.comment,
            signature=d.signature,
            confirm_hash=getattr(d, "confirm_hash", ""),
        )
        outcome = decisions.decide(pause, submitted, proposer)
        if isinstance(outcome, decisions.Refused):
            note = outcome.note
            log.warning("refused: %s — pausing again", outcome.error.one_line())
            continue
        log.info("%s", decisions.decided_message(outcome, subject, sha256))
        if outcome.decision == "reject":
            raise _Stop(end_state("rejected", decisions.rejection_message(pause, outcome), agreement_sha256))
        return outcome, {"approver": outcome.name}


def log_tampering(pause: Pause) -> Callable[[str], None]:
    """What to do when someone else changed this paused run's record on the server (its input, its parameters, its
    state): warn in the run's log and log ``run_tampered`` in the registry. Made in the flow's thread, so the state
    watcher's thread can report through it too."""

    log = get_run_logger()  # here, in the flow's thread: the watcher's thread has no run context

    def report(what: str) -> None:
        log.warning("run record changed by someone else: %s", what)
        decisions.record_tampered(pause.registry, pause.run_id, pause.flow_run_id, what)

    return report


@flow(name="sdgov-governed-release", version=__version__, log_prints=False)
def governed_release_flow(
    spec_path: str,
    registry_root: str,
    proposer: str | None = None,
    approval: Literal["interactive", "standing"] = "interactive",
    approvals_path: str | None = None,
    data_path: str | None = None,
    timeout_s: int = 3600,
    poll_interval: int = 10,
    dvc_pull: bool = False,
    proposal: str | None = None,
    checked: str | None = None,
) -> GovernedOutcome | State[GovernedOutcome]:
    """The governed release as a Prefect flow: the run's parameters become one :class:`GovernedRequest` (a scheduled
    run first brings DVC-tracked data to its latest version). In the controller's worker the parameters must be
    the worker configuration's (:func:`sdgov.governance.worker.check_request`), else the run is refused and logged
    before anything is read. ``checked``: the ticket of the proposal as ``sdgov propose`` checked it in this
    process (:mod:`sdgov.flows.handover`; the first stage re-verifies it by hash)."""
    request = GovernedRequest(
        spec_path,
        registry_root,
        proposer,
        approval,
        approvals_path,
        data_path,
        timeout_s,
        poll_interval,
        proposal,
        checked=checked,
    )
    asked = {**request.parameters(), "dvc_pull": dvc_pull}
    refused, pin = _refused_by_worker(asked)
    if refused is not None:
        return refused
    if dvc_pull:
        pull_latest_data(spec_path, data_path)
    return governed_release(replace(request, schedule_pin=pin))


def _refused_by_worker(asked: dict[str, Any]) -> tuple[State[GovernedOutcome] | None, str | None]:
    """In the controller's worker: the run's final state when its parameters are not exactly the schedule's (logged
    in the worker's registry, never in one the parameters name), else None and the data commitment the schedule's
    entry pins (if any); outside a worker, (None, None)."""
    from prefect.runtime import flow_run

    active = worker.active()
    if active is None:
        return None, None
    cfg, cfg_sha = active
    die_with_worker(cfg.registry, str(flow_run.id))
    problems = worker.check_request(cfg, asked)
    if not problems:
        entry = worker.scheduled_entry(cfg, asked["spec_path"])
        return None, entry.data_sha256_hmac if entry else None
    error = SdgovError(
        "the run's parameters are not the controller's: " + "; ".join(problems),
        "run parameters",
        "runs of the controller's deployments take every parameter from worker.yaml",
    )
    return refuse_run(Site.resolve(cfg.registry).registry, f"flow-run-{flow_run.id}", error, cfg_sha), None


def refuse_run(registry: Registry, run_ref: str, error: SdgovError, config_sha256: str = "") -> State[GovernedOutcome]:
    """A run that may not start: warn in its log, log ``run_refused`` in ``registry`` (naming the worker's
    configuration when one refused it), and end it as ``Refused``."""
    get_run_logger().warning("refused: %s", error.one_line())
    decisions.record_run_refused(registry, run_ref, error, config_sha256=config_sha256)
    return end_state("refused", error.one_line())


@dataclass(frozen=True)
class GovernedRequest:
    """What a governed run was asked to do (the flow's parameters), passed whole to its steps."""

    spec_path: str
    registry_root: str
    proposer: str | None = None
    approval: Literal["interactive", "standing"] = "interactive"
    approvals_path: str | None = None
    data_path: str | None = None
    timeout_s: int = 3600
    poll_interval: int = 10
    proposal: str | None = None  # the analyst's signed proposal token (sdgov.governance.proposals)
    selection_verified: bool | None = None  # the Φ review flow only: the reviewed Φ of a checked, signed draft
    schedule_pin: str | None = None  # the worker's schedule entry's data commitment (never a run parameter)
    checked: str | None = None  # the ticket of the proposal as the command checked it (sdgov.flows.handover)

    def parameters(self) -> dict[str, Any]:
        """The flow parameters this request came from (what the worker compares with its configuration)."""
        names = ("spec_path", "registry_root", "proposer", "approval", "approvals_path", "data_path", "timeout_s")
        return {n: getattr(self, n) for n in (*names, "poll_interval", "proposal")}


def governed_release(request: GovernedRequest) -> GovernedOutcome | State[GovernedOutcome]:
    """The governed release in the calling flow run (this flow's body; the Φ review flow goes on with it)."""
    try:
        return _governed(request)
    except _Stop as stop:
        return stop.state


def pull_latest_data(spec_path: str, data_path: str | None) -> None:
    """Scheduled runs: bring the DVC-tracked confidential data to its latest version before proposing."""
    import subprocess

    from sdgov.agreement.load import load_spec

    data = Path(data_path) if data_path else load_spec(spec_path).data_path
    if not Path(str(data) + ".dvc").exists():
        get_run_logger().info("%s is not a DVC-tracked file (no .dvc beside it): using it as it is", data)
        return
    for cmd in (["dvc", "update", f"{data}.dvc"] if _is_import(data) else ["dvc", "pull", f"{data}.dvc"],):
        r = subprocess.run(cmd, cwd=data.parent, capture_output=True, text=True)
        if r.returncode != 0:
            raise SdgovError(
                f"'{' '.join(cmd)}' failed: {r.stderr.strip()[-300:]}",
                str(data),
                "fix the DVC remote or run without dvc_pull",
            )
        get_run_logger().info("%s: %s", " ".join(cmd), (r.stdout or "up to date").strip()[-200:])


def _is_import(data: Path) -> bool:
    import yaml

    try:
        return "deps" in (yaml.safe_load(Path(str(data) + ".dvc").read_text()) or {})
    except (OSError, ValueError):
        return False


@dataclass
class _Governed:
    """One governed release between its steps: the agreed Φ, who proposed it, the standing approval (None: a human
    decides), the sign-offs so far, and the clock and registry the pauses use."""

    site: Site
    registry: Registry
    agreed: Agreed
    agreement: Agreement
    proposer: str
    standing: StandingApproval | None
    signoffs: list[SignOff]
    deadline: float
    poll_interval: int

    @property
    def sha(self) -> str:
        return self.agreed.agreement_sha256

    def account(self) -> ledger.Account | None:
        try:
            return ledger.account(self.site, self.agreed.data.name, self.agreed.data.fingerprint)
        except SdgovError:
            return None

    def decision(
        self, subject: DecisionSubject, sha256: str, form_text: FormText, summary: dict[str, Any] | None = None
    ) -> SignOff:
        """Pause for a controller's decision on ``subject`` (an approval: a rejection or a timeout stops the run)."""
        s, _ = await_decision(
            self.registry,
            subject=subject,
            sha256=sha256,
            form_text=form_text,
            proposer=self.proposer,
            agreement_sha256=self.sha,
            run_id=Path(self.agreed.run_dir).name,
            deadline=self.deadline,
            poll_interval=self.poll_interval,
            summary=summary,
        )
        return s


def _governed(request: GovernedRequest) -> GovernedOutcome:
    """agree → measure (a refused budget may be retried once, with a controller's approval) → evaluate → decide →
    publish; a step that ends the run early raises :class:`_Stop` with its final state."""
    run = _agree(request)
    try:
        measured = _measure_with_budget_retry(run)
        evaluated, report = _evaluate(run, measured)
        _decide(run, evaluated, report)
        return _publish(run, evaluated)
    except _Stop:
        raise  # an ending the log already records (rejected, timed out, blocked, budget refused)
    except Exception as exc:  # the trail records the run as failed, not as drawn and left there
        log_failed(run.registry, run.agreed, exc)
        raise


def _agree(request: GovernedRequest) -> _Governed:
    """Φ agreed: from the standing approval, or proposed by the analyst and approved by a controller."""
    r = request
    site = Site.resolve(r.registry_root)  # the registry, keys, secret and authority: this process's, once
    registry, proposer = site.registry, r.proposer
    run_id = new_run_id()
    standing: StandingApproval | None
    if r.approval == "standing":
        try:  # nobody watches a scheduled run: a refusal is logged, and the run ends as Refused
            deadline = time.monotonic() + r.timeout_s
            inputs = release_inputs(site, r.spec_path, r.approvals_path, r.data_path, r.checked, r.schedule_pin)
            agreed = agree_phi(inputs, site, run_id)
        except SdgovError as exc:
            raise _Stop(refuse_run(registry, run_id, exc)) from None
        proposer = next(s.name for s in agreed.signoffs if s.comment == "proposed")
        standing = load_approvals(agreed.approvals.verified())
    else:
        deadline = time.monotonic() + r.timeout_s
        if not proposer:
            raise SdgovError(
                "an interactive release needs the analyst who proposes it",
                "proposer",
                "pass proposer='Ada Analyst' (an analyst in the approvers registry)",
            )
        try:  # an unsigned, replayed or wrongly signed proposal: refused (and logged) before the data is read
            checked = proposal_inputs(
                site, r.spec_path, proposer, r.data_path, r.proposal, r.selection_verified, r.checked
            )
        except ApprovalRefused as exc:
            get_run_logger().warning("refused: %s", exc.one_line())
            raise _Stop(end_state("refused", exc.one_line())) from None
        agreed = propose_phi(checked, site, run_id)
        standing = None
    agreement = load_agreement(agreed.agreement)
    plan = check_plan_allowed(site, agreement, agreed.data.fingerprint, agreed.data.name, agreed.data.rows)
    run = _Governed(
        site=site,
        registry=registry,
        agreed=agreed,
        agreement=agreement,
        proposer=proposer,
        standing=standing,
        signoffs=list(agreed.signoffs),
        deadline=deadline,
        poll_interval=r.poll_interval,
    )
    if standing is None:
        account = run.account()

        def form(note: str, deadline: str) -> tuple[str, dict[str, tuple[str, str]]]:
            facts = agreement_facts(agreement, run.sha, plan, deadline, note)
            return agreement_md(agreement, run.sha, proposer, plan, account, facts), form_fields(
                facts, "agreement", run.sha
            )

        eps = release_epsilon(plan)
        summary = {
            "phi": [" × ".join(c) for c in agreement.cliques],
            "privacy": eps.words() + ("" if eps.unbounded else f", δ = {plan.delta:.3g}"),
        }
        run.signoffs.append(run.decision("agreement", run.sha, form, summary))
    return run


def _measure_with_budget_retry(run: _Governed) -> Measured:
    """The noisy marginals under the ledger; when the budget refuses, a controller may approve one retry (after
    raising the budget), else the run ends as ``budget_refused``."""
    try:
        return measure(run.agreed, run.site)
    except BudgetError as exc:
        get_run_logger().warning("%s", exc.one_line())
        what, dataset = exc.what, run.agreed.data.name

        def form(note: str, deadline: str) -> tuple[str, dict[str, tuple[str, str]]]:
            title = "Decision — retry the measurement under a raised budget?"
            return budget_md(dataset, what), {"decision": (title, f"{what} (decide by {deadline})")}

        run.decision("budget", run.sha, form)
        try:
            return measure(run.agreed, run.site)
        except BudgetError as exc2:
            raise _Stop(end_state("budget_refused", exc2.one_line(), run.sha)) from None


def _evaluate(run: _Governed, measured: Measured) -> tuple[ReleaseCandidate, AuditReport]:
    """generate → audit → utility → draft card; a failed audit ends the run here (``blocked``)."""
    evaluated = evaluate(run.agreed, measured)
    audited = evaluated.audited
    report = AuditReport.model_validate_json(audited.report.verified().read_bytes())
    if report.verdict != "pass":
        msg = "the audit failed, so nothing was released (no approval can override a failed audit)"
        log_blocked(run.registry, run.agreed, audited, msg)
        raise _Stop(end_state("blocked", msg, run.sha))
    return evaluated, report


def _decide(run: _Governed, evaluated: ReleaseCandidate, report: AuditReport) -> None:
    """The release sign-off: the standing approval when every audit check passed, else a controller's decision."""
    if run.standing is not None and all(c.passed for c in report.checks):
        run.signoffs.append(
            standing_release_signoff(
                run.registry,
                run.standing,
                run.agreed,
                evaluated.sha256,
                comment="standing approval: every audit check passed and the budget allowed",
            )
        )
        return
    if run.standing is not None:
        get_run_logger().warning("not every audit check passed: pausing for a human sign-off instead of auto-releasing")
    form, summary = _release_form(run, evaluated)
    run.signoffs.append(run.decision("release", evaluated.sha256, form, summary))


def _release_form(run: _Governed, evaluated: ReleaseCandidate) -> tuple[FormText, dict[str, Any]]:
    """What the release approver reads: the form (only what the draft card publishes: Prefect shows it to every login
    holder), and the summary ``sdgov approve`` prints (kept in the registry with the pause) — every figure the
    draft card's, its privacy the card's statement."""
    card = Card.model_validate_json(evaluated.draft.card_json.verified().read_bytes())  # as the card says
    sha256, evidence, account = evaluated.sha256, evaluated.draft.evidence_report, run.account()
    summary: dict[str, Any] = {
        "phi": [" × ".join(c) for c in run.agreement.cliques],
        "privacy": key_facts(card.statement),
        "privacy_headline": headline(card.statement),
        "verdict": card.verdict.label,
        "rows": card.synthetic["rows"],
        "draft_card": evaluated.draft.card_html.path,
        "draft_card_md": evaluated.draft.card_md.path,
        "evidence_report": evidence.path if evidence else "",
        "release_id": evaluated.draft.release_id,
    }
    shown = [evaluated.draft.card_html.path, evaluated.draft.card_md.path, evaluated.draft.card_json.path]
    summary[decisions.SHOWN_FILES] = decisions.shown_files(run.registry, [*shown, evidence.path if evidence else ""])
    where = (
        Path(evidence.path).relative_to(run.registry.root).as_posix()
        if evidence and Path(evidence.path).is_relative_to(run.registry.root)
        else "runs/<run>/evidence/evidence.html"
    )

    def form(note: str, deadline: str) -> tuple[str, dict[str, tuple[str, str]]]:
        facts = release_facts(sha256, card, deadline, note)
        description = release_md(run.proposer, card.privacy, account, card, where, facts)
        return description, form_fields(facts, "release", sha256)

    return form, summary


def _publish(run: _Governed, evaluated: ReleaseCandidate) -> GovernedOutcome:
    result = publish(run.agreed, evaluated, run.signoffs, run.site)
    return GovernedOutcome(
        status="released", message=f"released {result.release_id}", release=result, agreement_sha256=run.sha
    )
