"""Shared pieces of the privacy-risk audit: settings, the audited generator, seeds and the choice of targets.

The generator is named by its registered name and spoken to through :mod:`sdgov.audits.generator_protocol` — the very
loader and protocol of the decomposability audit, so a plug-in's generator can be audited the same way::

    factory(cliques, domain, **params) -> object with fit(records, weights=None[, seed=]) and sample(n, seed)

``fit`` receives weighted unique records (cell indices) and their counts; ``sample`` returns cell indices.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field

from sdgov.audits.generator_protocol import AuditError, fit_generator, load_generator, make_generator, sample_generator
from sdgov.base.model import Frozen
from sdgov.data.schema import Clique

Progress = Callable[[int, int, str], None]


def seed_of(*keys: int) -> int:
    """A 31-bit seed derived from integer keys (independent streams for every (purpose, world, set))."""
    return int(np.random.SeedSequence([int(k) & 0xFFFFFFFF for k in keys]).generate_state(1)[0] >> 1)


@dataclass(frozen=True)
class GeneratorRef:
    """A generator as the audit sees it: registered name, Φ, domain (ordered) and its own parameters. Picklable."""

    path: str
    cliques: tuple[Clique, ...]
    domain: dict[str, int]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def attributes(self) -> list[str]:
        """The audited attributes, in the domain's order."""
        return list(self.domain)

    def check(self) -> None:
        """Resolve the registered name now, so that an unusable one is an AuditError before any trial runs."""
        load_generator(self.path)

    def fit_sample(
        self,
        rows: np.ndarray,
        fit_seed: int,
        n: int | Sequence[int],
        sample_seeds: list[int],
        keep: Sequence[Callable[[np.ndarray], Any] | None] | None = None,
    ) -> list[Any]:
        """Fit on ``rows`` (records × attributes, cell indices) and return one int array per sample seed, of ``n``
        records (one size for every set, or one per seed) — or, where ``keep`` gives set i a function, what it keeps
        of that set, taken as the set is drawn: the beyond-Φ check's 20 sets of 200,000 App 3 records travel as their
        cells (32 MB) instead of 224 MB of records."""
        gen = make_generator(load_generator(self.path), list(self.cliques), self.domain, self.params, self.path)
        records, weights = weighted_unique(rows, self.attributes)
        fit_generator(gen, records, weights, fit_seed, self.path)
        sizes = [int(n)] * len(sample_seeds) if isinstance(n, int) else [int(k) for k in n]
        kept = list(keep) if keep is not None else [None] * len(sample_seeds)
        out: list[Any] = []
        for s, k, what in zip(sample_seeds, sizes, kept, strict=True):
            x = sample_generator(gen, k, int(s), self.domain, self.path)[self.attributes].to_numpy(dtype=np.int64)
            out.append(x if what is None else what(x))
        return out


def weighted_unique(rows: np.ndarray, attributes: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """Rows → the protocol's weighted unique records (one row per distinct record, its count as weight)."""
    uniq, counts = np.unique(np.asarray(rows, dtype=np.int64), axis=0, return_counts=True)
    return pd.DataFrame(uniq, columns=attributes), counts.astype(np.int64)


def record_keys(rows: np.ndarray, sizes: list[int]) -> np.ndarray:
    """One integer key per record (exact for domains below 2^62 cells; a 64-bit hash beyond)."""
    rows = np.asarray(rows, dtype=np.int64)
    if math.prod(sizes) < 2**62:
        return np.ravel_multi_index(tuple(rows.T), tuple(sizes)).astype(np.int64)
    return pd.util.hash_pandas_object(pd.DataFrame(rows), index=False).to_numpy().view(np.int64)


# ------------------------------------------------------------------------------------------------ targets


class Target(Frozen):
    index: int  # row of the real data
    kind: str  # "outlier" | "random"
    record: dict[str, int]
    labels: dict[str, str] = Field(default_factory=dict)
    count_full: int  # records in the real data with this exact combination
    count_pair: int  # smallest count of any attribute pair of it
    count_single: int  # smallest count of any single category of it


OUTLIER_RULE = (
    "outliers = records of the rarest category combinations: rank every record by (count of its full "
    "combination of the audited attributes, then the smallest count of any pair of its values, then "
    "the smallest count of any single value), ascending, in the real data; take one record per distinct "
    "combination, ties broken by a seeded shuffle. Random targets are drawn uniformly from the other "
    "records."
)


def select_targets(
    real: np.ndarray,
    attributes: list[str],
    sizes: list[int],
    n_outliers: int,
    n_random: int,
    seed: int,
    labels: dict[str, list[str]] | None = None,
) -> list[Target]:
    """Targets by :data:`OUTLIER_RULE` plus uniform random records (deterministic in ``seed``)."""
    real = np.asarray(real, dtype=np.int64)
    n, d = real.shape
    rng = np.random.default_rng(seed_of(seed, 11))

    def counts_of(cols: list[int]) -> np.ndarray:
        keys = record_keys(real[:, cols], [sizes[c] for c in cols])
        _, inv, cnt = np.unique(keys, return_inverse=True, return_counts=True)
        return cnt[inv]

    full = counts_of(list(range(d)))
    single = np.min(np.stack([counts_of([j]) for j in range(d)]), axis=0)
    pair = np.min(np.stack([counts_of([i, j]) for i in range(d) for j in range(i + 1, d)]), axis=0) if d > 1 else single
    shuffle = rng.permutation(n)
    order = shuffle[np.lexsort((single[shuffle], pair[shuffle], full[shuffle]))]
    keys = record_keys(real, sizes)
    chosen: list[tuple[int, str]] = []
    seen: set[int] = set()
    for i in order:
        if len(chosen) >= n_outliers:
            break
        if int(keys[i]) not in seen:
            seen.add(int(keys[i]))
            chosen.append((int(i), "outlier"))
    rest = np.setdiff1d(np.arange(n), [i for i, _ in chosen])
    for i in rng.choice(rest, size=min(n_random, len(rest)), replace=False):
        chosen.append((int(i), "random"))
    out = []
    for i, kind in chosen:
        rec = {a: int(real[i, j]) for j, a in enumerate(attributes)}
        lab = {a: labels[a][v] for a, v in rec.items()} if labels else {}
        out.append(
            Target(
                index=i,
                kind=kind,
                record=rec,
                labels=lab,
                count_full=int(full[i]),
                count_pair=int(pair[i]),
                count_single=int(single[i]),
            )
        )
    return out


def world_ci(per_world: np.ndarray, level: float, lo: float = -1.0, hi: float = 1.0) -> tuple[float, float]:
    """Student-t interval for the mean of per-world statistics (worlds are the independent units: the sets
    sampled from one fit share its noise, so they are not), clipped to [lo, hi]."""
    from scipy import stats

    x = np.asarray(per_world, dtype=np.float64)
    W = len(x)
    if W < 2:
        return (lo, hi)
    half = float(stats.t.ppf(0.5 + level / 2, W - 1) * x.std(ddof=1) / math.sqrt(W))
    return (float(max(lo, x.mean() - half)), float(min(hi, x.mean() + half)))


def need(cond: bool, what: str, where: str, fix: str = "") -> None:
    """Raise :class:`AuditError` (``what``, ``where``, ``fix``) unless ``cond`` holds."""
    if not cond:
        raise AuditError(what, where, fix)
