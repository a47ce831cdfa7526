"""Directions in Φ⊥, basis-free: the canonical interaction decomposition of the full joint table (small tables) or the
interaction spaces of the minimal non-Φ marginals, each whole, through their centred marginal cells (large tables).

Neither depends on a basis that a linear-algebra library chooses: an earlier version drew β = V z in the orthonormal
basis V = ``scipy.linalg.null_space(A)``, which differs between LAPACK code paths (CPU kernels), so the same audit
gave p = 0.035 on one CPU and 0.446 on another (issue 13). Here every direction and every statistic is built from
objects that are unique given (data, Φ, seed): orthogonal projections computed by averaging along axes (no BLAS, no
factorisation), and table cells.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from sdgov.audits.decomposability.moves import MovePool
from sdgov.audits.decomposability.theta import ThetaSpace
from sdgov.data.tables import contingency_table


def non_phi_sets(theta: ThetaSpace) -> list[tuple[str, ...]]:
    """Every attribute set not inside a Φ marginal, by size then attribute order (a canonical order)."""
    return [
        s
        for k in range(1, len(theta.attributes) + 1)
        for s in itertools.combinations(theta.attributes, k)
        if not theta.inside_phi(s)
    ]


def count_tables(
    df: pd.DataFrame, sets: list[tuple[str, ...]], domain: dict[str, int], weights: np.ndarray | None = None
) -> list[np.ndarray]:
    """The (weighted) records' count table on each attribute set, flattened in C order: everything a basis's
    features read of a sample (:attr:`ProjectionBasis.marginals`, :attr:`MarginalSetBasis.marginals`). A fit's
    worker sends these back instead of its sample: Application 3's 35 tested tables are 17,799 counts, where a
    sample of 1M records is 14 MB that the audit's own process would hold for every fit of a batch."""
    return [contingency_table(df, T, [domain[a] for a in T], weights).ravel() for T in sets]


class ProjectionBasis:
    """Φ⊥ of the full joint table as the orthogonal sum of its interaction spaces (the ANOVA decomposition):

        W_S = ⊗_{a∈S} (I − J_a/k_a) ⊗_{a∉S} J_a/k_a,        Φ⊥ = ⊕_{S not inside any Φ marginal} W_S

    (J_a the all-ones matrix). Every marginal in Φ is spanned by the W_T with T inside it, and the W_S are mutually
    orthogonal, so the sum over the other sets is exactly Φ⊥. P_S x is computed by centring x along every a ∈ S and
    averaging along every a ∉ S — means along axes, the same numbers on any CPU up to rounding (~1e-16). A
    random direction is β = P_Φ⊥ g with g ~ N(0, I) seeded (the same law as V z for any orthonormal basis V, but
    one value whatever basis a library would return); features are the synthetic joint table itself."""

    mode = "projection"

    def __init__(self, theta: ThetaSpace):
        self.theta = theta
        self.sets = non_phi_sets(theta)
        self.d = math.prod(theta.shape)
        self.dims = [math.prod(theta.domain[a] - 1 for a in s) for s in self.sets]
        self.info = {"joint_cells": self.d, "interaction_sets": len(self.sets), "phi_perp_dim": sum(self.dims)}
        self.marginals = [tuple(theta.attributes)]  # the features read the whole joint table

    def project(self, x: np.ndarray, s: tuple[str, ...]) -> np.ndarray:
        """P_S of one table or a stack of tables (leading axis: fits), flattened like the input."""
        th = self.theta
        lead = x.shape[:-1]
        t = x.reshape(lead + th.shape)
        off = len(lead)
        for i, a in enumerate(th.attributes):
            m = t.mean(axis=off + i, keepdims=True)
            t = t - m if a in s else m
        return np.broadcast_to(t, lead + th.shape).reshape(lead + (self.d,))

    def perp(self, x: np.ndarray) -> np.ndarray:
        """P_Φ⊥ x = Σ_S P_S x over the non-Φ sets."""
        out = np.zeros_like(x, dtype=np.float64)
        for s in self.sets:
            out += self.project(x, s)
        return out

    def random_direction(self, rng: np.random.Generator) -> np.ndarray:
        """β = Σ_S P_S g / √dim W_S: every interaction set gets the same expected share of β, however many
        dimensions it has (a leak of one small 3-way set is otherwise drowned by the 4-way set's many more)."""
        g = rng.standard_normal(self.d)
        return sum((self.project(g, s) / math.sqrt(dim) for s, dim in zip(self.sets, self.dims)), np.zeros(self.d))

    def features(self, counts: list[np.ndarray]) -> np.ndarray:
        """Θ of a synthetic sample on the full joint table, from its :func:`count_tables` on :attr:`marginals`
        (integer counts as floats)."""
        return np.asarray(counts[0], dtype=np.float64)

    def residual_features(self, counts: list[np.ndarray]) -> np.ndarray:
        """Θ of a synthetic sample minus its own Φ-only model: the maximum-entropy joint with the sample's own Φ
        marginals, scaled to its size (:func:`sdgov.audits.privacy.beyond_phi.phi_projection`, IPF to convergence).

        Why (issue 37 item 5). A generator that reads only Φ draws its sample from a model in the Φ family whose Φ
        tables are noisy — with noise the audit's seed does not fix when the generator draws it itself — and the
        noise moves the sample's Φ⊥ coordinates too (the joint of a model in the Φ family is not linear in its Φ
        tables). Subtracting the sample's own Φ-only model removes that part, whatever the noise: what is left of an
        honest fit is sampling noise, and what a generator reads outside Φ stays. Under the null the features are
        still one function of each sample, so the paired test keeps its exactness."""
        from sdgov.audits.privacy.beyond_phi import phi_projection

        joint = self.features(counts)
        th = self.theta
        axes = [tuple(sorted(th.pos[a] for a in c)) for c in th.cliques]
        return joint - float(joint.sum()) * phi_projection(joint.reshape(th.shape), axes).ravel()

    def data_features(self, weights: np.ndarray) -> np.ndarray:
        """Θ of a weighted dataset on Θ's cells (e.g. D₊ − D₋), on the full joint table."""
        out = np.zeros(self.d)
        out[self.theta.cells] = weights
        return out

    def groups(self, F: np.ndarray) -> list[np.ndarray]:
        """Per interaction set, the fits' coordinates in it: P_S Θ (fits × cells), the canonical cell coordinates."""
        return [self.project(F, s) for s in self.sets]

    def critical(self, diff: np.ndarray, chosen: list[int]) -> np.ndarray:
        """β* = Σ_{S chosen} P_S(Θ̄₊ − Θ̄₋): the mean response of the fits inside the chosen interaction sets."""
        return sum((self.project(diff, self.sets[i]) for i in chosen), np.zeros(self.d))

    def embed(self, i: int, w: np.ndarray) -> np.ndarray:
        """The feature-space direction whose inner product with the features is ⟨w, coordinates in set i⟩ (P_S is
        symmetric: ⟨w, P_S Θ⟩ = ⟨P_S w, Θ⟩)."""
        return self.project(w, self.sets[i])

    def scores(self, pool: MovePool, beta: np.ndarray) -> list[np.ndarray]:
        """Per block of the pool, each move's inner product ⟨β, u⟩ (β on the full joint table)."""
        at = beta[self.theta.cells]
        return [(at[b.cells] * b.sign).sum(axis=1) for b in pool.blocks]

    def cells_vector(self, beta: np.ndarray) -> np.ndarray:
        """β at the occupied cells of D* (for the card's cells and the cosine to D₊ − D₋)."""
        return beta[self.theta.cells]

    def set_names(self) -> list[str]:
        """The non-Φ interaction sets, each as ``A × B × …``, in basis order."""
        return [" × ".join(s) for s in self.sets]


class MarginalSetBasis:
    """Φ⊥ on large tables through its low-order part: the interaction spaces W_T of the **minimal** non-Φ sets T
    (every proper subset of T inside Φ; the 3-way sets for an all-2-way Φ), every one through its cells. A cell v of the
    T-marginal gives b_v = ⊗_{a∈T}(e_{v_a} − 1/k_a) ⊗ 1, the projection onto W_T ⊂ Φ⊥ of that marginal cell's
    indicator; the b_v of all cells of T span W_T. ⟨b_v, Θ(S)⟩ is the fully centred T-marginal of S at v, so the
    features need only the synthetic T-marginals, never the (1.56 M-cell) joint table.

    Every minimal set is screened, as the exact interaction decomposition does on small tables, each through all of
    its cells up to ``m`` (a larger set through ``m`` seeded cells of its own), so a leak of one low-order marginal is
    seen in all (or ``m``) of its cells. (An earlier version sampled ``m`` = 1,000 random cells across *all* the
    sets, 1,000 of Application 3's 17,799: the leaked set got about 14 of its 250 cells, and a 2 % or 5 % blend of
    it was caught in 1 of 5 seeds.)"""

    mode = "minimal non-Φ marginals"

    def __init__(self, theta: ThetaSpace, m: int, rng: np.random.Generator):
        self.theta = theta
        self.sets = theta.minimal_non_phi_sets()
        sizes = [math.prod(theta.domain[a] for a in T) for T in self.sets]
        self.used = list(range(len(self.sets)))
        cells = [np.sort(rng.choice(n, m, replace=False)) if n > m else np.arange(n) for n in sizes]
        self.t_of = np.concatenate([np.full(len(c), t, dtype=np.int64) for t, c in enumerate(cells)])
        self.v_of = np.concatenate(cells).astype(np.int64)
        self.norm = np.array(
            [
                math.sqrt(
                    math.prod(1 - 1 / theta.domain[a] for a in self.sets[t])
                    * math.prod(theta.domain[a] for a in theta.attributes if a not in self.sets[t])
                )
                for t in self.t_of
            ]
        )
        # E‖Σ_{v∈T} g_v b_v/‖b_v‖‖² = (cells of T) for standard normal g on all of T's cells: scale each set to the
        # same expected share (a subsampled set: its tested cells stand in for all of them)
        self.share = 1 / np.sqrt(np.array([len(cells[t]) for t in self.t_of], dtype=np.float64))
        self.d = len(self.t_of)
        self.info = {
            "marginal_cells": self.d,
            "of_cells": sum(sizes),
            "sets": len(self.sets),
            "sets_subsampled": sum(n > m for n in sizes),
        }
        self.marginals = list(self.sets)  # the features read these tables only, never the joint

    def random_direction(self, rng: np.random.Generator) -> np.ndarray:
        """Standard normal coefficients on the cells, scaled so that every tested set gets the same expected share
        of β however many cells it has (as β = Σ_S P_S g / √dim W_S does on small tables)."""
        return rng.standard_normal(self.d) * self.share

    def groups(self, F: np.ndarray) -> list[np.ndarray]:
        """Per tested set, the fits' features on its cells (fits × cells of that set)."""
        return [F[:, self.t_of == t] for t in self.used]

    def critical(self, diff: np.ndarray, chosen: list[int]) -> np.ndarray:
        """β* coefficients: the mean response on every cell of the chosen sets, zero elsewhere."""
        keep = np.isin(self.t_of, [self.used[i] for i in chosen])
        return np.where(keep, diff, 0.0)

    def embed(self, i: int, w: np.ndarray) -> np.ndarray:
        """The feature-space direction whose inner product with the features is ⟨w, coordinates in set i⟩."""
        out = np.zeros(self.d)
        out[self.t_of == self.used[i]] = w
        return out

    def set_names(self) -> list[str]:
        """The tested minimal non-Φ sets, each as ``A × B × …``, in the order of :meth:`groups`."""
        return [" × ".join(self.sets[t]) for t in self.used]

    def features(self, counts: list[np.ndarray]) -> np.ndarray:
        """The fully centred T-marginal at every tested cell (T, v), normalised — ⟨b, Θ⟩ per basis vector — from the
        records' :func:`count_tables` on :attr:`marginals`."""
        out = np.zeros(self.d)
        for t in self.used:
            T = self.sets[t]
            m = np.asarray(counts[t], dtype=np.float64).reshape(tuple(self.theta.domain[a] for a in T))
            for ax in range(m.ndim):
                m = m - m.mean(axis=ax, keepdims=True)
            sel = self.t_of == t
            out[sel] = m.ravel()[self.v_of[sel]]
        return out / self.norm

    def data_features(self, weights: np.ndarray) -> np.ndarray:
        """The features of a weighted dataset on Θ's cells (e.g. D₊ − D₋)."""
        th = self.theta
        return self.features(count_tables(th.records, self.marginals, th.domain, weights))

    def scores(self, pool: MovePool, coef: np.ndarray) -> list[np.ndarray]:
        """Per block of the pool, each move's inner product with β = Σ coef · b (zero for an untested set)."""
        tables: dict[tuple[str, ...], np.ndarray] = {}
        for t in self.used:
            T = self.sets[t]
            tab = np.zeros(math.prod(self.theta.domain[a] for a in T))
            sel = self.t_of == t
            np.add.at(tab, self.v_of[sel], coef[sel] / self.norm[sel])
            tables[T] = tab
        return [
            (tables[b.attrs][b.tcell] * b.sign).sum(axis=1) if b.attrs in tables else np.zeros(len(b))
            for b in pool.blocks
        ]

    def cells_vector(self, coef: np.ndarray) -> np.ndarray:
        """β on the occupied cells (for reporting the cells that carry it)."""
        beta = np.zeros(self.theta.C)
        th = self.theta
        for t in self.used:
            T = self.sets[t]
            idx = [th.pos[a] for a in T]
            shape = tuple(th.shape[i] for i in idx)
            tab = np.zeros(math.prod(shape))
            sel = self.t_of == t
            np.add.at(tab, self.v_of[sel], coef[sel] / self.norm[sel])
            tab = tab.reshape(shape)
            for ax in range(len(shape)):
                tab = tab - tab.mean(axis=ax, keepdims=True)
            beta += tab.ravel()[np.ravel_multi_index(tuple(th.values[:, i] for i in idx), shape)]
        return beta
