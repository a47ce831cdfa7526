"""Directions in Φ⊥: an explicit orthonormal basis (few occupied cells) or a random subspace of centred
higher-order marginal cells (large tables)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import linalg

from sdgov.audits.decomposability.moves import MovePool
from sdgov.audits.decomposability.theta import ThetaSpace


class ExplicitBasis:
    """Orthonormal basis V of Φ⊥ on the occupied cells; features = Vᵀ Θ; directions are cell vectors."""

    mode = "explicit"

    def __init__(self, theta: ThetaSpace, pool: MovePool):
        self.theta = theta
        self.V = linalg.null_space(theta.indicator_matrix().toarray())
        self.d = self.V.shape[1]
        U = pool.matrix().toarray()
        self.info = {
            "phi_perp_dim": self.d,
            "moves": len(pool),
            "move_rank": int(np.linalg.matrix_rank(U)) if len(U) else 0,
        }

    def features(self, df: pd.DataFrame) -> np.ndarray:
        return self.V.T @ self.theta.theta_of_sample(df)

    def direction(self, coef: np.ndarray) -> np.ndarray:
        return self.V @ coef

    def scores(self, pool: MovePool, coef: np.ndarray) -> list[np.ndarray]:
        beta = self.direction(coef)
        return [(beta[b.cells] * b.sign).sum(axis=1) for b in pool.blocks]

    def cells_vector(self, coef: np.ndarray) -> np.ndarray:
        return self.direction(coef)


class MarginalCellBasis:
    """Random subspace: M random cells (T, v) of minimal non-Φ marginals; b = ⊗_{a∈T}(e_{v_a} − 1/k_a) ⊗ 1, the
    projection onto Φ⊥ of that marginal cell's indicator (all proper subsets of T lie inside Φ). ⟨b, Θ(S)⟩ is the
    fully centred T-marginal of S at v, so features need only the synthetic T-marginals."""

    mode = "random subspace"

    def __init__(self, theta: ThetaSpace, m: int, rng: np.random.Generator):
        self.theta = theta
        self.sets = theta.minimal_non_phi_sets()
        sizes = [math.prod(theta.domain[a] for a in T) for T in self.sets]
        total = sum(sizes)
        pick = np.sort(rng.choice(total, min(m, total), replace=False))
        bounds = np.cumsum([0] + sizes)
        self.t_of = np.searchsorted(bounds, pick, side="right") - 1
        self.v_of = pick - bounds[self.t_of]
        self.used = sorted(set(self.t_of.tolist()))
        self.norm = np.array(
            [
                math.sqrt(
                    math.prod(1 - 1 / theta.domain[a] for a in self.sets[t])
                    * math.prod(theta.domain[a] for a in theta.attributes if a not in self.sets[t])
                )
                for t in self.t_of
            ]
        )
        self.d = len(pick)
        self.info = {"marginal_cells": self.d, "of_cells": total, "sets": len(self.sets)}

    def _centred(self, df: pd.DataFrame, t: int) -> np.ndarray:
        T = self.sets[t]
        shape = tuple(self.theta.domain[a] for a in T)
        flat = np.ravel_multi_index(tuple(df[a].to_numpy().astype(np.int64) for a in T), shape)
        m = np.bincount(flat, minlength=math.prod(shape)).reshape(shape).astype(np.float64)
        for ax in range(len(shape)):
            m = m - m.mean(axis=ax, keepdims=True)
        return m.ravel()

    def features(self, df: pd.DataFrame) -> np.ndarray:
        out = np.zeros(self.d)
        for t in self.used:
            sel = self.t_of == t
            out[sel] = self._centred(df, t)[self.v_of[sel]]
        return out / self.norm

    def scores(self, pool: MovePool, coef: np.ndarray) -> list[np.ndarray]:
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
