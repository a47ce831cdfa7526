"""Stakeholders review a private selection of Φ in the orchestrator, then the reviewed Φ goes to the agreement.

    select Φ (ledger) ─► [reviewers drop or force pairs, each signed, as often as needed, until one closes]
      ─► proposed spec ─► the governed release (controller agrees Φ ─► measure ─► … ─► release sign-off)

The analyst's draft (Φ = the 1-ways + ``privacy.selection``) is selected once under the ledger
(:mod:`sdgov.tasks.select_phi`); the proposal is a Prefect artifact on the run (chosen pairs with their noisy DP
scores, forced and excluded pairs, the rejected candidates nearest the threshold, the selection's ρ and share),
and the run pauses with a :class:`Review` form. Each review is bound to one hash (:func:`review_sha256`) that the
reviewer signs for this registry, run and pause (nonce) — ``sdgov review`` does it, or its statement is pasted
into the form — and counts only if it verifies with the key the approvers registry lists for them, exactly like
the controller's decisions (:mod:`sdgov.flows.governed`); the resume alone proves nothing. A review that counts
is applied within the selection's limits (:func:`apply_review`) and logged as ``phi_reviewed`` naming the
reviewer, the changes and the reason; a refused one is logged as ``phi_review_refused`` and the run pauses again.
A review with *close* ends the review: the reviewed selection is written beside the run
(:class:`SelectionRecord`, drawn on the card), the proposed spec names it, and the same run goes on to the normal
agreement. The 1-ways the selection measured are reused by the measurement there (no second spend).
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import pause_flow_run
from prefect.input import RunInput
from prefect.input.actions import create_flow_run_input
from prefect.states import Completed
from pydantic import Field, ValidationError

from sdgov import __version__
from sdgov.agreement.load import load_spec
from sdgov.base.clock import utcnow
from sdgov.base.errors import SdgovError
from sdgov.base.hashing import sha256_file
from sdgov.flows.governed import PENDING_PREFIX, GovernedOutcome, governed_release, ui_link
from sdgov.flows.release import new_run_id
from sdgov.generators.registry import generator
from sdgov.governance.approvers import ApprovalRefused, Challenge
from sdgov.governance.controller import check_controller_files, controller_approvers, load_config, registry_id
from sdgov.measurement.selection.mst import Proposal
from sdgov.measurement.selection.review import (
    SUBJECT,
    EdgeChange,
    EdgeReview,
    SelectionRecord,
    SignedReview,
    apply_review,
    check_reviewer,
    parse_pairs,
    review_md,
    review_sha256,
)
from sdgov.registry.log import Registry
from sdgov.tasks.select_phi import select_phi, write_proposed_spec, write_record

ARTIFACT_KEY = "phi-proposal"


class Review(RunInput):
    """One reviewer's changes. ``reviewer`` and ``reason`` have no default: the form cannot be sent without them."""

    reviewer: str = Field(title="Your name", description="exactly as listed in the approvers registry")
    reason: str = Field(title="Why", description="recorded with every change in the audit trail and on the card")
    drop: str = Field(default="", title="Drop pairs", description="pairs to take out of Φ, as 'A,B; C,D'")
    force: str = Field(default="", title="Force pairs", description="pairs to add to Φ, as 'A,B; C,D'")
    close: bool = Field(
        default=False, title="Close the review", description="the last review: the reviewed Φ goes to the agreement"
    )
    signature: str = Field(
        default="",
        title="Signature",
        description="paste the output of 'sdgov review RUN_ID ... --print' (sdgov review --key does it all)",
    )


def format_pairs(pairs: list[list[str]]) -> str:
    """The form's text for ``pairs`` (read back by :func:`parse_pairs` to the same lists)."""
    return "; ".join(",".join(p) for p in pairs)


def edge_review(form: Review) -> EdgeReview:
    """The review the form holds, as signed: a malformed pair or an empty reason is one :class:`SdgovError`."""
    where = f"review by {form.reviewer}"
    try:
        return EdgeReview(
            reviewer=form.reviewer,
            drop=parse_pairs(form.drop, where),
            force=parse_pairs(form.force, where),
            reason=form.reason,
            close=form.close,
        )
    except ValidationError as exc:
        raise SdgovError(f"the review is incomplete: {exc.errors()[0]['msg']}", where, "give a reason") from None


class _Review:
    """The state of one review: the proposal, the pairs now, the changes and the reviews that counted."""

    def __init__(self, proposal: Proposal, rho_budget: float) -> None:
        self.proposal, self.rho_budget = proposal, rho_budget
        self.pairs: list[list[str]] = proposal.pairs
        self.changes: list[EdgeChange] = []
        self.reviews: list[SignedReview] = []

    def markdown(self) -> str:
        return review_md(self.proposal, self.pairs, self.changes, self.rho_budget)

    def publish(self) -> None:
        create_markdown_artifact(
            markdown=self.markdown(),
            key=ARTIFACT_KEY,
            description="Φ proposal (private selection) and the reviewers' changes so far",
        )


def await_reviews(
    registry: Registry,
    state: _Review,
    *,
    draft_sha256: str,
    run_id: str,
    proposer: str,
    limits: dict,
    deadline: float,
    poll_interval: int,
) -> bool:
    """Pause for reviews until one closes (True) or the time is up (False, logged). Each pause gets a fresh nonce;
    a refused review is logged and the run pauses again with the reason in the form."""
    from prefect.runtime import flow_run

    log = get_run_logger()
    rid, flow_run_id = registry_id(registry), str(flow_run.id)
    note, attempt = "", 0
    while True:
        attempt += 1
        key = f"phi-review-{attempt}"  # Prefect input keys: lowercase letters, digits, dashes
        nonce = secrets.token_hex(16)
        try:
            people = [a.name for a in controller_approvers(registry).approvers]
        except SdgovError as exc:
            people, note = [], note or exc.what
        create_flow_run_input(
            PENDING_PREFIX + key,
            {
                **Challenge(
                    registry_id=rid, run_id=flow_run_id, nonce=nonce, subject=SUBJECT, sha256=draft_sha256
                ).model_dump(),  # sha256: the draft under review (the review's own hash is what gets signed)
                "required_role": "reviewer (anyone in the approvers registry)",
                "eligible": people,
                "proposer": proposer,
                "attempt": attempt,
                "note": note,
                "agreement_sha256": draft_sha256,
                "registry": str(registry.root),
                "summary": {"phi": [" × ".join(p) for p in state.pairs]},
                "deadline": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + deadline - time.monotonic())),
            },
        )
        remaining = int(deadline - time.monotonic())
        form = Review.with_initial_data(description=state.markdown() + (f"\n\n> **{note}**" if note else ""))
        log.info(
            "waiting for the stakeholders' review of the Φ proposal (sdgov review %s …; %ds left)%s",
            flow_run_id,
            remaining,
            f"; review at {link}" if (link := ui_link(flow_run_id)) else "",
        )
        try:
            if remaining <= 0:
                raise FlowPauseTimeout
            form_in = pause_flow_run(wait_for_input=form, timeout=remaining, poll_interval=poll_interval, key=key)
        except FlowPauseTimeout:
            registry.append(
                "approval_timeout",
                "sdgov",
                "system",
                agreement_sha256=draft_sha256,
                run_id=run_id,
                decision="timeout",
                comment="no review closed the Φ proposal within the timeout: nothing was agreed or released",
                artifacts={SUBJECT: draft_sha256},
            )
            return False
        try:
            review = edge_review(form_in)
            if nonce in {e.artifacts.get("nonce") for e in registry.events()}:
                raise ApprovalRefused("the nonce of this pause was already used", "log.jsonl", "sign again")
            challenge = Challenge(
                registry_id=rid, run_id=flow_run_id, nonce=nonce, subject=SUBJECT, sha256=review_sha256(review)
            )
            who, verified = check_reviewer(
                controller_approvers(registry),
                review,
                challenge,
                form_in.signature,
                allow_unsigned=load_config(registry).allow_unsigned_ui_approvals,
            )
            pairs, changes = apply_review(state.pairs, review, **limits)
        except SdgovError as exc:
            registry.append(
                "phi_review_refused",
                form_in.reviewer or "?",
                "unverified",
                agreement_sha256=draft_sha256,
                run_id=run_id,
                decision="review",
                comment=f"{exc.what} | drop: {form_in.drop} | force: {form_in.force} | why: {form_in.reason}",
                artifacts={"nonce": nonce, "flow_run_id": flow_run_id},
            )
            note = f"Attempt {attempt} by {form_in.reviewer!r} was refused: {exc.what}. The run is paused again."
            log.warning("review refused: %s — pausing again", exc.one_line())
            continue
        h = review_sha256(review)
        registry.append(
            "phi_reviewed",
            who.name,
            who.role,
            agreement_sha256=draft_sha256,
            run_id=run_id,
            decision="close" if review.close else "review",
            comment="; ".join(f"{c.action} {' × '.join(c.pair)}" for c in changes) + f" — why: {review.reason}"
            if changes
            else f"no change — why: {review.reason}",
            artifacts={
                "review_sha256": h,
                "drop": format_pairs(review.drop),
                "force": format_pairs(review.force),
                "nonce": nonce,
                "flow_run_id": flow_run_id,
                "identity_verified": str(verified).lower(),
                **({"statement": form_in.signature} if verified else {}),
            },
        )
        state.pairs, state.changes = pairs, state.changes + changes
        state.reviews.append(
            SignedReview(review=review, role=who.role, review_sha256=h, identity_verified=verified, time=utcnow())
        )
        state.publish()
        log.info("%s reviewed Φ: %s", who.name, "; ".join(f"{c.action} {' × '.join(c.pair)}" for c in changes))
        if review.close:
            return True
        note = ""


@flow(name="sdgov-phi-review", version=__version__, log_prints=False)
def phi_review_flow(
    draft_path: str,
    registry_root: str,
    proposer: str,
    out_path: str | None = None,
    data_path: str | None = None,
    timeout_s: int = 3600,
    poll_interval: int = 10,
):
    """Select, pause for the stakeholders' review, write the proposed spec, then run the governed release of it
    in this same run (its agreement and release pauses)."""
    registry = Registry(registry_root)
    check_controller_files(registry)
    deadline = time.monotonic() + timeout_s
    draft = Path(draft_path).resolve()
    run_id = "select-" + new_run_id()
    proposal, summary = select_phi(str(draft), registry_root, run_id, proposer, data_path)
    state = _Review(proposal, summary["rho_budget"])
    state.publish()
    loaded = load_spec(draft)
    ag, attrs = loaded.agreement, loaded.agreement.attributes
    sizes = loaded.schema_.domain(attrs)
    plugin = generator(ag.generator.name)
    ones = [(a,) for a in attrs]
    limits = {
        "attributes": attrs,
        "sizes": sizes,
        "max_marginal_cells": ag.limits.max_marginal_cells,
        "fits": lambda pairs: plugin.model_cells(attrs, ones + list(pairs), sizes) <= ag.limits.max_model_cells,
    }
    draft_sha = summary["draft_agreement_sha256"]
    closed = await_reviews(
        registry,
        state,
        draft_sha256=draft_sha,
        run_id=run_id,
        proposer=proposer,
        limits=limits,
        deadline=deadline,
        poll_interval=poll_interval,
    )
    if not closed:
        msg = "no review closed the Φ proposal within the timeout: the run ends here and nothing was released"
        return Completed(
            name="Timed out", message=msg, data=GovernedOutcome(status="timed_out", message=msg, agreement_sha256="")
        )
    record = SelectionRecord(
        draft_agreement_sha256=draft_sha,
        proposal=proposal,
        reviews=state.reviews,
        changes=state.changes,
        pairs=state.pairs,
    )
    record_path = write_record(registry.run_dir(run_id), record)
    out = Path(out_path) if out_path else draft.with_name(draft.stem + ".proposed.yaml")
    write_proposed_spec(draft, state.pairs, out, record_path)
    proposed = load_spec(out).agreement.sha256()
    registry.append(
        "phi_proposed",
        "sdgov",
        "system",
        agreement_sha256=proposed,
        run_id=run_id,
        comment=f"the reviewed Φ ({len(state.pairs)} pairs, {len(state.changes)} change(s) by reviewers) "
        f"proposed for agreement; draft {draft_sha[:12]}…",
        artifacts={"selection_record": sha256_file(record_path), "proposed_spec": sha256_file(out)},
    )
    return governed_release(
        spec_path=str(out),
        registry_root=registry_root,
        proposer=proposer,
        data_path=data_path,
        timeout_s=max(int(deadline - time.monotonic()), 1),
        poll_interval=poll_interval,
    )
