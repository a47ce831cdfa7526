r"""Memorisation beyond Φ: the share of synthetic records that behave like copies of the training records.

Why. A generator that releases only noisy Φ marginals cannot reproduce the *sampling noise* of its training set
in the directions Φ does not measure: two training sets A and B drawn from the same population differ by chance
in every cell, and all that a Φ-only release learns of that difference is its Φ-part (plus noise). A memoriser
that copies a fraction f of its output from the training rows (or any release that carries record-level
information outside Φ without noise) reproduces a share f of the non-Φ difference as well. Per record the
signal of a 2 % memoriser is hopeless — at the release's σ the honest model already puts more mass into a
record's cell than the copy adds (membership advantage ≈ 2 %, below what the claimed ε allows) — but summed over
every cell and many pairs of training sets it is measured precisely.

Design (support cells = cells of the full domain of the audited attributes that occur in the reference data;
p = their reference frequencies, D = diag(p), X = indicators of the Φ-marginal cells; W pairs):

1. Draw two disjoint training sets A_w, B_w of n reference records; fit the generator on each and sample
   m = K·n records from each fit (sampling more rows from a fitted model is post-processing: it costs an honest
   release nothing and multiplies the copies of a memoriser).
2. r_w = M (a_w − b_w)/n with M = I − D X (XᵀDX)⁺ Xᵀ: the projection, orthogonal in the χ² metric ⟨u, v⟩ =
   Σ u_c v_c / p_c, onto the complement of the Φ directions. M D X = 0 and M p = 0, so r_w is uncorrelated with
   every Φ marginal of A_w and of B_w (multinomial covariance n(D − ppᵀ)): a generator whose output depends on
   its data only through (noisy) Φ marginals has, to first order, no correlation with r_w.
3. f̂_w = ⟨r_w, s_A/m − s_B/m⟩ / ⟨r_w, (a_w − b_w)/n⟩ (both in the χ² metric): 0 for an honest generator, f for a
   generator whose output is (1 − f)·honest + f·(copies of the training rows); 1 for a copier.

f̂ is the mean over pairs with a Student-t interval (pairs are independent; the sets of one fit are not). Its
standard error is about √(n / (m·W·d)), d the number of non-Φ dimensions of the support — so power comes from
K and W, not from n (n = the attack's training size). The check is *not* a DP test: a DP generator that
measures statistics outside Φ (with noise) also scores above 0. It tests the agreement — only Φ leaves the data —
at the record level, where the other checks have no power.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sdgov.audits.privacy.base import GeneratorRef, Progress, record_keys, seed_of, world_ci
from sdgov.base.executor import Executor, executor_for
from sdgov.base.model import Frozen


class MemorisationResult(Frozen):
    pairs: int  # W
    train_rows: int  # n
    synth_rows: int  # m = K·n
    support_cells: int
    non_phi_dimensions: int  # d: rank of the support minus the rank of the Φ directions on it
    copy_share: float  # mean f̂ over pairs
    copy_share_ci: tuple[float, float]  # two-sided at the audit's confidence
    copy_share_lower: dict[str, float]  # one-sided lower bounds at the policy's levels, e.g. {"0.99": …}
    per_pair: list[float]
    confidence: float


def _design(
    reference: np.ndarray, sizes: list[int], cliques_idx: list[list[int]]
) -> tuple[np.ndarray, np.ndarray, int]:
    """Support keys, the Φ-cell indicator matrix X on them and the number of non-Φ dimensions d."""
    cells = np.unique(reference, axis=0)
    support = record_keys(cells, sizes)
    order = np.argsort(support)
    support, cells = support[order], cells[order]
    cols = []
    for c in cliques_idx:
        mk = np.ravel_multi_index(tuple(cells[:, c].T), tuple(sizes[j] for j in c))
        _, inv = np.unique(mk, return_inverse=True)
        block = np.zeros((len(support), int(inv.max()) + 1))
        block[np.arange(len(support)), inv] = 1.0
        cols.append(block)
    X = np.hstack(cols + [np.ones((len(support), 1))])
    return support, X, len(support) - int(np.linalg.matrix_rank(X))


def _non_phi(v: np.ndarray, X: np.ndarray, q: np.ndarray) -> np.ndarray:
    """M v = v − D X (XᵀDX)⁺ Xᵀ v with D = diag(q): the part of v χ²-orthogonal (metric 1/q) to the Φ directions."""
    DX = q[:, None] * X
    return v - DX @ (np.linalg.pinv(X.T @ DX, hermitian=True) @ (X.T @ v))


def _pair_job(ref: GeneratorRef, a: np.ndarray, b: np.ndarray, seeds: tuple[int, int, int, int], m: int) -> Any:
    sa = ref.fit_sample(a, seeds[0], m, [seeds[1]])[0]
    sb = ref.fit_sample(b, seeds[2], m, [seeds[3]])[0]
    return sa, sb


def _counts(rows: np.ndarray, sizes: list[int], support: np.ndarray) -> np.ndarray:
    keys = record_keys(rows, sizes)
    pos = np.searchsorted(support, keys)
    pos = np.clip(pos, 0, len(support) - 1)
    hit = support[pos] == keys
    return np.bincount(pos[hit], minlength=len(support)).astype(np.float64)


def memorisation_audit(
    ref: GeneratorRef,
    reference: np.ndarray,
    pairs: int,
    train_rows: int,
    synth_factor: int,
    seed: int,
    confidence: float,
    lower_levels: tuple[float, ...] = (0.99, 0.999),
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> MemorisationResult:
    """The copy-share estimate f̂ (module docstring) over ``pairs`` pairs of disjoint training sets."""
    from scipy import stats

    reference = np.asarray(reference, dtype=np.int64)
    sizes = [ref.domain[a] for a in ref.attributes]
    attrs = ref.attributes
    cliques_idx = [[attrs.index(a) for a in c] for c in ref.cliques]
    support, X, d = _design(reference, sizes, cliques_idx)
    n = min(train_rows, len(reference) // 2)
    m = int(synth_factor) * n
    rng = np.random.default_rng(seed_of(seed, 60))
    splits, jobs = [], []
    for w in range(pairs):
        pick = rng.choice(len(reference), size=2 * n, replace=False)
        a, b = reference[pick[:n]], reference[pick[n:]]
        splits.append((a, b))
        jobs.append((ref, a, b, tuple(seed_of(seed, 61, w, j) for j in range(4)), m))
    est = []
    for (a, b), (sa, sb) in zip(splits, (executor or executor_for(1)).map(_pair_job, jobs, "memorisation-fit")):
        diff = (_counts(a, sizes, support) - _counts(b, sizes, support)) / n
        ca, cb = _counts(sa, sizes, support), _counts(sb, sizes, support)
        q = (ca + cb + 1.0) / (2 * m + len(support))  # the fits' own distribution (+1 per cell: no empty cell)
        r = _non_phi(diff, X, q)
        denom = float(np.sum(r * diff / q))
        num = float(np.sum(r * (ca - cb) / m / q))
        est.append(num / denom if denom > 0 else 0.0)
        if progress:
            progress(len(est), pairs, "memorisation fits")
    x = np.asarray(est)
    lowers = {}
    for lv in lower_levels:
        if len(x) >= 2:
            half = float(stats.t.ppf(lv, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
            lowers[f"{lv:g}"] = float(x.mean() - half)
        else:
            lowers[f"{lv:g}"] = -math.inf
    return MemorisationResult(
        pairs=pairs,
        train_rows=n,
        synth_rows=m,
        support_cells=len(support),
        non_phi_dimensions=d,
        copy_share=float(x.mean()),
        copy_share_ci=world_ci(x, confidence, lo=-math.inf, hi=math.inf),
        copy_share_lower=lowers,
        per_pair=[float(v) for v in x],
        confidence=confidence,
    )
