"""Deliberately leaky generators — positive controls for the privacy-risk audit (tests, benchmark).

Both speak :mod:`sdgov.audits.generator_protocol` and wrap an honest base generator (by import path, default the
pipeline's Private-PGM ``sdgov.audits.generators:honest_pgm``; its parameters, e.g. ``sigma``, pass through):

``sdgov.audits.privacy.leaky:copier``          samples from the base, then overwrites ``copy_fraction`` (1 %) of the
                                     output rows with real training rows, copied verbatim.
``sdgov.audits.privacy.leaky:category_leak``   learns the category list of every attribute from the training data (the
                                     metadata leak Stadler et al. 2022 found in published DP generators): output
                                     values outside the observed categories are redrawn from the observed ones, and
                                     every observed category is shown at least once, as a tool that publishes its
                                     learned category list does. A category that only the target holds thus
                                     appears in the output exactly when the target is in the training data.

Neither is (ε, δ)-DP for any finite ε; the audit must fail both.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from sdgov.audits.generator_protocol import (
    AuditGenerator,
    Clique,
    expand_rows,
    fit_generator,
    load_generator,
    make_generator,
)

BASE = "sdgov.audits.generators:honest_pgm"


class _Wrapped:
    def __init__(self, cliques: list[Clique], domain: dict[str, int], base: str = BASE, **params: Any) -> None:
        self.domain = dict(domain)
        self.attributes = list(domain)
        self.base: AuditGenerator = make_generator(load_generator(base), cliques, domain, params, base)
        self.rows: pd.DataFrame | None = None

    def fit(self, records: pd.DataFrame, weights: np.ndarray | None = None, *, seed: int | None = None) -> None:
        fit_generator(
            self.base,
            records,
            weights if weights is not None else np.ones(len(records), np.int64),
            0 if seed is None else seed,
        )
        self.rows = expand_rows(records[self.attributes], weights)


class Copier(_Wrapped):
    def __init__(self, cliques: list[Clique], domain: dict[str, int], copy_fraction: float = 0.01, **kw: Any) -> None:
        super().__init__(cliques, domain, **kw)
        self.copy_fraction = float(copy_fraction)

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        out = self.base.sample(n, seed)[self.attributes].to_numpy(dtype=np.int64)
        assert self.rows is not None, "fit() first"
        rng = np.random.default_rng([int(seed), 7])
        c = min(max(1, math.ceil(self.copy_fraction * n)), n, len(self.rows))
        where = rng.choice(n, size=c, replace=False)
        src = rng.choice(len(self.rows), size=c, replace=False)
        out = np.array(out, copy=True)
        out[where] = self.rows.to_numpy(dtype=np.int64)[src]
        return pd.DataFrame(out, columns=self.attributes)


class CategoryLeak(_Wrapped):
    def sample(self, n: int, seed: int) -> pd.DataFrame:
        out = pd.DataFrame(self.base.sample(n, seed)[self.attributes].to_numpy(dtype=np.int64), columns=self.attributes)
        assert self.rows is not None, "fit() first"
        rng = np.random.default_rng([int(seed), 8])
        for a in self.attributes:
            observed = np.unique(self.rows[a].to_numpy())
            col = out[a].to_numpy().copy()
            bad = ~np.isin(col, observed)
            col[bad] = rng.choice(observed, size=int(bad.sum()))
            missing = np.setdiff1d(observed, col)
            if len(missing):
                col[rng.choice(n, size=len(missing), replace=False)] = missing
            out[a] = col
        return out


def copier(cliques: list[Clique], domain: dict[str, int], **params: Any) -> Copier:
    return Copier(cliques, domain, **params)


def category_leak(cliques: list[Clique], domain: dict[str, int], **params: Any) -> CategoryLeak:
    return CategoryLeak(cliques, domain, **params)
