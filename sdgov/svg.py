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
