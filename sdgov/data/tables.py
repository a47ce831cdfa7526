"""Contingency tables of encoded records: the one way sdgov counts a marginal.

Measuring Φ, the audits' weighted marginals and the utility tasks all count the same way, so a marginal of the
same records is the same table wherever it is computed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd


def contingency_table(
    codes: pd.DataFrame, attrs: Sequence[str], shape: Sequence[int], weights: np.ndarray | None = None
) -> np.ndarray:
    """Counts of every cell of the ``attrs`` table (axes in ``attrs`` order, sizes ``shape``) from encoded
    records: int64 counts, or float64 sums of ``weights`` (one per record) when given."""
    flat = np.ravel_multi_index(tuple(codes[a].to_numpy() for a in attrs), tuple(shape))
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    return np.bincount(flat, weights=w, minlength=math.prod(shape)).reshape(tuple(shape))


def records_where(codes: pd.DataFrame, column: str, cells: Sequence[int]) -> pd.DataFrame:
    """The encoded records whose ``column`` holds one of the cell indices ``cells`` (a part of a split synthesis,
    in memory): what that part's selection and its standalone audits count, and nothing else."""
    return codes[codes[column].isin(list(cells))]
