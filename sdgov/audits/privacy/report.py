"""The card's "Privacy evidence" section: a plain summary, the policy checks, and two inline SVG plots —
per-record privacy-gain bars with their CIs beside the DP bound, and DCR histograms (synthetic vs real holdout).
"""

from __future__ import annotations

import math
from typing import Any

from sdgov.audits.privacy.run import PrivacyAuditResult, summary
from sdgov.base.svg import pyplot, to_svg


def pg_plot_svg(result: PrivacyAuditResult) -> str | None:
    """Per-record privacy gain PG = 1 − Adv with its CI; the DP floors PG ≥ 1 − bound as vertical lines."""
    if not result.targets:
        return None
    plt = pyplot()

    rows = result.targets
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(rows) + 1.6))
    colours = {"outlier": "#c51b7d", "random": "#4d9221"}
    for i, r in enumerate(rows):
        lo, hi = max(0.0, r.privacy_gain_ci[0]), min(1.0, r.privacy_gain_ci[1])
        pg = min(1.0, max(0.0, r.privacy_gain))
        ax.barh(i, pg, color=colours.get(r.target.kind, "grey"), alpha=0.85)
        ax.errorbar(pg, i, xerr=[[pg - lo], [hi - pg]], fmt="none", ecolor="black", capsize=3, lw=1)
    ax.set_yticks(range(len(rows)), [f"{r.target.kind} #{r.target.index} ({r.feature})" for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.02)
    ax.set_xlabel("privacy gain PG = 1 − (TPR − FPR) of the linkability attack (1 = attacker learns nothing)")
    floors = [
        (result.dp_adv_bound, "--", f"DP floor 1 − (e^ε − 1), ε = {result.claimed_epsilon:.3g}"),
        (result.dp_adv_bound_tight, ":", "DP floor of a replaced record, 1 − (e^2ε − 1 + 2δ')/(e^2ε + 1)"),
    ]
    for bound, style, label in floors:
        if bound is None:
            continue
        floor = 1 - bound
        if floor >= 0:  # a floor below 0 constrains nothing on this axis: said in the legend, not drawn off it
            ax.axvline(floor, color="#2166ac", ls=style, lw=1.2, label=f"{label} = {floor:.2f}")
        else:
            ax.plot([], [], color="#2166ac", ls=style, label=f"{label} = {floor:.2f} < 0: no constraint")
    for k, c in colours.items():
        ax.barh([0], [0], color=c, label=f"{k} target")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=1, fontsize=7, frameon=False)
    fig.tight_layout()
    return to_svg(fig)


def dcr_plot_svg(result: PrivacyAuditResult) -> str | None:
    """SVG bars of the distance to the closest training record, synthetic against real holdout records (shares); None
    without disclosure results."""
    d = result.disclosure
    if d is None:
        return None
    plt = pyplot()
    import numpy as np

    hs = np.asarray(d.dcr_synthetic.histogram, float)
    hh = np.asarray(d.dcr_holdout.histogram, float)
    x = np.arange(len(hs))
    fig, ax = plt.subplots(figsize=(7.5, 2.8))
    ax.bar(x - 0.2, hs / max(hs.sum(), 1), width=0.4, color="#c51b7d", label="synthetic → training")
    ax.bar(x + 0.2, hh / max(hh.sum(), 1), width=0.4, color="#7f7f7f", label="real holdout → training (baseline)")
    ax.set_xticks(x)
    ax.set_xlabel("distance to closest training record (attributes that differ)")
    ax.set_ylabel("share of records")
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return to_svg(fig)


def privacy_section(result: PrivacyAuditResult, plots: bool = True) -> dict[str, Any]:
    """Everything the card's "Privacy evidence" section shows (JSON-serialisable)."""
    s = summary(result)
    c = result.canary
    lines = []
    if result.epsilon_lower is not None and c is not None:
        lines.append(
            f"Empirical DP lower bound ε_lower = {result.epsilon_lower:.3g} at confidence {1 - c.beta:g} "
            f"({c.m} canaries, {c.d} dimensions; ν̂ = {c.nu_hat:.4g}, the sum of the canaries' distances to their "
            "closest synthetic record, from which the bound is computed: the smaller, the more the release gives "
            "the canaries away)"
            + (f" against the claimed ε = {result.claimed_epsilon:.3g}." if result.claimed_epsilon else ".")
        )
    if result.one_run is not None:
        o = result.one_run
        lines.append(
            f"One-run canary audit (Steinke et al. 2023): {o.canaries} canaries, ε_lower = {o.epsilon_lower:.3g} at "
            f"confidence {1 - o.beta:g}."
        )
    if result.memorisation is not None:
        mm = result.memorisation
        lines.append(
            f"Copy share beyond Φ {mm.copy_share:+.4f} (CI {mm.copy_share_ci[0]:+.4f} to {mm.copy_share_ci[1]:+.4f}, "
            f"every pair of {mm.worlds} training sets): 0 = nothing outside the agreed statistics reproduced, 1 = the "
            "training rows copied."
        )
    if result.beyond_phi is not None and result.beyond_phi.ran:
        b = result.beyond_phi
        lines.append(
            f"Interactions beyond Φ: p = {b.p_value:.3g} ({b.synth_rows:,} synthetic records against the Φ-only model "
            f"of their own Φ tables, {b.bootstrap} samples of it; largest on {b.worst_table})."
        )
    if result.min_privacy_gain is not None:
        lines.append(
            f"Lowest per-record privacy gain {result.min_privacy_gain:.2f} over {len(result.targets)} "
            f"targets ({sum(r.target.kind == 'outlier' for r in result.targets)} outliers)."
        )
    if result.disclosure is not None:
        d = result.disclosure
        lines.append(
            f"{d.unique.synthetic} real-unique training records reproduced exactly (a same-size "
            f"independent real sample: {d.unique.independent}; unseen holdout records: "
            f"{d.unique.synthetic_holdout})."
        )
    return {
        "verdict": result.verdict,
        "summary": " ".join(lines),
        "checks": [x.model_dump() for x in result.checks],
        "key_figures": {
            k: s[k]
            for k in (
                "epsilon_lower",
                "claimed_epsilon",
                "claimed_delta",
                "min_privacy_gain",
                "exact_matches",
                "exact_matches_unique",
                "exact_matches_unique_baseline",
                "copy_share",
                "beyond_phi_p_value",
                "dp_adv_bound",
                "dp_adv_bound_tight",
                "seconds",
            )
        },
        "targets": s["targets"],
        "outlier_rule": result.outlier_rule,
        "generator": result.generator,
        "settings": result.settings,
        "policy": result.policy,
        "pg_plot_svg": pg_plot_svg(result) if plots else None,
        "dcr_plot_svg": dcr_plot_svg(result) if plots else None,
        "note": (
            "Privacy evidence is computed by the data controller on the confidential data. The attacks are "
            "empirical: they can show a claim is false (ε_lower above the claim) but never prove it true."
        ),
    }


def fmt(x: float | None, p: int = 3) -> str:
    """``x`` to ``p`` significant digits; — for None or NaN."""
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{p}g}"
