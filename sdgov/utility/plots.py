"""The report's figures, as inline SVG strings (no external files): bars, heatmap, box plot, radar."""

from __future__ import annotations

import numpy as np

from sdgov.base.svg import pyplot, to_svg

COLOURS = {"synthetic": "#1b7837", "independent": "#c51b7d", "bootstrap": "#4575b4"}
LABELS = {
    "synthetic": "synthetic",
    "independent": "independent marginals (baseline)",
    "bootstrap": "real bootstrap (baseline)",
}


def univariate_bars(datasets: dict[str, dict]) -> str:
    """Coverage and similarity per column, one bar per dataset."""
    plt = pyplot()
    names = list(datasets)
    cols = [r["column"] for r in datasets[names[0]]["univariate"]["columns"]]
    fig, axes = plt.subplots(1, 2, figsize=(9, 0.32 * len(cols) * len(names) / 2 + 2.2), sharey=True)
    h = 0.8 / len(names)
    y = np.arange(len(cols))
    for ax, key, title in ((axes[0], "coverage", "coverage"), (axes[1], "similarity", "similarity (1 − TVD / 1 − KS)")):
        for i, n in enumerate(names):
            vals = [r[key] for r in datasets[n]["univariate"]["columns"]]
            ax.barh(y + i * h, vals, height=h, color=COLOURS.get(n, "grey"), label=LABELS.get(n, n))
        ax.set_xlim(0, 1.0)  # from 0: a bar's length is its value
        ax.set_title(title, fontsize=9)
    axes[0].set_yticks(y + h * (len(names) - 1) / 2, cols, fontsize=8)
    axes[0].invert_yaxis()
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(names), fontsize=8, frameon=False)  # below, not on bars
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return to_svg(fig)


def heatmap(b: list[list[float]], attributes: list[str], in_phi: list[list[bool]]) -> str:
    """B = 1 − |R − S|/2; agreed (Φ) pairs outlined in black."""
    plt = pyplot()
    from matplotlib.patches import Rectangle

    m = np.asarray(b)
    n = len(attributes)
    fig, ax = plt.subplots(figsize=(0.62 * n + 3, 0.62 * n + 2))
    im = ax.imshow(m, vmin=0.5, vmax=1.0, cmap="RdYlGn")
    for i in range(n):
        for j in range(n):
            if in_phi[i][j]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.6))
            if n <= 12 and i != j:
                ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=9)
    ax.set_xticks(range(n), attributes, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(n), attributes, fontsize=7)
    fig.colorbar(im, ax=ax, shrink=0.7, label="B = 1 − |R − S| / 2")
    ax.set_title("pairwise association preserved (outlined: inside an agreed Φ marginal)", fontsize=8)
    fig.tight_layout()
    return to_svg(fig)


def specks_box(datasets: dict[str, dict]) -> str:
    """SVG box plot of every dataset's per-seed SPECKS distances, on [0, 1] (0 = indistinguishable)."""
    plt = pyplot()
    names = list(datasets)
    fig, ax = plt.subplots(figsize=(6, 2.8))
    bp = ax.boxplot([datasets[n]["specks"]["ks"] for n in names], orientation="horizontal", patch_artist=True)
    for patch, n in zip(bp["boxes"], names):
        patch.set_facecolor(COLOURS.get(n, "grey"))
        patch.set_alpha(0.6)
    ax.set_yticks(range(1, len(names) + 1), [LABELS.get(n, n) for n in names], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("SPECKS: KS distance of propensity scores (0 = indistinguishable)", fontsize=8)
    fig.tight_layout()
    return to_svg(fig)


def radar(radar_data: dict) -> str:
    """Arnold & Neunhoeffer (2020) Fig. 4 style: one polygon per dataset, every axis scaled to [0, 1]."""
    plt = pyplot()
    axes = radar_data["axes"]
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False).tolist()
    import textwrap

    fig = plt.figure(figsize=(7.2, 6.4))
    ax = fig.add_subplot(111, polar=True)
    for name, values in radar_data["series"].items():
        v = [0.0 if x is None else x for x in values]
        ax.plot(
            angles + angles[:1],
            v + v[:1],
            color=COLOURS.get(name, "grey"),
            label=LABELS.get(name, name),
            linewidth=1.6 if name == "synthetic" else 1.0,
        )
        ax.fill(angles + angles[:1], v + v[:1], color=COLOURS.get(name, "grey"), alpha=0.12)
    ax.set_xticks(angles, [textwrap.fill(a, 18, break_long_words=False) for a in axes], fontsize=8)
    ax.tick_params(axis="x", pad=14)
    ax.set_ylim(0, 1)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0], ["", "0.5", "", "1"], fontsize=6)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, fontsize=7, frameon=False)
    fig.tight_layout()
    return to_svg(fig)
