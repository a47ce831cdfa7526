"""The decomposability result for the card: a Figure-1-style plot (two histograms of g_β*) and a section dict."""

from __future__ import annotations

from typing import Any

from sdgov.audits.decomposability.procedure import DecomposabilityResult
from sdgov.base.svg import pyplot, to_svg


def figure_svg(result: DecomposabilityResult) -> str:
    """Histograms of g_β*(synthetic) for the fits on D₊β* and D₋β* (as the paper's Figure 1), as an SVG string."""
    import numpy as np

    plt = pyplot()

    gp, gm = np.asarray(result.g_plus), np.asarray(result.g_minus)
    lo, hi = float(min(gp.min(), gm.min())), float(max(gp.max(), gm.max()))
    if hi <= lo:
        hi = lo + 1.0
    bins = np.linspace(lo, hi, max(6, min(30, 2 * result.K))).tolist()
    fig, ax = plt.subplots(figsize=(5.2, 2.8))
    ax.hist(gp, bins=bins, alpha=0.6, label="fits on D₊ (β*)", color="#1f77b4")
    ax.hist(gm, bins=bins, alpha=0.6, label="fits on D₋ (β*)", color="#d62728")
    ax.set_xlabel("g_β*(synthetic) = ⟨β*, Θ(synthetic)⟩")
    ax.set_ylabel("fits")
    ax.set_title(f"{result.verdict.upper()}: p = {result.p_value:.3g} (α = {result.alpha}, K = {result.K})", fontsize=9)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return to_svg(fig)


def decomposability_section(result: DecomposabilityResult) -> dict[str, Any]:
    """What the card's "Audit" section renders for the test (plain JSON types plus an inline SVG)."""
    control = None
    if result.control is not None:
        c = result.control
        control = {
            "generator": c.generator,
            "p_value": c.p_value,
            "caught": c.caught,
            "statement": (
                f"Positive control {c.generator} was caught (p = {c.p_value:.3g})"
                if c.caught
                else f"WARNING: positive control {c.generator} was NOT caught (p = {c.p_value:.3g}): "
                "the test may be underpowered, so 'pass' is weak evidence"
            ),
        }
    statement = (
        f"The generator {result.generator} shows no dependence on statistics outside Φ "
        f"(p = {result.p_value:.3g} ≥ α = {result.alpha})."
        if result.verdict == "pass"
        else f"The generator {result.generator} uses statistics outside Φ (p = {result.p_value:.3g} < α = "
        f"{result.alpha}): the card's claim is false and the release is blocked."
    )
    return {
        "title": "Black-box decomposability test (Houssiau et al. 2022)",
        "verdict": result.verdict,
        "passed": result.verdict == "pass",
        "p_value": result.p_value,
        "alpha": result.alpha,
        "K": result.K,
        "rows": result.rows,
        "effect_size": result.effect_size,
        "statement": statement,
        "control": control,
        "basis": {k: v for k, v in result.basis.items() if k != "move_sets"},
        "top_cells": result.top_cells[:5],
        "top_interactions": result.top_interactions,
        "timing": result.timing,
        "seconds": result.seconds,
        "figure_svg": figure_svg(result),
    }
