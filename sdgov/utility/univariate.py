"""One-way fidelity: coverage and similarity of every column (ONS census–mortality report).

Categorical columns: *coverage* is the share of the categories present in the real data that the synthetic data
also contains; *similarity* is 1 − TVD of the two distributions. Numeric (binned) columns: coverage is the share of
the real range (a run of whole bins) that the synthetic range covers; similarity is 1 − KS (largest gap between
the CDFs).
"""

from __future__ import annotations

import numpy as np

from sdgov.data.schema import Schema
from sdgov.engines.recordset import RecordSet


def counts(records: RecordSet, column: str) -> np.ndarray:
    """The column's exact counts over every record, as floats."""
    return records.table((column,)).astype(np.float64)


def column_fidelity(r: np.ndarray, s: np.ndarray, kind: str) -> dict[str, float | str]:
    """Coverage and similarity of one column from its real and synthetic counts."""
    p, q = r / max(r.sum(), 1.0), s / max(s.sum(), 1.0)
    if kind == "categorical":
        present = r > 0
        coverage = float((s[present] > 0).mean()) if present.any() else 1.0
        return {"coverage": coverage, "similarity": float(1 - 0.5 * np.abs(p - q).sum()), "measure": "1 − TVD"}
    rr, ss = np.flatnonzero(r), np.flatnonzero(s)
    lo, hi = rr.min(), rr.max() + 1  # the real range, as a run of whole bins [lo, hi)
    if len(ss) == 0:
        coverage = 0.0
    else:
        coverage = float(max(0, min(hi, ss.max() + 1) - max(lo, ss.min())) / (hi - lo))
    ks = float(np.abs(np.cumsum(p) - np.cumsum(q)).max())
    return {"coverage": coverage, "similarity": 1 - ks, "measure": "1 − KS"}


def univariate(real: RecordSet, synth: RecordSet, schema: Schema, attributes: list[str]) -> dict:
    """Coverage and similarity of every column of ``attributes`` from its exact one-way counts, and their means."""
    rows = []
    for a in attributes:
        res = column_fidelity(counts(real, a), counts(synth, a), schema.by_name[a].kind)
        rows.append({"column": a, **res})
    return {
        "columns": rows,
        "mean_coverage": float(np.mean([r["coverage"] for r in rows])),
        "mean_similarity": float(np.mean([r["similarity"] for r in rows])),
    }
