"""The synthesis graph: which attributes the model links, and in which order the sampler draws them.

ONS published this picture of its census model for stakeholders. An edge joins two attributes the model holds in
one table: **solid** when an agreed marginal of Φ measured the pair, **dashed** when the model added it (the
junction tree's triangulation, or a structural zero's table, joins attributes Φ never measured together — the
model then carries only what Φ implies about them). Arrows point in sampling order: a record's attributes are
drawn one after another, each given the ones drawn before it that share a table with it.

Built from the generate stage's ``model_info.json`` (Φ as ``fitted_marginals``, the tables the sampler draws
from as ``model_cliques``, ``sampling_order``), so it is what the fit did, not what the spec asked.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from pydantic import BaseModel

from sdgov.base.svg import circle_figure, circle_nodes, finish_circle, to_svg

EdgeKind = Literal["phi", "model"]


class Edge(BaseModel):
    source: str  # drawn first
    target: str  # drawn after ``source``, given it
    kind: EdgeKind


class SynthesisGraph(BaseModel):
    title: str
    order: list[str]  # sampling order
    edges: list[Edge]


def synthesis_graph(model_info: dict[str, Any], title: str = "") -> SynthesisGraph | None:
    """The graph of one fitted model, or None when its model_info does not say its tables and order."""
    order = model_info.get("sampling_order")
    if not order:
        return None
    tables = model_info.get("model_cliques") or []
    rank = {a: i for i, a in enumerate(order)}
    phi = {frozenset(p) for m in model_info.get("fitted_marginals", []) for p in itertools.combinations(m, 2)}
    pairs = {frozenset(p) for t in tables for p in itertools.combinations(t, 2)}
    edges = []
    for pair in sorted(pairs, key=lambda p: sorted(rank[a] for a in p)):
        a, b = sorted(pair, key=rank.__getitem__)
        edges.append(Edge(source=a, target=b, kind="phi" if pair in phi else "model"))
    return SynthesisGraph(title=title, order=list(order), edges=edges)


def graph_svg(graph: SynthesisGraph) -> str:
    """The graph as inline SVG (see :func:`draw`)."""
    return to_svg(draw_synthesis_graph(graph))


def draw_synthesis_graph(graph: SynthesisGraph) -> Any:
    """A matplotlib figure: attributes on a circle clockwise in sampling order (numbered), Φ edges solid,
    model-added edges dashed, arrows from the attribute drawn first."""
    from matplotlib.patches import FancyArrowPatch

    fig, ax, pos = circle_figure(graph.order)
    for e in graph.edges:
        ax.add_patch(
            FancyArrowPatch(
                pos[e.source],
                pos[e.target],
                arrowstyle="-|>",
                mutation_scale=11,
                shrinkA=9,
                shrinkB=9,
                linestyle="-" if e.kind == "phi" else (0, (4, 3)),
                linewidth=1.4 if e.kind == "phi" else 1.0,
                color="#1b7837" if e.kind == "phi" else "#9970ab",
            )
        )
    circle_nodes(ax, pos, markersize=15, label_at=1.22)
    for i, a in enumerate(graph.order):
        ax.text(*pos[a], str(i + 1), ha="center", va="center", fontsize=8, zorder=4)
    ax.plot([], [], "-", color="#1b7837", label="measured together in Φ")
    ax.plot([], [], "--", color="#9970ab", label="added by the model (not measured together)")
    return finish_circle(fig, ax)
