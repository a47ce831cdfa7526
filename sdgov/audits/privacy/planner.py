"""One planner for every fit of the privacy-risk audit: the parts' requests merged by key, each key fitted once.

Every part asks for the fits it needs (:class:`~sdgov.audits.privacy.part.FitRequest`); requests with the same key are
the same fit (same training records, same fit seed), so the planner fits it once — one trial through the audit's
executor (:mod:`sdgov.base.executor`: serial, worker processes, Prefect task runs or a Dask cluster, all the same
bits) — draws the union of the sample sets the parts asked for (each at its part's own size: memorisation's sets of
50·n records and the beyond-Φ check's 20 smaller ones come from one fit), and runs each part's reducer on its own
sets in that worker. Every set has its own seed, so what a part gets does not depend on which other parts asked for
the same fit: a part's result is the same whether it runs alone or beside the others.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from sdgov.audits.privacy.base import GeneratorRef, Progress
from sdgov.audits.privacy.part import FitRequest, Reducer
from sdgov.base.errors import InternalError
from sdgov.base.executor import Executor

Use = tuple[tuple[int, ...], Reducer | None]  # positions of its sets among the fit's draws, its reducer
Draw = tuple[int, int, Callable[[np.ndarray], Any] | None]  # one sample set: (records, seed, what is kept of it)


def _fit_job(ref: GeneratorRef, rows: np.ndarray, fit_seed: int, draws: list[Draw], uses: list[Use]) -> list[Any]:
    """Fit once, draw every asked set, hand each use its sets (reduced where they were drawn)."""
    sets = ref.fit_sample(rows, fit_seed, [n for n, _, _ in draws], [s for _, s, _ in draws], [k for *_, k in draws])
    out = []
    for positions, reduce in uses:
        mine = [sets[i] for i in positions]
        out.append(mine if reduce is None else reduce(mine))
    return out


def fit_all(
    ref: GeneratorRef,
    requests: Sequence[FitRequest],
    executor: Executor,
    progress: Progress | None = None,
    label: str = "shadow-fit",
) -> list[Any]:
    """Each request's share of its fit, in the order of ``requests``; every distinct key fitted once, in the order
    of first request."""
    keys: dict[Hashable, int] = {}
    fits: list[tuple[FitRequest, list[Draw], list[Use]]] = []  # (first request, draws, uses)
    where: list[tuple[int, int]] = []  # request → (fit, use)
    for r in requests:
        if r.key not in keys:
            keys[r.key] = len(fits)
            fits.append((r, [], []))
        first, draws, uses = fits[keys[r.key]]
        same = first.fit_seed == r.fit_seed and first.rows.shape == r.rows.shape and np.array_equal(first.rows, r.rows)
        if not same:
            raise InternalError(f"two privacy-audit parts ask for fit {r.key} on different data or seeds")
        positions = []
        for s in r.sample_seeds:
            if (r.set_rows, s, r.keep) not in draws:
                draws.append((r.set_rows, s, r.keep))
            positions.append(draws.index((r.set_rows, s, r.keep)))
        where.append((keys[r.key], len(uses)))
        uses.append((tuple(positions), r.reduce))
    calls = [(ref, first.rows, first.fit_seed, draws, uses) for first, draws, uses in fits]
    done: list[list[Any]] = []
    for res in executor.map(_fit_job, calls, label):
        done.append(res)
        if progress:
            progress(len(done), len(calls), "generator fits")
    return [done[f][u] for f, u in where]
