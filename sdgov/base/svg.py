"""Matplotlib figures as inline SVG strings: how the card and the reports embed plots (no external files).

pyplot is imported on first use (it is slow to import) on the Agg backend (no display), and the SVG carries no
date, so the same figure always gives the same bytes.

Labels in the figures come from users (schema labels, attribute names): matplotlib escapes them in the SVG
(``&lt;script&gt;``), and ``text.parse_math`` is off so that a label holding ``$`` is drawn as written instead of
being parsed as mathtext — a label like ``$x^{$`` would otherwise raise deep inside the utility report, after
the noise was drawn.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from types import ModuleType
from typing import Any


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # user labels are text, never mathtext
    matplotlib.rcParams["svg.fonttype"] = "path"  # text as paths (the default): no user text in SVG elements
    import matplotlib.pyplot as plt

    return plt


def to_svg(fig: Any) -> str:
    """The figure as an ``<svg>`` element (the XML prolog dropped); the figure is closed."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    pyplot().close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg") :]


def circle_figure(names: Sequence[str]) -> tuple[Any, Any, dict[str, tuple[float, float]]]:
    """The card's attribute graphs: a figure sized for ``names``, its axes, and each name's place on the unit circle,
    clockwise from the top in the order given."""
    n = len(names)
    size = 4.2 if n <= 8 else 5.6 if n <= 16 else 7.5
    fig, ax = pyplot().subplots(figsize=(size + 2.4, size))
    angle = {a: math.pi / 2 - 2 * math.pi * i / max(n, 1) for i, a in enumerate(names)}
    return fig, ax, {a: (math.cos(t), math.sin(t)) for a, t in angle.items()}


def circle_nodes(ax: Any, pos: dict[str, tuple[float, float]], markersize: float, label_at: float) -> None:
    """One node per name, its label outside the circle at ``label_at`` times its place, away from the centre."""
    for a, (x, y) in pos.items():
        ax.plot([x], [y], "o", markersize=markersize, color="#f7f7f7", markeredgecolor="#333333", zorder=3)
        ax.text(
            label_at * x,
            label_at * y,
            a,
            ha="left" if x > 0.05 else "right" if x < -0.05 else "center",
            va="bottom" if y > 0.05 else "top" if y < -0.05 else "center",
            fontsize=8,
        )


def finish_circle(fig: Any, ax: Any) -> Any:
    """The legend above the graph, room for the labels, no axes; the figure."""
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=1, fontsize=8, frameon=False)
    ax.set_xlim(-1.9, 1.9)
    ax.set_ylim(-1.45, 1.45)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.tight_layout()
    return fig
