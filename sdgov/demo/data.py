"""The demo's confidential data: a made-up population drawn from fixed, public parameters.

The demo must run from a fresh clone without the census extract, so it generates its own records. A small
Bayesian network (region → age → education → activity → occupation; sex → activity/occupation; age, activity
→ health) gives the data real associations for the pipeline to preserve and lose.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sdgov.data.encoding import decode
from sdgov.data.schema import Schema

SEED = 20111121
PARENTS: dict[str, list[str]] = {
    "Region": [],
    "Sex": [],
    "Age": ["Region"],
    "Education": ["Age"],
    "Economic Activity": ["Age", "Sex", "Education"],
    "Occupation": ["Economic Activity", "Education", "Sex"],
    "Health": ["Age", "Economic Activity", "Region"],
}


def _cpt(rng: np.random.Generator, parent_sizes: list[int], k: int, concentration: float) -> np.ndarray:
    """A conditional table P(child | parents) with strong, varied structure."""
    return rng.dirichlet(np.full(k, concentration), size=int(np.prod(parent_sizes, dtype=int)))


def demo_records(schema: Schema, rows: int, seed: int = SEED) -> pd.DataFrame:
    """``rows`` made-up people as labels (plus a ``Person ID`` from 1), drawn from the fixed network with its structural
    zeros; the same seed gives the same tables and records."""
    rng = np.random.default_rng(seed)
    sizes = schema.domain()
    codes: dict[str, np.ndarray] = {}
    for col, parents in PARENTS.items():
        table = _cpt(rng, [sizes[p] for p in parents], sizes[col], concentration=0.6)
        row = (
            np.ravel_multi_index([codes[p] for p in parents], [sizes[p] for p in parents])
            if parents
            else np.zeros(rows, int)
        )
        cdf = table.cumsum(axis=1)
        codes[col] = np.minimum((cdf[row] < rng.random(rows)[:, None]).sum(axis=1), sizes[col] - 1)
    # structural zeros a real census has: working people have an occupation, others have none
    working = codes["Economic Activity"] == 0
    not_working_occ = sizes["Occupation"] - 1
    codes["Occupation"] = np.where(working, np.minimum(codes["Occupation"], not_working_occ - 1), not_working_occ)
    df = decode(codes, schema)
    df.insert(0, "Person ID", np.arange(1, rows + 1))
    return df


def write_demo_data(schema: Schema, path: Path, rows: int = 20000) -> Path:
    """Write :func:`demo_records` (the fixed seed) to ``path`` as CSV, via a temporary file and a rename; return
    ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    demo_records(schema, rows).to_csv(tmp, index=False)
    tmp.replace(path)
    return path
