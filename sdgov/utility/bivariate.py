"""Two-way fidelity: the matrix B = 1 − |R − S| / 2 of pairwise association (Arnold & Neunhoeffer 2020).

R and S hold the association of every pair of columns in the real and the synthetic data: Cramér's V when
either column is categorical, Spearman's ρ between two numeric (binned) columns. B is 1 where the synthetic data
reproduces the association exactly; pairs inside an agreed Φ marginal are flagged so the heatmap can outline them.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from sdgov.schema import Schema
from sdgov.tables import contingency_table


def cramers_v(table: np.ndarray) -> float:
    """Cramér's V of a contingency table (rows/columns that are empty are ignored)."""
    t = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0].astype(np.float64)
    n = t.sum()
    k = min(t.shape) - 1 if t.size else 0
    if n == 0 or k <= 0:
        return 0.0
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / n
    chi2 = float(((t - expected) ** 2 / expected).sum())
    return float(np.sqrt(min(1.0, chi2 / (n * k))))


def association(codes: pd.DataFrame, schema: Schema, a: str, b: str) -> float:
    ca, cb = schema.by_name[a], schema.by_name[b]
    if ca.kind == "numeric" and cb.kind == "numeric":
        rho = spearmanr(codes[a].to_numpy(), codes[b].to_numpy()).statistic
        return 0.0 if np.isnan(rho) else float(rho)
    return cramers_v(contingency_table(codes, (a, b), (ca.size, cb.size)))


def association_matrix(codes: pd.DataFrame, schema: Schema, attributes: list[str]) -> np.ndarray:
    m = np.eye(len(attributes))
    for (i, a), (j, b) in itertools.combinations(enumerate(attributes), 2):
        m[i, j] = m[j, i] = association(codes, schema, a, b)
    return m


def phi_pairs(attributes: list[str], cliques: list[tuple[str, ...]]) -> np.ndarray:
    """Boolean matrix: True where the pair lies inside some agreed marginal."""
    idx = {a: i for i, a in enumerate(attributes)}
    m = np.zeros((len(attributes), len(attributes)), dtype=bool)
    for c in cliques:
        for a, b in itertools.combinations([x for x in c if x in idx], 2):
            m[idx[a], idx[b]] = m[idx[b], idx[a]] = True
    return m


def bivariate(
    real_assoc: np.ndarray, synth: pd.DataFrame, schema: Schema, attributes: list[str], in_phi: np.ndarray
) -> dict:
    s = association_matrix(synth, schema, attributes)
    b = 1 - np.abs(real_assoc - s) / 2
    off = ~np.eye(len(attributes), dtype=bool)

    def mean(mask: np.ndarray) -> float | None:
        return float(b[mask].mean()) if mask.any() else None

    worst = sorted(
        (
            (float(b[i, j]), attributes[i], attributes[j], bool(in_phi[i, j]))
            for i, j in itertools.combinations(range(len(attributes)), 2)
        )
    )[:5]
    return {
        "synthetic": s.round(6).tolist(),
        "B": b.round(6).tolist(),
        "mean_B": mean(off),
        "mean_B_in_phi": mean(off & in_phi),
        "mean_B_not_in_phi": mean(off & ~in_phi),
        "worst_pairs": [{"pair": [x, y], "B": v, "in_phi": p} for v, x, y, p in worst],
    }
