"""Two-way fidelity: the matrix B = 1 − |R − S| / 2 of pairwise association (Arnold & Neunhoeffer 2020).

R and S hold the association of every pair of columns in the real and the synthetic data: Cramér's V when
either column is categorical, Spearman's ρ between two numeric (binned) columns. Both come from the pair's exact
two-way table (Spearman's ρ with tied records at their mid-rank, as ``scipy.stats.spearmanr`` ranks them), so
they cost one grouped count however many records there are. B is 1 where the synthetic data
reproduces the association exactly; pairs inside an agreed Φ marginal are flagged so the heatmap can outline them.
"""

from __future__ import annotations

import itertools

import numpy as np

from sdgov.data.schema import Schema
from sdgov.engines.recordset import RecordSet


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


def spearman(table: np.ndarray) -> float:
    """Spearman's ρ of two ordered columns from their two-way table: the Pearson correlation of mid-ranks (records
    tied in a cell share the mean of their ranks); 0 when either column is constant."""
    t = table.astype(np.float64)
    n = t.sum()
    if n == 0:
        return 0.0

    def midranks(counts: np.ndarray) -> np.ndarray:
        return np.cumsum(counts) - (counts - 1) / 2

    r, c = t.sum(axis=1), t.sum(axis=0)
    x, y = midranks(r), midranks(c)
    dx, dy = x - (r @ x) / n, y - (c @ y) / n
    vx, vy = r @ dx**2, c @ dy**2
    if vx <= 0 or vy <= 0:
        return 0.0
    return float(np.clip((dx @ t @ dy) / np.sqrt(vx * vy), -1.0, 1.0))


def association(table: np.ndarray, both_numeric: bool) -> float:
    """A pair's association from its two-way table: Spearman's ρ between numeric columns, else Cramér's V."""
    return spearman(table) if both_numeric else cramers_v(table)


def pairs(attributes: list[str]) -> list[tuple[str, str]]:
    """Every unordered pair of ``attributes``, each in list order."""
    return list(itertools.combinations(attributes, 2))


def association_matrix(records: RecordSet, schema: Schema, attributes: list[str]) -> np.ndarray:
    """The symmetric association matrix (diagonal 1, axes in the order of ``attributes``): Spearman's ρ between two
    numeric columns, else Cramér's V, from each pair's exact table."""
    records.prefetch(pairs(attributes))
    m = np.eye(len(attributes))
    for (i, a), (j, b) in itertools.combinations(enumerate(attributes), 2):
        numeric = schema.by_name[a].kind == "numeric" and schema.by_name[b].kind == "numeric"
        m[i, j] = m[j, i] = association(records.table((a, b)), numeric)
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
    real_assoc: np.ndarray, synth: RecordSet, schema: Schema, attributes: list[str], in_phi: np.ndarray
) -> dict:
    """B = 1 − |R − S| / 2 against the real matrix ``real_assoc``: the synthetic matrix, B, the mean B off the diagonal
    (all pairs, in Φ, not in Φ; None if none) and the five worst pairs."""
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
