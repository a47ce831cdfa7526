"""The governed release flow: human decisions in the Prefect UI (or ``sdgov approve``), with separation of duties.

    propose Φ ─► [controller approves Φ] ─► measure (ledger) ─► generate ─► audit ─► utility ─► draft card
      ─► [controller signs off] ─► release

``approval="interactive"`` pauses at both brackets with ``pause_flow_run(wait_for_input=Decision)``: the form's
description is the summary an approver needs (budget and ledger, audit verdicts, key utility numbers, evidence
files). Before the release pause the candidate stage has rendered the draft generator card — the card exactly as
it will be published, less the sign-offs — and shown it as artifacts on the run; the release form
(:class:`ReleaseDecision`) shows Φ, ε/δ, the overall verdict and the full candidate hash, and an approval counts
only with the first 8 characters of that hash typed back (a wrong one is refused like a bad signature).

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
measurement — it pauses for a human exactly like the interactive mode.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Literal

from prefect import flow, get_run_logger
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import pause_flow_run
from prefect.input import RunInput
from prefect.input.actions import create_flow_run_input
from prefect.states import Completed
from pydantic import BaseModel, Field

from sdgov import __version__
from sdgov.agreement.accounting import PrivacyPlan
from sdgov.artifacts import load_agreement
from sdgov.audits.protocol import AuditReport
from sdgov.base.clock import utcnow
from sdgov.base.errors import BudgetError, SdgovError
from sdgov.contracts import ReleaseResult
from sdgov.flows.release import evaluate, new_run_id, publish, standing_release_signoff
from sdgov.governance import ledger
from sdgov.governance.approvers import ApprovalRefused, Challenge, check_decision
from sdgov.governance.controller import check_controller_files, controller_approvers, load_config, registry_id
from sdgov.governance.policy import preflight
from sdgov.governance.signoff import SignOff
from sdgov.governance.standing import load_approvals
from sdgov.identity.names import same_person
from sdgov.registry.log import Registry
from sdgov.reporting.approver_summaries import agreement_md, budget_md, existing, release_md
from sdgov.reporting.draft import audit_sections
from sdgov.reporting.publish import log_blocked
from sdgov.reporting.verdict import overall_verdict
from sdgov.tasks.agree_phi import agree_phi
from sdgov.tasks.measure import measure
from sdgov.tasks.propose_phi import propose_phi
from sdgov.utility.summary import UtilitySummary

PENDING_PREFIX = "sdgov-"  # flow-run input "sdgov-<pause key>": what the pause awaits (read by `sdgov runs`)


class Decision(RunInput):
    """The resume form. ``approver`` and ``decision`` have no default: the form cannot be sent without them."""

    approver: str = Field(title="Your name", description="exactly as listed in the approvers registry")
    decision: Literal["approve", "reject"] = Field(title="Decision")
    comment: str = Field(default="", title="Comment", description="recorded in the audit trail")
    signature: str = Field(
        default="",
        title="Signature",
        description="paste the output of 'sdgov sign RUN_ID --as NAME --key KEY' (sdgov approve --key does it all)",
    )


class ReleaseDecision(Decision):
    """The release form: also the first 8 characters of the candidate hash, typed by the approver (required)."""

    confirm_hash: str = Field(
        title="Confirm hash",
        description="type the first 8 characters of the release candidate hash shown above",
    )


CONFIRM_CHARS = 8


def check_confirmation(subject: str, sha256: str, decision: Decision) -> None:
    """A release is approved only with the first 8 characters of its candidate hash typed back (a rejection needs
    none): the approver has the hash in front of them, not just a button."""
    if subject != "release" or decision.decision != "approve":
        return
    typed = getattr(decision, "confirm_hash", "").strip().lower()
    if typed != sha256[:CONFIRM_CHARS]:
        raise ApprovalRefused(
            f"the confirmation {typed[:16]!r} is not the first {CONFIRM_CHARS} characters of the candidate hash",
            "confirm_hash",
            "read the hash in the form and type its first 8 characters",
        )


class GovernedOutcome(BaseModel):
    status: Literal["released", "rejected", "timed_out", "blocked", "budget_refused"]
    message: str
    release: ReleaseResult | None = None
    agreement_sha256: str = ""


def _end(status: str, message: str, agreement_sha256: str = "") -> Completed:
    # a pause that timed out cannot leave Paused for anything but Failed (Prefect's server rule); it reads
    # "The flow was timed out and never resumed." — the log's 'approval_timeout' event says which decision
    name = {"rejected": "Rejected", "timed_out": "Timed out", "blocked": "Blocked", "budget_refused": "BudgetRefused"}
    return Completed(
        name=name[status],
        message=message,
        data=GovernedOutcome(status=status, message=message, agreement_sha256=agreement_sha256),
    )


class _Stop(Exception):
    def __init__(self, state: Completed) -> None:
        self.state = state


def ui_link(flow_run_id: object) -> str:
    """The run's page in the Prefect UI; with basic auth on, through ``/login?redirect=…`` (Prefect's own "View at"
    link answers 'Authentication failed' in a browser that has not logged in yet)."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_UI_URL

    base = PREFECT_UI_URL.value() or ""
    if not base:
        return ""
    page = f"/runs/flow-run/{flow_run_id}"
    return f"{base}/login?redirect={page}" if PREFECT_API_AUTH_STRING.value() else base + page


def _used_nonces(registry: Registry) -> set[str]:
    return {e.artifacts["nonce"] for e in registry.events() if e.artifacts.get("nonce")}


def await_decision(
    registry: Registry,
    *,
    subject: str,
    sha256: str,
    proposer: str,
    agreement_sha256: str,
    run_id: str,
    description: str,
    deadline: float,
    poll_interval: int,
    summary: dict | None = None,
) -> tuple[SignOff, dict]:
    """Pause until an eligible approver decides; refused attempts are logged and the run pauses again.

    Each pause gets a fresh nonce, kept here in the flow (the copy in the pending input only tells ``sdgov sign``
    what to sign): a statement signed for an earlier pause, or another run, names another nonce and is refused."""
    from prefect.runtime import flow_run

    log = get_run_logger()
    note, attempt = "", 0
    rid, flow_run_id = registry_id(registry), str(flow_run.id)
    while True:
        attempt += 1
        try:  # re-read: the controller may commit a fix while paused
            people = controller_approvers(registry).with_role("controller")
            eligible = [a.name for a in people if not same_person(a.name, proposer)]
        except SdgovError as exc:  # e.g. an unsigned edit of approvers.yaml: nobody can decide until it is signed
            eligible, note = [], note or exc.what
        key = f"{subject}-{attempt}"
        nonce = secrets.token_hex(16)
        challenge = Challenge(registry_id=rid, run_id=flow_run_id, nonce=nonce, subject=subject, sha256=sha256)
        create_flow_run_input(
            PENDING_PREFIX + key,
            {
                **challenge.model_dump(),
                "required_role": "controller",
                "eligible": eligible,
                "proposer": proposer,
                "attempt": attempt,
                "note": note,
                "agreement_sha256": agreement_sha256,
                "registry": str(registry.root),
                "summary": summary or {},  # what `sdgov approve` prints before asking for the hash
                "deadline": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + deadline - time.monotonic())),
            },
        )
        form_class = ReleaseDecision if subject == "release" else Decision
        form = form_class.with_initial_data(description=description + (f"\n\n> **{note}**" if note else ""))
        remaining = int(deadline - time.monotonic())
        log.info(
            "waiting for a data controller to decide on the %s %s (eligible: %s; %ds left)%s",
            subject,
            sha256,
            ", ".join(eligible) or "nobody — fix the approvers registry",
            remaining,
            f"; decide at {link}" if (link := ui_link(flow_run_id)) else "",
        )
        try:
            if remaining <= 0:
                raise FlowPauseTimeout
            d = pause_flow_run(wait_for_input=form, timeout=remaining, poll_interval=poll_interval, key=key)
        except FlowPauseTimeout:
            msg = (
                f"no decision on the {subject} {sha256[:12]}… within the timeout: the run ends here and nothing "
                "was released"
            )
            registry.append(
                "approval_timeout",
                "sdgov",
                "system",
                agreement_sha256=agreement_sha256,
                run_id=run_id,
                decision="timeout",
                comment=msg,
                artifacts={subject: sha256},
            )
            log.warning(msg)
            raise _Stop(_end("timed_out", msg, agreement_sha256)) from None
        try:
            approvers = controller_approvers(registry)  # as committed now: a change while paused must be signed
            if nonce in _used_nonces(registry):
                raise ApprovalRefused("the nonce of this pause was already used", "log.jsonl", "sign again")
            check_confirmation(subject, sha256, d)
            who, verified = check_decision(
                approvers,
                name=d.approver,
                decision=d.decision,
                proposer=proposer,
                challenge=challenge,
                signature=d.signature,
                allow_unsigned=load_config(registry).allow_unsigned_ui_approvals,
            )
        except SdgovError as exc:  # ApprovalRefused, or controller files changed without a signed commit
            registry.append(
                "approval_refused",
                d.approver or "?",
                "unverified",
                agreement_sha256=agreement_sha256,
                run_id=run_id,
                decision=d.decision,
                comment=f"{exc.what} | comment: {d.comment}",
                artifacts={subject: sha256, "nonce": nonce, "flow_run_id": flow_run_id},
            )
            note = f"Attempt {attempt} by {d.approver!r} was refused: {exc.what}. The run is paused again."
            log.warning("refused: %s — pausing again", exc.one_line())
            continue
        via = f"Prefect resume form / sdgov approve (flow run {flow_run_id}), " + (
            f"identity verified: Ed25519 signature with {who.name}'s registered key"
            if verified
            else "identity NOT verified: unsigned decision accepted under the sandbox policy "
            "allow_unsigned_ui_approvals (anyone who could reach the Prefect API could have typed this name)"
        )
        s = SignOff(
            name=who.name,
            role=who.role,
            subject="release" if subject == "release" else "agreement",
            decision=d.decision,
            subject_sha256=sha256,
            time=utcnow(),
            comment=d.comment,
            via=via,
            identity_verified=verified,
        )
        event = {"agreement": "agreement_approved", "release": "release_approved", "budget": "budget_retry_approved"}
        registry.append(
            event[subject] if d.decision == "approve" else f"{subject}_rejected",
            who.name,
            who.role,
            agreement_sha256=agreement_sha256,
            run_id=run_id,
            decision=d.decision,
            comment=d.comment,
            artifacts={
                subject: sha256,
                "nonce": nonce,
                "flow_run_id": flow_run_id,
                "identity_verified": str(verified).lower(),
                **({"statement": d.signature} if verified else {}),
            },
        )
        log.info("%s %sd the %s %s…", who.name, d.decision, subject, sha256[:12])
        if d.decision == "reject":
            msg = f"{who.name} ({who.role}) rejected the {subject} {sha256[:12]}…: nothing was released"
            raise _Stop(_end("rejected", msg + (f" — {d.comment}" if d.comment else ""), agreement_sha256))
        return s, {"approver": who.name}


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
):
    if dvc_pull:
        pull_latest_data(spec_path, data_path)
    return governed_release(
        spec_path, registry_root, proposer, approval, approvals_path, data_path, timeout_s, poll_interval
    )


def governed_release(
    spec_path: str,
    registry_root: str,
    proposer: str | None = None,
    approval: Literal["interactive", "standing"] = "interactive",
    approvals_path: str | None = None,
    data_path: str | None = None,
    timeout_s: int = 3600,
    poll_interval: int = 10,
):
    """The governed release in the calling flow run (this flow's body; the Φ review flow goes on with it)."""
    try:
        return _governed(
            spec_path,
            registry_root,
            proposer,
            approval,
            approvals_path,
            data_path,
            timeout_s,
            poll_interval,
        )
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


def _governed(spec_path, registry_root, proposer, approval, approvals_path, data_path, timeout_s, poll_interval):
    log = get_run_logger()
    registry = Registry(registry_root)
    check_controller_files(registry)  # approvers, budgets, policy: as the controller last signed them, or no run
    deadline = time.monotonic() + timeout_s
    run_id = new_run_id()
    if approval == "standing":
        agreed = agree_phi(spec_path, registry_root, run_id, approvals_path, data_path)
        proposer = next(s.name for s in agreed.signoffs if s.comment == "proposed")
        standing = load_approvals(agreed.approvals.verified())
    else:
        if not proposer:
            raise SdgovError(
                "an interactive release needs the analyst who proposes it",
                "proposer",
                "pass proposer='Ada Analyst' (an analyst in the approvers registry)",
            )
        agreed = propose_phi(spec_path, registry_root, run_id, proposer, data_path)
        standing = None
    sha = agreed.agreement_sha256
    agreement = load_agreement(agreed.agreement)
    plan = preflight(registry_root, agreement, agreed.data.fingerprint, agreed.data.name, agreed.data.rows)
    signoffs = list(agreed.signoffs)

    def acct():
        try:
            return ledger.account(registry, agreed.data.name, agreed.data.fingerprint)
        except SdgovError:
            return None

    common = {
        "proposer": proposer,
        "agreement_sha256": sha,
        "run_id": Path(agreed.run_dir).name,
        "deadline": deadline,
        "poll_interval": poll_interval,
    }
    if standing is None:
        s, _ = await_decision(
            registry,
            subject="agreement",
            sha256=sha,
            description=agreement_md(agreement, sha, proposer, plan, acct(), agreed.data.fingerprint),
            summary={
                "phi": [" × ".join(c) for c in agreement.cliques],
                "epsilon": None if plan.noise == "none" else plan.epsilon,
                "delta": None if plan.noise == "none" else plan.delta,
            },
            **common,
        )
        signoffs.append(s)

    try:
        measured = measure(agreed, registry_root)
    except BudgetError as exc:
        log.warning("%s", exc.one_line())
        await_decision(
            registry,
            subject="budget",
            sha256=sha,
            description=budget_md(agreed.data.name, exc.what),
            **common,
        )
        try:
            measured = measure(agreed, registry_root)
        except BudgetError as exc2:
            return _end("budget_refused", exc2.one_line(), sha)

    evaluated = evaluate(agreed, measured)
    audited, utility, candidate = evaluated.audited, evaluated.utility, evaluated.sha256
    report = AuditReport.model_validate_json(audited.report.verified().read_bytes())
    if report.verdict != "pass":
        msg = "the audit failed, so nothing was released (no approval can override a failed audit)"
        log_blocked(registry, agreed, audited, msg)
        return _end("blocked", msg, sha)
    all_passed = all(c.passed for c in report.checks)
    if standing is not None and all_passed:
        signoffs.append(
            standing_release_signoff(
                registry,
                standing,
                agreed,
                candidate,
                comment="standing approval: every audit check passed and the budget allowed",
            )
        )
    else:
        if standing is not None:
            log.warning("not every audit check passed: pausing for a human sign-off instead of auto-releasing")
        full = json.loads(utility.full_report.verified().read_text()) if utility.full_report else None
        evidence = existing(
            {
                "audit": audited.report.path,
                "utility summary": utility.report.path,
                "utility report (HTML)": utility.full_report_html.path if utility.full_report_html else None,
                "synthetic data": evaluated.generated.synthetic.path,
            }
        )
        evidence["draft generator card (published as is, plus the sign-offs)"] = evaluated.draft.card_html.path
        if evaluated.draft.evidence_report is not None:
            evidence["evidence report (controller only)"] = evaluated.draft.evidence_report.path
        plan = PrivacyPlan.model_validate_json(measured.privacy_plan.verified().read_bytes())
        sections = audit_sections(audited)  # read once: the form's verdict and its detail use the same sections
        summary = {
            "phi": [" × ".join(c) for c in agreement.cliques],
            "epsilon": None if plan.noise == "none" else plan.epsilon,
            "delta": None if plan.noise == "none" else plan.delta,
            "verdict": overall_verdict(report, sections).label,
            "draft_card": evaluated.draft.card_html.path,
            "draft_card_md": evaluated.draft.card_md.path,
            "evidence_report": evaluated.draft.evidence_report.path if evaluated.draft.evidence_report else "",
            "release_id": evaluated.draft.release_id,
        }
        desc = release_md(
            agreement,
            candidate,
            proposer,
            plan,
            acct(),
            report,
            UtilitySummary.model_validate_json(utility.report.verified().read_bytes()),
            evidence,
            full,
            sections=sections,
        )
        s, _ = await_decision(
            registry, subject="release", sha256=candidate, description=desc, summary=summary, **common
        )
        signoffs.append(s)
    result = publish(agreed, evaluated, signoffs, registry_root)
    return GovernedOutcome(
        status="released", message=f"released {result.release_id}", release=result, agreement_sha256=sha
    )
