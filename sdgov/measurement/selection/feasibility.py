"""Whether a private selection can tell a dependent pair from noise: the records it needs at its budget.

A selection picks pairs by a noisy comparison of their scores (MST: the L1 distance of a pair's table from
independence; AIM: the model's weighted L1 error), each round through OpenDP's Gumbel report-noisy-max. A score is a
count of records, so it grows with them while the noise does not: with ``N`` records a pair whose table is a fraction
``d`` of ``N`` from independence stands out of ``m`` candidates' Gumbel noise of scale ``b`` only when
``d·N`` exceeds the spread of their maximum, about ``b·ln m``. Below that, the mechanism picks at random and its ρ buys
nothing — so a draft (a split synthesis's part: its records at its share of ρ) whose records do not reach
``b·ln m / MIN_DEPENDENCE`` is refused before any draw (:func:`sdgov.intake.preflight.check_selection_records`).
"""

from __future__ import annotations

import math

from sdgov.agreement.spec import Agreement
from sdgov.measurement.selection.aim import SELECT_PART
from sdgov.measurement.selection.mst import check_edges, gumbel_scale, pair_sensitivity, rounds_needed

MIN_DEPENDENCE = 0.1
"""The weakest dependence a selection must be able to see: a pair whose table is a tenth of the records away from
independence — the census extract's median pair (0.102 over its 136 pairs; age × marital status 0.76). Measured by
``benchmarks/bench_selection_feasibility.py``: at ρ = 0.005 over six census attributes, MST on random samples of
``n*`` records gets 76 % of the way from a choice at random to the noiseless tree (a quarter of ``n*``: 34 %; four
times ``n*``: 97 %)."""


def round_noise(agreement: Agreement, sizes: dict[str, int], rho: float) -> tuple[float, int] | None:
    """The Gumbel scale of one selection round at the selection's ``rho``, as the mechanism will plan it (MST: its
    Kruskal rounds and ``extra``; AIM: its first planned round), and the candidates it picks among; None when there is
    no choice to make (every pair forced, excluded or over the cell limit)."""
    sel = agreement.privacy.selection
    assert sel is not None
    attrs = agreement.attributes
    edges = check_edges(attrs, sizes, sel, agreement.limits.max_marginal_cells)
    if not edges.candidates:
        return None
    rho_rounds = rho * (1 - sel.scores)
    if sel.method == "aim":
        per_round = SELECT_PART * rho_rounds / (sel.rounds or 16 * len(attrs))
    else:
        tree = rounds_needed(attrs, edges.forced, edges.candidates)
        rounds = tree + min(sel.extra_rounds, len(edges.candidates) - tree)
        if rounds == 0:
            return None
        per_round = rho_rounds / rounds
    # a score of sensitivity s is divided by s before the mechanism: its noise is s times the scale on the score
    sensitivity = pair_sensitivity(sel) if sel.method == "mst" else 1.0
    return sensitivity * gumbel_scale(per_round), len(edges.candidates)


def min_selection_records(agreement: Agreement, sizes: dict[str, int], rho: float) -> int:
    """The fewest records on which a selection at ``rho`` can see a pair :data:`MIN_DEPENDENCE` of them away from
    independence through its round's noise (0 when there is no choice to make)."""
    noise = round_noise(agreement, sizes, rho)
    if noise is None:
        return 0
    scale, candidates = noise
    return math.ceil(scale * max(math.log(candidates), 1.0) / MIN_DEPENDENCE)
