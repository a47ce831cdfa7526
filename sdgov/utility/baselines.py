"""Reference points for every measure: "useless" and "as good as real".

``independent``: every column drawn independently from its real one-way distribution (all associations lost).
``bootstrap``: records resampled with replacement from the real *training* part (so holdout-based task scores
are not flattered by copies of holdout records). Both have as many rows as the synthetic records the models see
(all of them, or the synthetic sample at scale: :mod:`sdgov.engines.recordset`). They are built by the controller from
the
confidential data and are never released.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdgov.base.seeds import stream
from sdgov.engines.recordset import RecordSet


def independent_marginals(real: RecordSet, attributes: list[str], rows: int, seed: int = 0) -> pd.DataFrame:
    """``rows`` records, each column drawn independently from the real one-way distribution (exact counts)."""
    rng = stream(seed, 101)
    out = {}
    for a in attributes:
        counts = real.table((a,))
        out[a] = rng.choice(len(counts), size=rows, p=counts / real.rows).astype(np.int32)
    return pd.DataFrame(out)


def bootstrap(train: pd.DataFrame, attributes: list[str], rows: int, seed: int = 0) -> pd.DataFrame:
    """``rows`` records of ``attributes`` resampled with replacement from the real training part (its own seed stream):
    the "as good as real" baseline."""
    idx = stream(seed, 202).integers(0, len(train), rows)
    return train[attributes].iloc[idx].reset_index(drop=True)
