r"""Interactions beyond Φ: does the generator's output carry structure that its Φ marginals do not imply?

Why (issue 29 item 3). A generator that draws a share of its rows from a model with one extra non-Φ interaction
(a *blend*) copies no record, so the record-level checks — memorisation, membership, exact matches — barely
react (App 2, 5 % blend: 2 of 10 seeds). What it does release is an interaction the agreement never allowed:
the tables outside Φ of its output differ from what its own Φ tables imply. This check looks for exactly that,
with no reference to the training records.

Design (the joint over the audited attributes must fit in ``max_cells`` cells; Apps 1–2: 200 and 630):

1. Draw one training set of n reference records, fit the generator once and sample m records (m ≫ n: sampling
   from a fitted model is post-processing, so an honest release loses nothing and every interaction it carries
   shows m times more sharply).
2. The Φ-only model of that output: the maximum-entropy distribution p̂ with the output's own Φ marginals
   (IPF from the uniform joint on the exact counts). For a generator that
   reads only noisy Φ marginals (ψ) and samples from a model whose potentials live on Φ (the PGM, IPF), the
   output *is* a sample of a distribution in that family, so p̂ is its maximum-likelihood estimate: the same
   noisy ψ, seen through the sample.
3. For every table t outside Φ (each set of 2 or 3 attributes not inside a Φ marginal, and the full joint when it
   has more than 3 attributes), G²_t = 2 Σ c log(c / (m p̂_t)) between the output's table and p̂'s.
4. Calibration by parametric bootstrap: B samples of m records from p̂ (multinomial counts), each projected and
   scored the same way — data sampled from the Φ-only model fitted to the same ψ. Each table's G² is
   standardised by its bootstrap mean and spread, the statistic is the largest standardised G² (the leak may sit
   in any one table), and p = (1 + #{bootstrap max ≥ observed max}) / (B + 1): an exact-level Monte-Carlo test.

Everything is seeded (training draw, fit, sample, bootstrap), uses no BLAS (counts, IPF's einsum updates,
logarithms), and returns the same p-value for the same inputs and seed. Like the memorisation check it tests the
agreement — only Φ leaves the data — not DP: a DP generator that measures other statistics, with noise, is caught
too, correctly. Its power: the blend controls of :mod:`sdgov.audits.generators` in docs/privacy_risk.md.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from sdgov.audits.privacy.base import GeneratorRef, seed_of
from sdgov.base.model import Frozen

MAX_CELLS = 10_000  # B = 199 IPF projections of the joint: seconds on Apps 1–2 (200 and 630 cells); the demo's
# 28,800 cells took 1.7 CPU-s per projection (≈ 5 CPU-min per release, measured 2026-11-26), so larger joints are
# "not run" until the projections are made cheaper
TOL = 1e-8  # IPF stops when no Φ margin is further than this from its target (in probability: 0.01 of a record
# in a million, far below the sampling noise the test measures) …
MAX_SWEEPS = 1000  # … or after this many sweeps (a margin with empty cells can pull the fit to the boundary slowly)


class BeyondPhiResult(Frozen):
    ran: bool
    reason: str = ""  # why it did not run
    train_rows: int = 0  # n
    synth_rows: int = 0  # m
    cells: int = 0  # of the joint
    bootstrap: int = 0  # B
    tables: dict[str, float] = {}  # table (attributes joined by " × ") → standardised G²
    worst_table: str = ""
    statistic: float = 0.0  # the largest standardised G²
    p_value: float = 1.0


def non_phi_tables(attributes: list[str], cliques: list[tuple[str, ...]]) -> list[tuple[int, ...]]:
    """Attribute index sets outside Φ: every 2- and 3-set not inside a Φ marginal, and the full joint (if more than
    3 attributes and not inside Φ)."""
    inside = [set(c) for c in cliques]
    d = len(attributes)
    sets = [s for k in (2, 3) if k <= d for s in itertools.combinations(range(d), k)]
    if d > 3:
        sets.append(tuple(range(d)))
    return [s for s in sets if not any({attributes[j] for j in s} <= c for c in inside)]


def cell_index(shape: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    """For every cell of the flattened joint, its cell in the table over ``axes``: a table is then one
    ``bincount`` of the joint (O(cells), summed in cell order: the same bits on every machine)."""
    grids = np.indices(shape).reshape(len(shape), -1)
    return np.ravel_multi_index(tuple(grids[list(axes)]), tuple(shape[a] for a in axes)).astype(np.intp)


def _table(flat: np.ndarray, index: np.ndarray) -> np.ndarray:
    return np.bincount(index, weights=flat, minlength=int(index.max()) + 1)


def phi_projection(counts: np.ndarray, phi_index: list[np.ndarray], start: np.ndarray | None = None) -> np.ndarray:
    """The maximum-entropy joint (flattened) with the Φ marginals of ``counts`` (flattened; ``phi_index``: the
    :func:`cell_index` of each Φ marginal): IPF from the uniform joint, or from ``start`` when it already lies in
    the Φ family (a bootstrap sample's projection starts from the model it was drawn from: the same limit, reached
    in a few sweeps instead of hundreds)."""
    total = float(counts.sum())
    targets = [_table(counts, ix) / total for ix in phi_index]
    joint = np.full(counts.size, 1.0 / counts.size) if start is None else np.array(start, dtype=np.float64)
    for _ in range(MAX_SWEEPS):
        worst = 0.0
        for ix, t in zip(phi_index, targets):
            cur = _table(joint, ix)
            worst = max(worst, float(np.abs(cur - t).max()))
            joint *= np.divide(t, cur, out=np.zeros_like(t), where=cur > 0)[ix]
        if worst < TOL:
            break
    return joint / joint.sum()


def _g2(counts: np.ndarray, p: np.ndarray, table_index: list[np.ndarray]) -> np.ndarray:
    """G² of each table of ``counts`` against the same table of m·p (both flattened joints)."""
    m = float(counts.sum())
    out = np.empty(len(table_index))
    for i, ix in enumerate(table_index):
        c, e = _table(counts, ix), m * _table(p, ix)
        pos = c > 0
        out[i] = 2.0 * float(np.sum(c[pos] * np.log(c[pos] / np.maximum(e[pos], 1e-300))))
    return out


def beyond_phi_audit(
    ref: GeneratorRef,
    reference: np.ndarray,
    train_rows: int,
    synth_rows: int,
    bootstrap: int,
    seed: int,
    max_cells: int = MAX_CELLS,
) -> BeyondPhiResult:
    """The test of the module docstring: one fit on ``train_rows`` reference records, ``synth_rows`` sampled."""
    attrs = ref.attributes
    sizes = [ref.domain[a] for a in attrs]
    cells = math.prod(sizes)
    cliques = [tuple(c) for c in ref.cliques]
    tables = non_phi_tables(attrs, cliques)
    if not tables:
        return BeyondPhiResult(ran=False, reason="Φ holds every interaction of the audited attributes", cells=cells)
    if cells > max_cells:
        return BeyondPhiResult(
            ran=False,
            reason=f"the joint of the audited attributes has {cells:,} cells, above {max_cells:,}",
            cells=cells,
        )
    reference = np.asarray(reference, dtype=np.int64)
    n = min(int(train_rows), len(reference))
    rng = np.random.default_rng(seed_of(seed, 70))
    train = reference[rng.choice(len(reference), size=n, replace=False)]
    synth = ref.fit_sample(train, seed_of(seed, 71), int(synth_rows), [seed_of(seed, 72)])[0]
    shape = tuple(sizes)
    phi_index = [cell_index(shape, tuple(attrs.index(a) for a in c)) for c in cliques]
    table_index = [cell_index(shape, t) for t in tables]
    counts = np.bincount(np.ravel_multi_index(tuple(synth.T), shape), minlength=cells).astype(np.float64)
    p_hat = phi_projection(counts, phi_index)
    observed = _g2(counts, p_hat, table_index)
    boot = np.empty((int(bootstrap), len(tables)))
    brng = np.random.default_rng(seed_of(seed, 73))
    for b in range(int(bootstrap)):
        c = brng.multinomial(int(synth_rows), p_hat).astype(np.float64)
        boot[b] = _g2(c, phi_projection(c, phi_index, start=p_hat), table_index)
    mean, sd = boot.mean(axis=0), boot.std(axis=0, ddof=1) if bootstrap > 1 else np.ones(len(tables))
    sd = np.where(sd > 0, sd, np.inf)  # a table that cannot vary says nothing
    z_obs = (observed - mean) / sd
    z_boot = (boot - mean) / sd
    stat = float(z_obs.max())
    exceed = int(np.sum(z_boot.max(axis=1) >= stat))
    names = [" × ".join(attrs[j] for j in t) for t in tables]
    return BeyondPhiResult(
        ran=True,
        train_rows=n,
        synth_rows=int(synth_rows),
        cells=cells,
        bootstrap=int(bootstrap),
        tables={k: float(v) for k, v in zip(names, z_obs)},
        worst_table=names[int(np.argmax(z_obs))],
        statistic=stat,
        p_value=(1 + exceed) / (int(bootstrap) + 1),
    )
