"""The card's selection section: how Φ's pairs were chosen (private selection, then the stakeholders' review).

ONS showed stakeholders which census marginals MST chose and let them force and drop edges. The card keeps that
record public: a graph of the attributes with every pair that was selected, forced or dropped drawn distinctly
(selected solid, forced bold in its own colour, dropped dashed grey), each reviewer's change with the reason, and
the budget the selection took (its ρ and its share of the release's ρ). Only DP or public quantities appear: the
noisy scores were released under the selection's budget, the rest is post-processing or the reviewers' words.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from pydantic import BaseModel, Field

from sdgov.base.hashing import sha256_bytes
from sdgov.base.svg import circle_figure, circle_nodes, finish_circle, to_svg
from sdgov.budget.accounting import PrivacyPlan
from sdgov.measurement.selection.review import EdgeChange, SelectionRecord

STYLE = {  # status → (line style, width, colour, legend)
    "selected": ("-", 1.6, "#1b7837", "selected by the private selection"),
    "forced in the draft": ("-", 3.4, "#2166ac", "forced by the analyst's draft (bold)"),
    "forced by a reviewer": ("-", 3.4, "#e08214", "forced by a reviewer (bold)"),
    "dropped by a reviewer": ((0, (4, 3)), 1.2, "#999999", "dropped by a reviewer (dashed, not in Φ)"),
}


class CardEdge(BaseModel):
    pair: list[str]
    status: str  # a key of STYLE
    noisy_score: float | None  # DP (Gaussian-noised L1 score), None for a pair the selection did not score


class Reviewer(BaseModel):
    name: str
    role: str
    identity_verified: bool


class CardSelection(BaseModel):
    method: str
    mechanism: str
    rho: float  # the selection's own ρ (exponential mechanism + noisy scores)
    rho_mechanism: float
    rho_scores: float
    release_rho: float  # the release's composed ρ, which includes ``rho``
    share: float  # rho / release_rho
    attributes: list[str]
    edges: list[CardEdge]
    changes: list[EdgeChange]
    reviewers: list[Reviewer]
    record_sha256: str
    part: str | None = Field(default=None, exclude_if=lambda v: v is None)  # a split synthesis: whose records


def card_selection(record: SelectionRecord, record_bytes: bytes, plan: PrivacyPlan) -> CardSelection:
    """The section from the reviewed selection and the release's privacy plan (a split part's record: that part's
    selection, its share of the whole release's ρ)."""
    p = record.proposal
    scores = {frozenset(e.pair): e.noisy_score for e in [*p.selected, *p.near_threshold]}
    edges = [CardEdge(pair=e.pair, status=e.status, noisy_score=scores.get(frozenset(e.pair))) for e in record.graph()]
    return CardSelection(
        method=p.method,
        mechanism=p.mechanism,
        rho=p.budget.rho,
        rho_mechanism=p.budget.rho_mechanism,
        rho_scores=p.budget.rho_scores,
        release_rho=plan.rho,
        share=p.budget.rho / plan.rho if plan.rho else 0.0,
        attributes=p.attributes,
        edges=edges,
        changes=record.changes,
        reviewers=[
            Reviewer(name=r.review.reviewer, role=r.role, identity_verified=r.identity_verified) for r in record.reviews
        ],
        record_sha256=sha256_bytes(record_bytes),
        part=record.part,
    )


def selection_svg(sel: CardSelection) -> str:
    """The card's selection graph of ``sel`` as SVG text (:func:`draw_selection`)."""
    return to_svg(draw_selection(sel))


def draw_selection(sel: CardSelection) -> Any:
    """Attributes on a circle; one line per pair in the style of its status (a triple: the triangle of its three
    pairs), with a legend of the statuses."""
    fig, ax, pos = circle_figure(sel.attributes)
    for e in sel.edges:
        style, width, colour, _ = STYLE[e.status]
        for a, b in combinations(e.pair, 2):
            (x0, y0), (x1, y1) = pos[a], pos[b]
            ax.plot([x0, x1], [y0, y1], linestyle=style, linewidth=width, color=colour, zorder=1)
    circle_nodes(ax, pos, markersize=9, label_at=1.15)
    for style, width, colour, label in STYLE.values():
        ax.plot([], [], linestyle=style, linewidth=width, color=colour, label=label)
    return finish_circle(fig, ax)
