"""Stakeholders' review of a Φ proposal: drop or force pairs, each change with who and why, signed.

ONS let stakeholders augment MST's private selection with prior knowledge before measurement. A review is
post-processing of the proposal (no data is read, nothing is spent): it edits the list of pairs, within the same
limits the selection respected (known attributes, the cell limit, the model within the domain limit). Every
change is a record naming the reviewer and the reason; the whole review is bound to one hash
(:func:`review_sha256`) which the reviewer signs like a decision (:class:`~sdgov.identity.statements.SignOffStatement`
with ``subject: phi_review`` and ``decision: review``), verified with the key the approvers registry lists for
them. The reviewed Φ then goes through the normal agreement.

The orchestration (the proposal as a Prefect artifact on a paused run, a RunInput form per review) is
:mod:`sdgov.flows.phi_review`; this module is the part of it that does not need Prefect, plus the
:class:`SelectionRecord` the reviewed spec names and the card draws (:mod:`sdgov.reporting.selection`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from sdgov.base.clock import utcnow
from sdgov.base.errors import SdgovError, SpecError
from sdgov.base.hashing import sha256_json
from sdgov.base.model import Frozen
from sdgov.governance.approvers import ApprovalRefused, Approver, Approvers, Challenge
from sdgov.governance.controller import controller_approvers, load_config
from sdgov.governance.decisions import Pause, Refused, check_nonce_unused, record_review, record_review_refused
from sdgov.identity.keys import verifies
from sdgov.identity.names import same_person
from sdgov.identity.statements import SignOffStatement, decode_statement, signed_bytes
from sdgov.measurement.selection.mst import Proposal

SUBJECT = "phi_review"
DECISION = "review"


class EdgeReview(Frozen):
    """One reviewer's edits of the proposed pairs."""

    reviewer: str = Field(min_length=1)
    drop: list[list[str]] = Field(default_factory=list)
    force: list[list[str]] = Field(default_factory=list)
    reason: str = Field(min_length=1, description="why: every change is logged with it")
    close: bool = Field(default=False, description="the last review: the reviewed Φ goes to the agreement")
    proposal_sha256: str = Field(
        default="", description="the Φ proposal under review (the draft's hash): the reviewer's signature binds it"
    )
    part: str | None = Field(  # absent: same hash as before
        default=None, exclude_if=lambda v: v is None, description="a split synthesis: the part whose Φ it edits"
    )


class EdgeChange(Frozen):
    action: Literal["drop", "force"]
    pair: list[str]
    reviewer: str
    reason: str
    part: str | None = Field(default=None, exclude_if=lambda v: v is None)  # a split synthesis: whose Φ


class SelectionEdge(Frozen):
    """One edge of the selection graph the card draws."""

    pair: list[str]
    status: Literal["selected", "forced in the draft", "forced by a reviewer", "dropped by a reviewer"]


class SignedReview(Frozen):
    """A review that counted: who (their role in the approvers registry), the hash they signed, and whether their
    key verified it (False only under the controller's sandbox switch for unsigned decisions)."""

    review: EdgeReview
    role: str
    review_sha256: str
    identity_verified: bool
    time: str


class SelectionRecord(Frozen):
    """The reviewed selection: the proposal, every review that counted and the resulting pairs. Written beside the
    selection run, named by the proposed spec (``selection_review``) and drawn on the card."""

    draft_agreement_sha256: str
    proposal: Proposal
    reviews: list[SignedReview] = Field(default_factory=list)
    changes: list[EdgeChange] = Field(default_factory=list)
    pairs: list[list[str]]
    part: str | None = Field(default=None, exclude_if=lambda v: v is None)  # a split synthesis: whose records

    def graph(self) -> list[SelectionEdge]:
        """Every edge the card draws, with its status after the reviewers' drops and forces
        (:func:`selection_graph`)."""
        return selection_graph(self.proposal, self.changes)


class SplitSelectionRecord(Frozen):
    """A split synthesis's reviewed selection: one :class:`SelectionRecord` per part (each part's proposal, made on
    its own records at its own share of ρ, its changes and its pairs; every review that counted is in each, as a
    reviewer signs off the whole split's selection)."""

    draft_agreement_sha256: str
    parts: list[SelectionRecord] = Field(min_length=2)


def selection_records(
    draft_sha256: str,
    proposals: dict[str | None, Proposal],
    pairs: dict[str | None, list[list[str]]],
    reviews: list[SignedReview] | None = None,
    changes: list[EdgeChange] | None = None,
) -> SelectionRecord | SplitSelectionRecord:
    """The reviewed selection as written beside the run: one model's record, or a split's record of every part."""
    records = [
        SelectionRecord(
            draft_agreement_sha256=draft_sha256,
            proposal=proposal,
            reviews=reviews or [],
            changes=[c for c in changes or [] if c.part == part],
            pairs=pairs[part],
            part=part,
        )
        for part, proposal in proposals.items()
    ]
    if list(proposals) == [None]:
        return records[0]
    return SplitSelectionRecord(draft_agreement_sha256=draft_sha256, parts=records)


def load_selection_records(path: Path) -> list[SelectionRecord]:
    """The reviewed selection a spec names, as one record per model (a split's: each part's, named); an unreadable
    file is one :class:`SpecError` line."""
    from sdgov.base.loading import load_model_file, read_yaml

    raw = read_yaml(path, SpecError, "reviewed selection")
    if isinstance(raw, dict) and "parts" in raw:
        return load_model_file(SplitSelectionRecord, path, SpecError, "reviewed selection").parts
    return [load_model_file(SelectionRecord, path, SpecError, "reviewed selection")]


def review_sha256(review: EdgeReview) -> str:
    """Hex SHA-256 of the review's canonical JSON: the hash its reviewer signs."""
    return sha256_json(review.model_dump(mode="json"))


def parse_pairs(text: str, where: str) -> list[list[str]]:
    """``"A,B; C,D,E"`` → ``[["A", "B"], ["C", "D", "E"]]`` (the form's and the CLI's way to name Φ's pairs — and
    triples, which a selection may propose and a reviewer may drop); anything else is one :class:`SpecError`."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        clique = [a.strip() for a in part.split(",")]
        if len(clique) not in (2, 3) or not all(clique):
            raise SpecError(f"{part!r} is not a pair (or triple) of attributes", where, "write them as 'A,B; C,D,E'")
        out.append(clique)
    return out


def apply_review(
    pairs: list[list[str]],
    review: EdgeReview,
    attributes: list[str],
    sizes: dict[str, int],
    max_marginal_cells: int,
    fits: Callable[[list[tuple[str, str]]], bool] = lambda pairs: True,
) -> tuple[list[list[str]], list[EdgeChange]]:
    """The pairs after ``review``, and its changes — or one :class:`SpecError` naming the first bad edit."""
    where = f"review by {review.reviewer}"
    current = [frozenset(p) for p in pairs]
    changes: list[EdgeChange] = []
    for pair in review.drop:
        if frozenset(pair) not in current:
            raise SpecError(f"cannot drop {pair}: it is not in the proposed Φ", where, f"drop one of {pairs}")
        current.remove(frozenset(pair))
        changes.append(
            EdgeChange(action="drop", pair=list(pair), reviewer=review.reviewer, reason=review.reason, part=review.part)
        )
    for pair in review.force:
        unknown = [a for a in pair if a not in attributes]
        if len(pair) != 2 or pair[0] == pair[1] or unknown:
            raise SpecError(f"cannot force {pair}: not a pair of Φ's attributes", where, f"use {attributes}")
        if any(frozenset(pair) <= c for c in current):
            raise SpecError(
                f"cannot force {pair}: it is already in Φ (or inside one of its triples)",
                where,
                "force a pair that is not proposed",
            )
        cells = sizes[pair[0]] * sizes[pair[1]]
        if cells > max_marginal_cells:
            raise SpecError(
                f"cannot force {pair}: {cells:,} cells, over the limit of {max_marginal_cells:,}",
                where,
                "coarsen the attributes or force another pair",
            )
        current.append(frozenset(pair))
        changes.append(
            EdgeChange(
                action="force", pair=list(pair), reviewer=review.reviewer, reason=review.reason, part=review.part
            )
        )
    order = {a: i for i, a in enumerate(attributes)}
    out = [sorted(p, key=order.__getitem__) for p in current]
    if not fits([(a, b) for a, b in out]):
        raise SpecError(
            "the reviewed Φ's model exceeds the domain limit",
            where,
            "drop a pair, or force fewer pairs that close cycles",
        )
    return out, changes


def selection_graph(proposal: Proposal, changes: list[EdgeChange]) -> list[SelectionEdge]:
    """Every edge that was proposed, forced or dropped, with what happened to it last."""
    status: dict[frozenset[str], SelectionEdge] = {}
    for e in proposal.selected:
        label = "forced in the draft" if e.how == "forced" else "selected"
        status[frozenset(e.pair)] = SelectionEdge(pair=e.pair, status=label)
    for c in changes:
        label = "dropped by a reviewer" if c.action == "drop" else "forced by a reviewer"
        status[frozenset(c.pair)] = SelectionEdge(pair=c.pair, status=label)
    return list(status.values())


def check_reviewer(
    approvers: Approvers, review: EdgeReview, challenge: Challenge, signature: str, allow_unsigned: bool = False
) -> tuple[Approver, bool]:
    """The registered person who signed this review (any role: stakeholders review, the controller agrees later),
    and whether their key verified it — or :class:`ApprovalRefused`."""
    how = "sign the review's hash with your registered key (subject phi_review, decision review)"
    who = approvers.find(review.reviewer)
    if who is None:
        raise ApprovalRefused(f"{review.reviewer!r} is not in the approvers registry", "approvers.yaml", how)
    if challenge.subject != SUBJECT or challenge.sha256 != review_sha256(review):
        raise ApprovalRefused("the challenge is not for this review", "phi_review", how)
    if not signature.strip():
        if allow_unsigned:
            return who, False
        raise ApprovalRefused(f"the review by {who.name!r} is not signed", "phi_review", how)
    try:
        stmt, sig = decode_statement(signature, SignOffStatement)
    except ValueError as exc:
        raise ApprovalRefused(f"the signature of {who.name!r} is unreadable: {exc}", "phi_review", how) from None
    expected = {**challenge.model_dump(), "decision": DECISION}
    wrong = [k for k, v in expected.items() if getattr(stmt, k) != v]
    if wrong or not same_person(stmt.approver, who.name):
        raise ApprovalRefused(
            f"the signed statement does not match this review ({', '.join(wrong or ['approver'])} differ)",
            "phi_review",
            how,
        )
    if not verifies(who.key(), sig, signed_bytes(stmt)):
        raise ApprovalRefused(f"the signature does not verify with {who.name!r}'s registered key", "phi_review", how)
    return who, True


def proposals_md(
    proposals: dict[str | None, Proposal],
    pairs: dict[str | None, list[list[str]]],
    changes: list[EdgeChange],
    rho_budget: float,
) -> str:
    """Every part's proposal as the reviewers read it (:func:`review_md` of each; one model's alone), so a reviewer
    sees which part each pair belongs to."""
    return "\n".join(
        review_md(p, pairs[part], [c for c in changes if c.part == part], rho_budget, part)
        for part, p in proposals.items()
    )


def review_md(
    proposal: Proposal,
    pairs: list[list[str]],
    changes: list[EdgeChange],
    rho_budget: float,
    part: str | None = None,
) -> str:
    """The proposal as the reviewers read it (the Prefect artifact and the pause form): the pairs now in Φ with
    their noisy (DP) scores, the changes so far with who and why, the rejected candidates nearest the threshold,
    and what the selection spent — for a split synthesis, of the ``part`` named in its title. Everything shown is
    DP or public: no figure computed on the data without noise."""

    def score(s: float | None) -> str:
        return "–" if s is None else f"{s:,.0f}"

    def md(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    b = proposal.budget
    share = b.rho / rho_budget if rho_budget else 0.0
    status = {frozenset(e.pair): e.status for e in selection_graph(proposal, changes)}
    scores = {frozenset(e.pair): e.noisy_score for e in [*proposal.selected, *proposal.near_threshold]}
    lines = [
        f"## Φ proposal{'' if part is None else f' of split part {part!r}'}: private selection "
        f"({proposal.method.upper()}) awaiting the stakeholders' review",
        "",
        f"The selection{'' if part is None else ' of this part, on its records only,'} spent **ρ = {b.rho:.6g}** "
        f"({share:.1%} of the release's ρ = {rho_budget:.6g}): "
        f"ρ = {b.rho_mechanism:.6g} for the exponential mechanism ({b.rounds} round(s)) and "
        f"ρ = {b.rho_scores:.6g} for the noisy scores below. Scores are the L1 distance of each pair's table from "
        "independence, released with Gaussian noise (DP): higher means more dependent.",
        "",
        f"### Pairs in Φ now ({len(pairs)})",
        "",
        "| pair | how | noisy score (DP) |",
        "|---|---|---|",
    ]
    lines += [
        f"| {md(' × '.join(p))} | {status.get(frozenset(p), '?')} | {score(scores.get(frozenset(p)))} |" for p in pairs
    ]
    dropped = [e for e in selection_graph(proposal, changes) if e.status == "dropped by a reviewer"]
    if dropped:
        lines += ["", "Dropped: " + "; ".join(md(" × ".join(e.pair)) for e in dropped)]
    lines += ["", "### Rejected candidates nearest the threshold", ""]
    if proposal.near_threshold:
        lines += ["| pair | noisy score (DP) | cells |", "|---|---|---|"]
        lines += [
            f"| {md(' × '.join(c.pair))} | {score(c.noisy_score)} | {c.cells:,} |" for c in proposal.near_threshold
        ]
    else:
        lines.append("none (no score budget, or no candidate left)")
    if proposal.excluded:
        lines += ["", "Excluded by the draft: " + "; ".join(md(" × ".join(p)) for p in proposal.excluded)]
    if proposal.over_cell_limit:
        lines += ["", "Over the cell limit: " + "; ".join(md(" × ".join(p)) for p in proposal.over_cell_limit)]
    lines += ["", "### Changes by reviewers", ""]
    if changes:
        lines += ["| change | pair | reviewer | why |", "|---|---|---|---|"]
        lines += [f"| {c.action} | {md(' × '.join(c.pair))} | {md(c.reviewer)} | {md(c.reason)} |" for c in changes]
    else:
        lines.append("none yet")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ReviewLimits:
    """What a review may do to Φ (:func:`apply_review`'s limits): the attributes, their sizes, the largest marginal
    and whether a set of pairs still fits the generator's model."""

    attributes: list[str]
    sizes: dict[str, int]
    max_marginal_cells: int
    fits: Callable[[list[tuple[str, str]]], bool] = lambda pairs: True


def accept_review(
    pause: Pause, review: EdgeReview, signature: str, pairs: list[list[str]], limits: ReviewLimits
) -> tuple[Approver, bool, list[list[str]], list[EdgeChange]]:
    """Whether a review submitted to ``pause`` counts: its nonce unused, signed by a registered person over the
    review's own hash for this pause (unsigned only under the sandbox switch), and within the selection's limits.
    The reviewer, whether their key verified it, the pairs after it and its changes — or one :class:`SdgovError`."""
    check_nonce_unused(pause.registry, pause.nonce)
    if review.proposal_sha256 != pause.sha256:
        raise ApprovalRefused(
            "the review names another Φ proposal than the one under review",
            "phi_review",
            "review the proposal this run shows ('sdgov runs'), then sign again",
        )
    who, verified = check_reviewer(
        controller_approvers(pause.registry),
        review,
        pause.challenge(SUBJECT, review_sha256(review)),
        signature,
        allow_unsigned=load_config(pause.registry).allow_unsigned_ui_approvals,
    )
    after, changes = apply_review(
        pairs, review, limits.attributes, limits.sizes, limits.max_marginal_cells, limits.fits
    )
    return who, verified, after, changes


def changes_text(changes: list[EdgeChange]) -> str:
    """The changes as the log and the run's log line write them: 'drop A × B; force C × D'."""
    return "; ".join(f"{c.action} {' × '.join(c.pair)}" for c in changes)


def review_comment(review: EdgeReview, changes: list[EdgeChange]) -> str:
    """The ``phi_reviewed`` event's comment: the changes and why."""
    return f"{changes_text(changes)} — why: {review.reason}" if changes else f"no change — why: {review.reason}"


def format_pairs(pairs: list[list[str]]) -> str:
    """The form's text for ``pairs`` (read back by :func:`parse_pairs` to the same lists)."""
    return "; ".join(",".join(p) for p in pairs)


def edge_review(
    reviewer: str, drop: str, force: str, reason: str, close: bool, proposal_sha256: str, part: str | None = None
) -> EdgeReview:
    """The review a form holds, as signed (bound to the proposal under review; for a split synthesis, to the part
    whose Φ it edits): a malformed pair or an empty reason is one :class:`SdgovError`."""
    where = f"review by {reviewer}"
    try:
        return EdgeReview(
            reviewer=reviewer,
            drop=parse_pairs(drop, where),
            force=parse_pairs(force, where),
            reason=reason,
            close=close,
            proposal_sha256=proposal_sha256,
            part=part,
        )
    except ValidationError as exc:
        raise SdgovError(f"the review is incomplete: {exc.errors()[0]['msg']}", where, "give a reason") from None


@dataclass(frozen=True)
class AcceptedReview:
    """A review that counted (already logged): who signed it, every part's pairs after it and its changes."""

    who: Approver
    signed: SignedReview
    pairs: dict[str | None, list[list[str]]]
    changes: list[EdgeChange]


def review_target(review: EdgeReview, parts: list[str | None]) -> str | None:
    """The part whose Φ ``review`` edits (``None``: the one model's) — or one :class:`SpecError`: a split's review
    that drops or forces a pair names one of its parts; a review that changes nothing (a close) may name none."""
    where = f"review by {review.reviewer}"
    if parts == [None]:
        if review.part is not None:
            raise SpecError(f"the review names part {review.part!r}, but Φ is one model's", where, "name no part")
        return None
    if review.part is None:
        if review.drop or review.force:
            raise SpecError(
                "the review drops or forces a pair of a split synthesis without naming the part",
                where,
                f"name one of the parts {parts} (sdgov review --part NAME, or the form's Part field)",
            )
        return review.part
    if review.part not in parts:
        raise SpecError(f"the review names part {review.part!r}, which the split has not", where, f"use one of {parts}")
    return review.part


def decide_review(
    pause: Pause,
    *,
    reviewer: str,
    drop: str,
    force: str,
    reason: str,
    close: bool,
    signature: str,
    pairs: dict[str | None, list[list[str]]],
    limits: dict[str | None, ReviewLimits],
    part: str = "",
) -> AcceptedReview | Refused:
    """Apply the rules to a review submitted to ``pause`` (:func:`accept_review`, on the Φ of the part it names for a
    split synthesis) and log the outcome: ``phi_reviewed`` and the review that counted, or ``phi_review_refused``
    and :class:`Refused` — the flow then pauses again with its note."""
    try:
        review = edge_review(reviewer, drop, force, reason, close, pause.sha256, part.strip() or None)
        target = review_target(review, list(pairs))
        edits = next(iter(pairs)) if target is None and None not in pairs else target  # a close of a split: no edit
        who, verified, after, changes = accept_review(pause, review, signature, pairs[edits], limits[edits])
    except SdgovError as exc:
        return record_review_refused(pause, reviewer, exc, f"drop: {drop} | force: {force} | why: {reason}")
    h = review_sha256(review)
    record_review(
        pause,
        who,
        verified,
        review_sha256=h,
        close=review.close,
        comment=(f"part {target!r}: " if target is not None else "") + review_comment(review, changes),
        drop=format_pairs(review.drop),
        force=format_pairs(review.force),
        signature=signature,
    )
    signed = SignedReview(review=review, role=who.role, review_sha256=h, identity_verified=verified, time=utcnow())
    return AcceptedReview(who=who, signed=signed, pairs={**pairs, edits: after}, changes=changes)
