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

import time
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.input import RunInput
from prefect.states import Completed, State
from pydantic import Field

from sdgov import __version__
from sdgov.agreement.load import load_spec
from sdgov.agreement.spec import Agreement
from sdgov.base.hashing import sha256_file
from sdgov.flows.governed import (
    ForcedOut,
    GovernedOutcome,
    GovernedRequest,
    check_run_record,
    governed_release,
    post_pending,
    wait_for_input,
    with_note,
)
from sdgov.flows.handover import taken
from sdgov.flows.release import new_run_id
from sdgov.generators.registry import generator
from sdgov.governance import decisions
from sdgov.governance.controller import registry_id
from sdgov.governance.decisions import Pause
from sdgov.governance.site import Site
from sdgov.intake.inputs import CheckedProposal
from sdgov.measurement.selection.mst import Proposal
from sdgov.measurement.selection.review import (
    SUBJECT,
    EdgeChange,
    ReviewLimits,
    SignedReview,
    changes_text,
    decide_review,
    proposals_md,
    selection_records,
)
from sdgov.measurement.selection.store import selection_units
from sdgov.registry.log import Registry
from sdgov.tasks.select_phi import select_phi_task, write_proposed_spec, write_record

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
    part: str = Field(
        default="",
        title="Part",
        description="a split synthesis: the part whose Φ the drops and forces edit (as the proposal names it)",
    )
    signature: str = Field(
        default="",
        title="Signature",
        description="paste the output of 'sdgov review RUN_ID ... --print' (sdgov review --key does it all)",
    )


class _Review:
    """The state of one review: the proposals (by part; ``None``: one model's), each part's pairs now, the changes
    and the reviews that counted."""

    def __init__(self, proposals: dict[str | None, Proposal], rho_budget: float) -> None:
        self.proposals, self.rho_budget = proposals, rho_budget
        self.pairs: dict[str | None, list[list[str]]] = {part: p.pairs for part, p in proposals.items()}
        self.changes: list[EdgeChange] = []
        self.reviews: list[SignedReview] = []

    def markdown(self) -> str:
        return proposals_md(self.proposals, self.pairs, self.changes, self.rho_budget)

    def summary(self) -> dict[str, object]:
        """What ``sdgov runs`` and ``sdgov review`` read of the pause: Φ's pairs now (a split's by part too)."""
        phi = [(f"{part}: " if part is not None else "") + " × ".join(p) for part, ps in self.pairs.items() for p in ps]
        parts = {part: [" × ".join(p) for p in ps] for part, ps in self.pairs.items() if part is not None}
        return {"phi": phi, **({"parts": parts} if parts else {})}

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
    limits: dict[str | None, ReviewLimits],
    deadline: float,
    poll_interval: int,
) -> bool:
    """Pause for reviews until one closes (True) or the time is up (False, logged). Each pause gets a fresh nonce;
    a refused review is logged (:mod:`sdgov.governance.decisions`) and the run pauses again with the reason in the
    form."""
    from prefect.runtime import flow_run

    log = get_run_logger()
    rid, flow_run_id = registry_id(registry), str(flow_run.id)
    note, attempt = "", 0
    while True:
        attempt += 1
        key = f"phi-review-{attempt}"  # Prefect input keys: lowercase letters, digits, dashes
        pause = Pause.new(
            registry,
            registry_id=rid,
            flow_run_id=flow_run_id,
            run_id=run_id,
            agreement_sha256=draft_sha256,
            subject=SUBJECT,
            sha256=draft_sha256,  # the draft under review (the review's own hash is what gets signed)
            attempt=attempt,
        )
        people, problem = decisions.eligible(registry, role=None)
        note = note or problem
        posted = post_pending(
            key,
            pause,
            deadline,
            required_role="reviewer (anyone in the approvers registry)",
            eligible=people,
            proposer=proposer,
            attempt=attempt,
            note=note,
            agreement_sha256=draft_sha256,
            summary=state.summary(),
        )
        form = Review.with_initial_data(description=with_note(state.markdown(), note, posted["deadline"]))
        waiting = f"waiting for the stakeholders' review of the Φ proposal (sdgov review {flow_run_id} …)"
        form_in = wait_for_input(form, deadline, poll_interval, key, waiting, "review", pause)
        check_run_record(pause, key, posted)
        if form_in is None:
            decisions.record_timeout(
                pause, "no review closed the Φ proposal within the timeout: nothing was agreed or released"
            )
            return False
        outcome = decide_review(
            pause,
            reviewer=form_in.reviewer,
            drop=form_in.drop,
            force=form_in.force,
            reason=form_in.reason,
            close=form_in.close,
            signature=form_in.signature,
            pairs=state.pairs,
            limits=limits,
            part=form_in.part,
        )
        if isinstance(outcome, decisions.Refused):
            note = outcome.note
            log.warning("review refused: %s — pausing again", outcome.error.one_line())
            continue
        state.pairs, state.changes = outcome.pairs, state.changes + outcome.changes
        state.reviews.append(outcome.signed)
        state.publish()
        log.info("%s reviewed Φ: %s", outcome.who.name, changes_text(outcome.changes))
        if outcome.signed.review.close:
            return True
        note = ""


def _limits(ag: Agreement, sizes: dict[str, int]) -> ReviewLimits:
    """What a review may do to one model's Φ (a split part's: its own agreement's limits)."""
    attrs, plugin = ag.attributes, generator(ag.generator.name)
    ones = [(a,) for a in attrs]
    return ReviewLimits(
        attributes=attrs,
        sizes=sizes,
        max_marginal_cells=ag.limits.max_marginal_cells,
        fits=lambda pairs: plugin.model_cells(attrs, ones + list(pairs), sizes) <= ag.limits.max_model_cells,
    )


@flow(name="sdgov-phi-review", version=__version__, log_prints=False)
def phi_review_flow(
    draft_path: str,
    registry_root: str,
    proposer: str,
    out_path: str | None = None,
    data_path: str | None = None,
    timeout_s: int = 3600,
    poll_interval: int = 10,
    proposal: str | None = None,
    checked: str | None = None,
) -> GovernedOutcome | State[GovernedOutcome]:
    """Select (the analyst's signed ``proposal`` of the draft), pause for the stakeholders' review, write the proposed
    spec, then run the governed release of it in this same run (its agreement and release pauses). ``checked``: the
    ticket of the draft as the command checked it (:mod:`sdgov.flows.handover`); without one the select stage
    checks it."""
    site = Site.resolve(registry_root)  # this process's registry, keys and authority, once
    registry = site.registry
    deadline = time.monotonic() + timeout_s
    draft = Path(draft_path).resolve()
    drafted = None if checked is None else taken(checked, CheckedProposal)
    if drafted is not None:
        drafted.for_run(site.root, str(draft), data_path, proposer, proposal)
    run_id = "select-" + new_run_id()
    proposals, summary = select_phi_task()(str(draft), site, run_id, proposer, data_path, None, proposal, drafted)
    state = _Review(proposals, summary["rho_budget"])
    state.publish()
    loaded = load_spec(draft)
    limits = {
        part: _limits(ag, loaded.schema_.domain(ag.attributes)) for part, ag, _ in selection_units(loaded.agreement)
    }
    draft_sha = summary["draft_agreement_sha256"]
    try:
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
    except ForcedOut as forced:  # forced out of its pause through the API: ended and logged
        return forced.state
    if not closed:
        msg = "no review closed the Φ proposal within the timeout: the run ends here and nothing was released"
        return Completed(
            name="Timed out", message=msg, data=GovernedOutcome(status="timed_out", message=msg, agreement_sha256="")
        )
    record = selection_records(draft_sha, proposals, state.pairs, state.reviews, state.changes)
    record_path = write_record(registry.run_dir(run_id), record)
    out = Path(out_path) if out_path else draft.with_name(draft.stem + ".proposed.yaml")
    write_proposed_spec(draft, state.pairs, out, record_path)
    n_pairs = sum(len(p) for p in state.pairs.values())
    proposed = load_spec(out).agreement.sha256()
    registry.append(
        "phi_proposed",
        "sdgov",
        "system",
        agreement_sha256=proposed,
        run_id=run_id,
        comment=f"the reviewed Φ ({n_pairs} pairs, {len(state.changes)} change(s) by reviewers) "
        f"proposed for agreement; draft {draft_sha[:12]}…",
        artifacts={"selection_record": sha256_file(record_path), "proposed_spec": sha256_file(out)},
    )
    return governed_release(
        GovernedRequest(
            spec_path=str(out),
            registry_root=registry_root,
            proposer=proposer,
            data_path=data_path,
            timeout_s=max(int(deadline - time.monotonic()), 1),
            poll_interval=poll_interval,
            selection_verified=bool(summary["proposer_verified"]),
        )
    )
