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
X = indicators of the Φ-marginal cells on them):

1. W training sets of n reference records — the sample worlds of :mod:`sdgov.audits.privacy.worlds` (world 0 is
   the beyond-Φ check's fit too) — each fitted once, m = K·n records sampled from each fit (sampling more rows
   from a fitted model is post-processing: it costs an honest release nothing and multiplies the copies of a
   memoriser).
2. For a pair of worlds (A, B): r = M (a − b)/n with M = I − D X (XᵀDX)⁺ Xᵀ, D = diag(q), q the two fits' own
   distribution: the projection, orthogonal in the χ² metric ⟨u, v⟩ = Σ u_c v_c / q_c, onto the complement of the
   Φ directions. M D X = 0 and M q = 0, so r is uncorrelated with every Φ marginal of A and of B (multinomial
   covariance n(D − qqᵀ)): a generator whose output depends on its data only through (noisy) Φ marginals has, to
   first order, no correlation with r.
3. f̂_AB = ⟨r, s_A/m − s_B/m⟩ / ⟨r, (a − b)/n⟩: 0 for an honest generator, f for a generator whose output is
   (1 − f)·honest + f·(copies of the training rows); 1 for a copier.

f̂ is the mean of f̂_AB over **every pair** of the W worlds — a U-statistic of degree 2 (issue 37: the check used to
fit W disjoint pairs, 2W fits, each fit in one pair). Every world now serves in W − 1 pairs: a pair's f̂ is
the sum of two world terms (each world's own training deviation against its own output) and two cross terms (one
world's deviation against the other's output); averaging over all pairs keeps the world terms and averages the cross
terms away, so W fits give about the precision of W − 1 disjoint pairs, 2(W − 1) fits (measured on Apps 1–2:
docs/privacy_risk.md). The metric stays each pair's own (step 2): with one pooled q for all worlds the fits' own
Φ-noise leaks through the projection and the spread grew four-fold (measured, same fits). Its standard error is the
jackknife's over worlds (delete one world, with its W − 1 pairs: Arvesen 1969; conservative for a U-statistic, by the
Efron–Stein inequality), and the bounds are Student-t with W − 1 degrees of freedom. It is about
√(n / (m·W·d)), d the number of non-Φ dimensions of the support — so power comes from K and W, not from n. The check
is *not* a DP test: a DP generator that measures statistics outside Φ (with noise) also scores above 0. It tests the
agreement — only Φ leaves the data — at the record level, where the other checks have no power.

Computation. X is never formed (App 3: 50,000 support cells × 1,366 Φ cells would be half a gigabyte): X'v is one
``bincount`` per Φ marginal, XᵀDX one per pair of marginals (:class:`PhiDesign`), Φ's redundant columns (two
marginals sharing an attribute share its margin) are dropped once, and each pair solves with the Cholesky factor of
its own XᵀDX (the sum of its two worlds' tables: :class:`WorldTerms`) — the projection is never formed either.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sdgov.audits.privacy.base import GeneratorRef, Progress, record_keys, seed_of
from sdgov.audits.privacy.part import FitRequest, PrivacyPart
from sdgov.audits.privacy.planner import fit_all
from sdgov.audits.privacy.policy import PolicyCheck, level_of
from sdgov.audits.privacy.worlds import sample_world, sample_world_fit_seed, sample_world_key, sample_world_set_rows
from sdgov.base.executor import Executor, SerialExecutor
from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.agreement.sections.privacy_risk import RiskPolicy, RiskSettings
    from sdgov.audits.privacy.part import AuditFrame, AuditShape

RANK_RTOL = 1e-10  # pivots of XᵀX below this share of the largest: a Φ column the kept ones already span


class MemorisationResult(Frozen):
    worlds: int  # W: training sets, one fit each
    pairs: int  # W(W − 1)/2: every pair of them
    train_rows: int  # n
    synth_rows: int  # m = K·n
    support_cells: int
    non_phi_dimensions: int  # d: rank of the support minus the rank of the Φ directions on it
    copy_share: float  # mean f̂ over the pairs
    copy_share_ci: tuple[float, float]  # two-sided at the audit's confidence
    copy_share_lower: dict[str, float]  # one-sided lower bounds at the policy's levels, e.g. {"0.99": …}
    standard_error: float  # the jackknife's, over worlds
    per_world: list[float]  # each world's mean f̂ over its W − 1 pairs
    confidence: float


class PhiDesign:
    """The support cells (those occurring in the reference, sorted by key) and their Φ cells, held as one index
    array per Φ marginal (and one for the constant) instead of the indicator matrix X; ``keep`` are the Φ cells
    whose columns span X's range (the others are sums and differences of them)."""

    def __init__(self, reference: np.ndarray, sizes: list[int], cliques_idx: list[list[int]]) -> None:
        import scipy.linalg

        cells = np.unique(reference, axis=0)
        support = record_keys(cells, sizes)
        order = np.argsort(support)
        self.support, cells = support[order], cells[order]
        self.sizes = sizes
        self.index: list[np.ndarray] = []
        for c in cliques_idx:
            mk = np.ravel_multi_index(tuple(cells[:, c].T), tuple(sizes[j] for j in c))
            self.index.append(np.unique(mk, return_inverse=True)[1].astype(np.int64).ravel())
        self.index.append(np.zeros(len(self.support), np.int64))  # the constant: every distribution sums to 1
        self.widths = [int(i.max()) + 1 for i in self.index]
        self.keep = np.arange(sum(self.widths))
        xtx = self.gram(np.ones(len(self.support)))
        _, r, pivots = scipy.linalg.qr(xtx, pivoting=True)
        diag = np.abs(np.diag(r))
        self.keep = np.sort(pivots[: int((diag > diag[0] * RANK_RTOL).sum())])
        self.non_phi_dimensions = len(self.support) - len(self.keep)

    def margins(self, v: np.ndarray) -> np.ndarray:
        """X'v on the kept Φ cells: ``v`` (one value per support cell) summed over each Φ cell."""
        full = np.concatenate([np.bincount(i, weights=v, minlength=w) for i, w in zip(self.index, self.widths)])
        return full[self.keep]

    def gram(self, q: np.ndarray) -> np.ndarray:
        """X' diag(q) X on the kept Φ cells, block by block (each block a table of q over two marginals' cells)."""
        blocks = [
            [
                np.bincount(a * wb + b, weights=q, minlength=wa * wb).reshape(wa, wb)
                for b, wb in zip(self.index, self.widths)
            ]
            for a, wa in zip(self.index, self.widths)
        ]
        return np.block(blocks)[np.ix_(self.keep, self.keep)]

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """How many of ``rows`` fall in each support cell (rows outside the support are left out)."""
        return support_counts([rows], sizes=self.sizes, support=self.support)


def support_counts(sets: list[np.ndarray], *, sizes: list[int], support: np.ndarray) -> np.ndarray:
    """The records of ``sets`` counted on the support cells (run where they were drawn: one vector travels back)."""
    keys = record_keys(np.vstack(sets), sizes)
    pos = np.clip(np.searchsorted(support, keys), 0, len(support) - 1)
    hit = support[pos] == keys
    return np.bincount(pos[hit], minlength=len(support)).astype(np.float64)


class WorldTerms:
    """Each world's training and synthetic counts on the support, their Φ margins and its synthetic XᵀSX table: a
    pair's f̂ (:meth:`pair_share`) is then sums of two worlds' terms and one Cholesky solve."""

    def __init__(self, design: PhiDesign, train: list[np.ndarray], synth: list[np.ndarray], n: int, m: int) -> None:
        self.design, self.n, self.m = design, n, m
        self.a = [t / n for t in train]
        self.y = [s / m for s in synth]
        self.s = synth
        self.xa = [design.margins(a) for a in self.a]
        self.xy = [design.margins(y) for y in self.y]
        self.gram = [design.gram(s) for s in synth]
        self.ones = design.gram(np.ones(len(design.support)))

    def pair_share(self, i: int, j: int) -> float:
        """f̂ of worlds i and j (step 3 of the module docstring), at the pair's own q = (s_i + s_j + 1)/(2m + N):
        with v = a_i/n − a_j/n, u = s_i/m − s_j/m and G = XᵀDX, ⟨Mv, u⟩ = Σ v u / q − (X'u)' G⁻¹ (X'v) on the
        kept Φ cells, ⟨Mv, v⟩ likewise."""
        import scipy.linalg

        total = 2 * self.m + len(self.design.support)
        q = (self.s[i] + self.s[j] + 1.0) / total  # the fits' own distribution (+1 per cell: no empty cell)
        v, u = self.a[i] - self.a[j], self.y[i] - self.y[j]
        xv, xu = self.xa[i] - self.xa[j], self.xy[i] - self.xy[j]
        z = scipy.linalg.cho_solve(scipy.linalg.cho_factor((self.gram[i] + self.gram[j] + self.ones) / total), xv)
        denom = float(np.sum(v * v / q) - xv @ z)
        num = float(np.sum(v * u / q) - xu @ z)
        return num / denom if denom > 0 else 0.0


def memorisation_requests(
    ref: GeneratorRef, reference: np.ndarray, design: PhiDesign, worlds: int, n: int, synth_factor: int, seed: int
) -> list[FitRequest]:
    """One fit per sample world 0 … ``worlds`` − 1 (:func:`sdgov.audits.privacy.worlds.sample_world`), one set of
    ``synth_factor``·n records each, counted on the support where it was drawn."""
    count = partial(support_counts, sizes=design.sizes, support=design.support)
    return [
        FitRequest(
            sample_world_key(w, n),
            sample_world(reference, n, seed, w),
            sample_world_fit_seed(seed, w),
            sample_world_set_rows(n, synth_factor),
            (seed_of(seed, 62, w),),
            count,
        )
        for w in range(worlds)
    ]


def memorisation_of(
    design: PhiDesign,
    reference: np.ndarray,
    counted: list[np.ndarray],
    n: int,
    synth_factor: int,
    seed: int,
    confidence: float,
    lower_levels: tuple[float, ...],
) -> MemorisationResult:
    """f̂ over every pair of the worlds from their synthetic counts on the support, its jackknife standard error
    over worlds and Student-t bounds (W − 1 degrees of freedom)."""
    from scipy import stats

    W, m = len(counted), sample_world_set_rows(n, synth_factor)
    train = [design.counts(sample_world(reference, n, seed, w)) for w in range(W)]
    terms = WorldTerms(design, train, counted, n, m)
    share = np.zeros((W, W))
    for i in range(W):
        for j in range(i + 1, W):
            share[i, j] = share[j, i] = terms.pair_share(i, j)
    pairs = W * (W - 1) // 2
    f = float(share.sum() / 2 / pairs)
    row = share.sum(axis=1)  # each world's W − 1 pairs
    per_world = row / max(W - 1, 1)
    se = 0.0
    if W >= 3:
        loo = (share.sum() / 2 - row) / ((W - 1) * (W - 2) / 2)  # f̂ without world w
        se = math.sqrt((W - 1) / W * float(np.sum((loo - loo.mean()) ** 2)))

    def bound(level: float) -> float:
        return f - float(stats.t.ppf(level, W - 1)) * se if W >= 3 else -math.inf

    half = float(stats.t.ppf(0.5 + confidence / 2, W - 1)) * se if W >= 3 else math.inf
    return MemorisationResult(
        worlds=W,
        pairs=pairs,
        train_rows=n,
        synth_rows=m,
        support_cells=len(design.support),
        non_phi_dimensions=design.non_phi_dimensions,
        copy_share=f,
        copy_share_ci=(f - half, f + half),
        copy_share_lower={f"{lv:g}": bound(lv) for lv in lower_levels},
        standard_error=se,
        per_world=[float(x) for x in per_world],
        confidence=confidence,
    )


def memorisation_audit(
    ref: GeneratorRef,
    reference: np.ndarray,
    worlds: int,
    train_rows: int,
    synth_factor: int,
    seed: int,
    confidence: float,
    lower_levels: tuple[float, ...] = (0.99, 0.999),
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> MemorisationResult:
    """The copy-share estimate f̂ (module docstring) over every pair of ``worlds`` training sets of ``train_rows``
    records (at most half the reference), on fits of its own (the audit shares them: :class:`Memorisation`)."""
    reference = np.asarray(reference, dtype=np.int64)
    design = design_of(ref, reference)
    n = min(train_rows, len(reference) // 2)
    requests = memorisation_requests(ref, reference, design, worlds, n, synth_factor, seed)
    counted = fit_all(ref, requests, executor or SerialExecutor(), progress, "memorisation-fit")
    return memorisation_of(design, reference, counted, n, synth_factor, seed, confidence, lower_levels)


def design_of(ref: GeneratorRef, reference: np.ndarray) -> PhiDesign:
    """The :class:`PhiDesign` of the audited generator's Φ on the reference records."""
    attrs = ref.attributes
    return PhiDesign(reference, [ref.domain[a] for a in attrs], [[attrs.index(a) for a in c] for c in ref.cliques])


class Memorisation(PrivacyPart):
    """Memorisation beyond Φ (``--parts memorisation``), on ``memorisation_worlds`` sample worlds (world 0 shared
    with the beyond-Φ check when both train on as many records)."""

    name: ClassVar[str] = "memorisation"
    result_field: ClassVar[str] = "memorisation"

    def fit_keys(self, settings: RiskSettings, shape: AuditShape) -> list[tuple[Any, ...]]:
        """Its sample worlds."""
        n = shape.rows(settings.memorisation_rows, share=2)
        return [sample_world_key(w, n) for w in range(settings.memorisation_worlds)]

    def requests(self, frame: AuditFrame) -> list[FitRequest]:
        """One fit per world, counted on the support where it ran."""
        st = frame.settings
        n = min(st.memorisation_rows, len(frame.reference) // 2)
        return memorisation_requests(
            frame.ref,
            frame.reference,
            self._design(frame),
            st.memorisation_worlds,
            n,
            st.memorisation_synth_factor,
            st.seed,
        )

    def run(self, frame: AuditFrame, fitted: list[Any]) -> MemorisationResult:
        """f̂ over every pair of worlds, one-sided bounds at the policy's levels."""
        st, mp = frame.settings, frame.policy.memorisation
        n = min(st.memorisation_rows, len(frame.reference) // 2)
        levels = (1 - mp.warn_alpha, 1 - mp.fail_alpha)
        design = self._design(frame)
        return memorisation_of(
            design, frame.reference, fitted, n, st.memorisation_synth_factor, st.seed, st.confidence, levels
        )

    def _design(self, frame: AuditFrame) -> PhiDesign:
        return frame.cached("memorisation-design", lambda: design_of(frame.ref, frame.reference))

    def checks(self, result: MemorisationResult, frame: AuditFrame) -> list[PolicyCheck]:
        """The copy share under ``policy.memorisation``."""
        return [memorisation_check(result, frame.policy)]


def memorisation_check(result: MemorisationResult, policy: RiskPolicy) -> PolicyCheck:
    """The copy share's one-sided lower bounds against ``policy.memorisation.min_share``: fail at ``1 − fail_alpha``,
    warn at ``1 − warn_alpha``."""
    mq, lows = policy.memorisation, result.copy_share_lower
    lw, lf = lows.get(f"{1 - mq.warn_alpha:g}"), lows.get(f"{1 - mq.fail_alpha:g}")
    return PolicyCheck(
        name="memorisation beyond Φ (copy share)",
        level=level_of(lf is not None and lf > mq.min_share, lw is not None and lw > mq.min_share),
        detail=f"copy share {result.copy_share:+.4f} (CI {result.copy_share_ci[0]:+.4f}–"
        f"{result.copy_share_ci[1]:+.4f}; one-sided lower bounds "
        + ", ".join(f"{k}: {v:+.4f}" for k, v in lows.items())
        + f") over every pair of {result.worlds} {result.train_rows}-record training sets, "
        f"{result.synth_rows} synthetic rows each; 0 = nothing outside Φ reproduced, 1 = a copier",
    )
