"""Black-box decomposability test (Houssiau et al. 2022, §3.2–3.3, eqs. 3–7): does a generator use only Φ?

Θ is the count vector of the joint table over the audited attributes; span(Φ) is spanned by the marginal-
indicator rows; Φ⊥ is its orthogonal complement. A generator that reads only φ(D) gives synthetic data with
the same distribution for any two datasets with the same φ; one that reads anything in Φ⊥ does not.

Everything works on the **count vector restricted to its non-empty cells** (weighted unique records), never on
rows, and every extremal dataset is built from **integer moves**: vectors

    u = ⊗_{a∈S} (e_{p_a} − e_{q_a}) ⊗_{a∉S} e_{j_a}        (S not inside any Φ marginal)

with entries in {−1, 0, +1} on 2^|S| cells. Every marginal of Φ sums u over some a ∈ S, where (e_p − e_q)·1 = 0,
so u ∈ Φ⊥ exactly; integer combinations keep counts integral and φ *exactly* unchanged (checked in code:
``φ(D±) == φ(D*)`` on integer tables), and a move only ever takes records from cells that hold enough of them,
so every extremal dataset is a valid dataset (non-negative integer counts).

Two regimes for the directions (the "basis"):

* **explicit** (few occupied cells, e.g. Applications 1–2): an orthonormal basis V of Φ⊥ restricted to the
  occupied cells (``scipy.linalg.null_space`` of the marginal-indicator matrix), β = V z with z ~ N(0, I);
  â = Vᵀ(Θ̄₊ − Θ̄₋) (eq. 5), β* = V â over the components with |t| ≥ ``beta_star_min_t`` (eq. 6). The extremal
  change δ is built greedily from moves (all 2^|T| corners occupied) in order of |⟨β, u⟩|, each pushed to the
  capacity left in its cells, and D± = Θ(D*) ± δ.
* **random subspace** (large tables, e.g. Application 3, 1.56M cells): ``candidate_basis`` random cells (T, v) of
  the minimal non-Φ marginals (the paper used 1000 3-way cells), each projected onto Φ⊥:
  b = ⊗_{a∈T}(e_v − 1/k_a) ⊗ 1, whose inner product with Θ(S) is the fully centred T-marginal of S at v — the
  statistics need only synthetic marginals. Here D* is sparse, so moves need only *half* of their corners occupied:
  D₊ = Θ(D*) + δ₊ and D₋ = Θ(D*) + δ₋ are built separately (extremal along +β and −β), each move oriented so that
  it only removes records from occupied corners (cells D* leaves empty are added to Θ's cell list). β* keeps the
  interaction sets whose phase-1 responses exceed chance (standardised Σz² ≥ ``beta_star_min_z``).

Then K fresh fits on each of D±β* and a two-sided Welch t-test of g_β*(synthetic) = ⟨β*, Θ(synthetic)⟩
(eq. 7). The fits of the two phases are independent, so the test is exact in its null whatever β* is.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from scipy import linalg, sparse, stats

from sdgov.audit_protocol import (
    AuditError,
    Clique,
    Factory,
    check_sample,
    fit_generator,
    load_generator,
    make_generator,
)

MAX_JOINT = 2**62
EXPLICIT_MAX_CELLS = 5_000  # occupied cells up to which Φ⊥ gets an explicit orthonormal basis


# ----------------------------------------------------------------------------------------------- settings


class AuditSettings(BaseModel):
    """Pre-registered audit settings (mirrors the spec's ``audit`` section)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    alpha: float = Field(0.05, gt=0, lt=1, description="pre-registered significance level")
    K: int = Field(10, ge=2, description="fits per extremal dataset, in each phase")
    rows: int | None = Field(None, ge=1, description="synthetic rows per fit; default 10 × the records of D*")
    seed: int = Field(0, ge=0)
    candidate_basis: int = Field(
        1000,
        ge=1,
        description="random higher-order marginal cells spanning the random "
        "subspace of Φ⊥ (large tables; the paper used 1000 3-way cells)",
    )
    beta_star_min_z: float = Field(
        3.0,
        description="random-subspace β* keeps the interaction sets whose "
        "standardised Σt² is at least this (else the best one)",
    )
    workers: int = Field(1, ge=1, description="processes fitting in parallel (fits are independent)")
    move_pool: int = Field(200_000, ge=1, description="most integer moves considered for extremal datasets")
    explicit_max_cells: int = Field(EXPLICIT_MAX_CELLS, ge=1)
    beta_star_min_t: float = Field(2.0, ge=0, description="explicit-basis β* keeps components with |t| ≥ this")
    positive_control: str | None = Field(None, description="import path of a dishonest generator run beside")
    generator_params: dict[str, Any] = Field(default_factory=dict)
    control_params: dict[str, Any] = Field(default_factory=dict)


# ----------------------------------------------------------------------------------------------- result


class ControlResult(BaseModel):
    generator: str
    p_value: float
    verdict: Literal["pass", "fail"]
    caught: bool
    effect_size: float
    seconds: float


class DecomposabilityResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    test: str = "decomposability (Houssiau et al. 2022, eqs. 3-7)"
    generator: str
    generator_params: dict[str, Any]
    attributes: list[str]
    phi: list[list[str]]
    alpha: float
    K: int
    rows: int
    records: int
    seed: int
    p_value: float
    verdict: Literal["pass", "fail"]
    t_statistic: float
    effect_size: float = Field(description="Cohen's d of g_β* between D₊ and D₋ fits")
    mean_difference: float
    g_plus: list[float]
    g_minus: list[float]
    basis: dict[str, Any]
    extremal: dict[str, Any]
    top_cells: list[dict[str, Any]]
    top_interactions: list[dict[str, Any]]
    seeds: dict[str, list[int]]
    timing: dict[str, float]
    seconds: float
    control: ControlResult | None = None


# ----------------------------------------------------------------------------------------------- Θ space


class ThetaSpace:
    """The joint table over the audited attributes, held only at the occupied cells of D*."""

    def __init__(self, records: pd.DataFrame, cliques: list[Clique], domain: dict[str, int]) -> None:
        self.attributes = list(domain)
        self.domain = dict(domain)
        self.shape = tuple(domain[a] for a in self.attributes)
        if math.prod(self.shape) >= MAX_JOINT:
            raise AuditError(
                f"the joint table has {math.prod(self.shape):.3g} cells, too many to index",
                "decomposability",
                "audit fewer attributes at a time",
            )
        missing = [a for a in self.attributes if a not in records.columns]
        if missing:
            raise AuditError(f"the data lacks audited column(s) {missing}", "decomposability")
        if len(records) == 0:
            raise AuditError("no records to audit on", "decomposability")
        self.pos = {a: i for i, a in enumerate(self.attributes)}
        self.cliques = [tuple(sorted(c, key=self.pos.__getitem__)) for c in cliques]
        flat = np.ravel_multi_index(tuple(records[a].to_numpy().astype(np.int64) for a in self.attributes), self.shape)
        self.cells, counts = np.unique(flat, return_counts=True)
        self.x = counts.astype(np.int64)
        self.values = np.stack(np.unravel_index(self.cells, self.shape), axis=1).astype(np.int64)  # C × m
        self.records = pd.DataFrame({a: self.values[:, i].astype(np.int32) for i, a in enumerate(self.attributes)})
        self.index = {int(c): i for i, c in enumerate(self.cells)}

    def extend(self, flats: np.ndarray) -> None:
        """Add (empty) cells to the cell list — cells an extremal dataset may put records into."""
        new = np.setdiff1d(np.unique(flats), self.cells)
        if len(new) == 0:
            return
        cells = np.concatenate([self.cells, new])
        order = np.argsort(cells)
        self.cells = cells[order]
        self.x = np.concatenate([self.x, np.zeros(len(new), dtype=np.int64)])[order]
        self.values = np.stack(np.unravel_index(self.cells, self.shape), axis=1).astype(np.int64)
        self.records = pd.DataFrame({a: self.values[:, i].astype(np.int32) for i, a in enumerate(self.attributes)})
        self.index = {int(c): i for i, c in enumerate(self.cells)}

    @property
    def C(self) -> int:
        return len(self.cells)

    def inside_phi(self, s: tuple[str, ...]) -> bool:
        return any(set(s) <= set(c) for c in self.cliques)

    def minimal_non_phi_sets(self) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        for k in range(1, len(self.attributes) + 1):
            for s in itertools.combinations(self.attributes, k):
                if not self.inside_phi(s) and not any(set(t) <= set(s) for t in out):
                    out.append(s)
        return out

    def phi_of(self, weights: np.ndarray) -> list[np.ndarray]:
        """Exact integer Φ marginals of a count vector on the occupied cells."""
        out = []
        for c in self.cliques:
            idx = [self.pos[a] for a in c]
            flat = np.ravel_multi_index(tuple(self.values[:, i] for i in idx), tuple(self.shape[i] for i in idx))
            out.append(_int_bincount(flat, weights, math.prod(self.shape[i] for i in idx)))
        return out

    def indicator_matrix(self) -> sparse.csr_matrix:
        """Marginal-indicator rows of Φ restricted to the occupied cells (rows: Φ cells, columns: occupied cells)."""
        blocks = []
        for c in self.cliques:
            idx = [self.pos[a] for a in c]
            size = math.prod(self.shape[i] for i in idx)
            flat = np.ravel_multi_index(tuple(self.values[:, i] for i in idx), tuple(self.shape[i] for i in idx))
            blocks.append(sparse.csr_matrix((np.ones(self.C), (flat, np.arange(self.C))), shape=(size, self.C)))
        return sparse.vstack(blocks).tocsr()

    def theta_of_sample(self, df: pd.DataFrame) -> np.ndarray:
        """Θ of a synthetic sample at the occupied cells of D* (β is zero everywhere else)."""
        flat = np.ravel_multi_index(tuple(df[a].to_numpy().astype(np.int64) for a in self.attributes), self.shape)
        i = np.searchsorted(self.cells, flat)
        i = np.minimum(i, self.C - 1)
        hit = self.cells[i] == flat
        return np.bincount(i[hit], minlength=self.C).astype(np.float64)

    def describe_cell(self, i: int, labels: dict[str, list[str]] | None) -> dict[str, Any]:
        out = {}
        for j, a in enumerate(self.attributes):
            v = int(self.values[i, j])
            out[a] = labels[a][v] if labels and a in labels and v < len(labels[a]) else v
        return out


def _int_bincount(flat: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.int64)
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, flat, w)
    return out


# ----------------------------------------------------------------------------------------------- moves


class MoveBlock:
    """Integer moves of one minimal non-Φ set T: ``cells`` (moves × 2^|T|) occupied-cell indices with corner
    signs ``sign``; ``tcell`` the same corners as flat indices of the T-marginal table."""

    def __init__(self, attrs: tuple[str, ...], cells: np.ndarray, sign: np.ndarray, tcell: np.ndarray):
        self.attrs, self.cells, self.sign, self.tcell = attrs, cells, sign, tcell

    def __len__(self) -> int:
        return len(self.cells)


class MovePool:
    def __init__(self, theta: ThetaSpace, blocks: list[MoveBlock]):
        self.theta = theta
        self.blocks = [b for b in blocks if len(b)]

    def __len__(self) -> int:
        return sum(len(b) for b in self.blocks)

    def matrix(self) -> sparse.csr_matrix:
        """Uᵀ-style (moves × occupied cells) ±1 matrix."""
        rows, cols, vals, off = [], [], [], 0
        for b in self.blocks:
            m, w = b.cells.shape
            rows.append(np.repeat(np.arange(off, off + m), w))
            cols.append(b.cells.ravel())
            vals.append(np.tile(b.sign, m))
            off += m
        if not rows:
            return sparse.csr_matrix((0, self.theta.C))
        return sparse.csr_matrix(
            (np.concatenate(vals).astype(float), (np.concatenate(rows), np.concatenate(cols))),
            shape=(off, self.theta.C),
        )

    def set_counts(self) -> dict[str, int]:
        return {" × ".join(b.attrs): len(b) for b in self.blocks}


class _SetSlices(NamedTuple):
    """Θ's occupied cells grouped by their values outside T: each group (slice) holds the T-cells a move on T
    may combine, all other attributes fixed."""

    t_idx: list[int]
    off: list[int]
    tshape: tuple[int, ...]
    order: np.ndarray
    keys: np.ndarray
    starts: np.ndarray
    counts: np.ndarray


def _slices(theta: ThetaSpace, T: tuple[str, ...]) -> _SetSlices:
    t_idx = [theta.pos[a] for a in T]
    off = [i for i in range(len(theta.attributes)) if i not in t_idx]
    key = (
        np.ravel_multi_index(tuple(theta.values[:, i] for i in off), tuple(theta.shape[i] for i in off))
        if off
        else np.zeros(theta.C, dtype=np.int64)
    )
    order = np.argsort(key, kind="stable")
    keys, starts, counts = np.unique(key[order], return_index=True, return_counts=True)
    return _SetSlices(t_idx, off, tuple(theta.shape[i] for i in t_idx), order, keys, starts, counts)


def _corner_parity(s: int) -> tuple[np.ndarray, np.ndarray]:
    """The 2^s corners of a move as 0/1 choices (p or q per attribute of T), and which have even parity."""
    E = np.array(list(itertools.product((0, 1), repeat=s)), dtype=np.int64)  # 2^s × s
    return E, E.sum(axis=1) % 2 == 0


def _corner_cells(theta: ThetaSpace, sl: _SetSlices, corner: np.ndarray, slice_keys: np.ndarray) -> np.ndarray:
    """Flat index in the full joint table of every corner (n × 2^s): T's values from ``corner``, the other
    attributes from each move's slice key."""
    full = np.empty(corner.shape[:2] + (len(theta.attributes),), dtype=np.int64)
    for d, i in enumerate(sl.t_idx):
        full[..., i] = corner[..., d]
    if sl.off:
        offv = np.unravel_index(slice_keys, tuple(theta.shape[i] for i in sl.off))
        for d, i in enumerate(sl.off):
            full[..., i] = offv[d][:, None]
    return np.ravel_multi_index(tuple(full[..., i] for i in range(len(theta.attributes))), theta.shape)


def move_pool(theta: ThetaSpace, limit: int, rng: np.random.Generator) -> MovePool:
    """Every move u = ⊗_{a∈T}(e_p − e_q) ⊗ e_rest whose 2^|T| cells D* occupies, for every minimal non-Φ set T
    (a random subset of at most ``limit`` / #sets per set when there are more)."""
    sets = theta.minimal_non_phi_sets()
    per_set = max(1, limit // max(1, len(sets)))
    blocks = []
    for T in sets:
        sl, s = _slices(theta, T), len(T)
        P, Q, Kk = [], [], []
        for k, a, c in zip(sl.keys, sl.starts, sl.counts):
            if c < 2**s:
                continue
            tv = theta.values[sl.order[a : a + c]][:, sl.t_idx]
            diff = np.all(tv[:, None, :] != tv[None, :, :], axis=2)
            i, j = np.nonzero(np.triu(diff, 1))
            if len(i) == 0:
                continue
            P.append(np.minimum(tv[i], tv[j]))
            Q.append(np.maximum(tv[i], tv[j]))
            Kk.append(np.full(len(i), k))
        if not P:
            continue
        P, Q, Kk = np.concatenate(P), np.concatenate(Q), np.concatenate(Kk)
        _, first = np.unique(np.column_stack([Kk, P, Q]), axis=0, return_index=True)
        P, Q, Kk = P[first], Q[first], Kk[first]
        E, even = _corner_parity(s)
        sign = np.where(even, 1, -1).astype(np.int64)
        corner_t = np.where(E[None, :, :] == 1, Q[:, None, :], P[:, None, :])  # n × 2^s × s
        tcell = np.ravel_multi_index(tuple(corner_t[..., d] for d in range(s)), sl.tshape)
        flat = _corner_cells(theta, sl, corner_t, Kk)
        pos = np.minimum(np.searchsorted(theta.cells, flat), theta.C - 1)
        ok = np.all(theta.cells[pos] == flat, axis=1)
        cells, tcell = pos[ok], tcell[ok]
        if len(cells) > per_set:
            pick = np.sort(rng.choice(len(cells), per_set, replace=False))
            cells, tcell = cells[pick], tcell[pick]
        blocks.append(MoveBlock(T, cells, sign, tcell))
    return MovePool(theta, blocks)


# ---------------------------------------------------------------------------------------- half moves (large tables)


class HalfMoveBlock(MoveBlock):
    """Moves of one set T whose corners need not all be occupied: applying +c (c > 0) removes records from the
    odd-parity corners only, −c from the even ones, so one *half* of the corners must be occupied. ``cap_pos`` /
    ``cap_neg`` are those halves' smallest counts (0 when a corner is empty)."""

    def __init__(self, attrs, cells, sign, tcell, cap_pos, cap_neg):
        super().__init__(attrs, cells, sign, tcell)
        self.cap_pos, self.cap_neg = cap_pos, cap_neg


def half_move_pool(theta: ThetaSpace, limit: int, rng: np.random.Generator, per_slice: int = 400) -> MovePool:
    """Moves u = ⊗_{a∈T}(e_p − e_q) ⊗ e_rest (T minimal non-Φ) for which at least one half of the corners is
    occupied in D*. Corners that D* leaves empty are added to Θ's cell list (they can only gain records)."""
    sets = theta.minimal_non_phi_sets()
    per_set = max(1, limit // max(1, len(sets)))
    raw = []
    for T in sets:
        sl, s = _slices(theta, T), len(T)
        tflat = np.ravel_multi_index(tuple(theta.values[:, i] for i in sl.t_idx), sl.tshape)
        E, even = _corner_parity(s)
        sign = np.where(even, 1, -1).astype(np.int64)
        P_all, Q_all, K_all = [], [], []
        for k, a, c in zip(sl.keys, sl.starts, sl.counts):
            if c < 2 ** (s - 1):
                continue
            mem = sl.order[a : a + c]
            tv = theta.values[mem][:, sl.t_idx]
            axes = [np.unique(tv[:, d]) for d in range(s)]
            if any(len(v) < 2 for v in axes):
                continue
            pairs = [np.array(list(itertools.combinations(v.tolist(), 2))) for v in axes]
            sizes = [len(p) for p in pairs]
            total = math.prod(sizes)
            pick = np.arange(total) if total <= per_slice else rng.choice(total, per_slice, replace=False)
            idx = np.unravel_index(pick, sizes)
            P = np.stack([pairs[d][idx[d], 0] for d in range(s)], axis=1)
            Q = np.stack([pairs[d][idx[d], 1] for d in range(s)], axis=1)
            corner = np.where(E[None, :, :] == 1, Q[:, None, :], P[:, None, :])
            cf = np.ravel_multi_index(tuple(corner[..., d] for d in range(s)), sl.tshape)
            present = np.isin(cf, tflat[mem])
            ok = present[:, even].all(axis=1) | present[:, ~even].all(axis=1)
            if ok.any():
                P_all.append(P[ok])
                Q_all.append(Q[ok])
                K_all.append(np.full(int(ok.sum()), k))
        if not P_all:
            continue
        P, Q, Kk = np.concatenate(P_all), np.concatenate(Q_all), np.concatenate(K_all)
        if len(P) > per_set:
            sel = np.sort(rng.choice(len(P), per_set, replace=False))
            P, Q, Kk = P[sel], Q[sel], Kk[sel]
        corner = np.where(E[None, :, :] == 1, Q[:, None, :], P[:, None, :])
        tcell = np.ravel_multi_index(tuple(corner[..., d] for d in range(s)), sl.tshape)
        flat = _corner_cells(theta, sl, corner, Kk)
        raw.append((T, flat, sign, tcell, even))
    if raw:
        theta.extend(np.concatenate([r[1].ravel() for r in raw]))
    blocks = []
    for T, flat, sign, tcell, even in raw:
        cells = np.searchsorted(theta.cells, flat)
        xc = theta.x[cells]
        blocks.append(
            HalfMoveBlock(T, cells, sign, tcell, cap_pos=xc[:, ~even].min(axis=1), cap_neg=xc[:, even].min(axis=1))
        )
    return MovePool(theta, blocks)


def _ranked_moves(pool: MovePool, scores: list[np.ndarray], min_frac: float):
    """(score, block, cells) of every move in order of |score|, down to ``min_frac`` of the largest (none if all 0)."""
    allsc = np.concatenate(scores) if scores else np.zeros(0)
    if len(allsc) == 0 or not np.any(allsc):
        return
    which = np.concatenate([np.full(len(s), bi) for bi, s in enumerate(scores)])
    row = np.concatenate([np.arange(len(s)) for s in scores])
    thr = min_frac * np.abs(allsc).max()
    for g in np.argsort(-np.abs(allsc), kind="stable"):
        sc = allsc[g]
        if abs(sc) < thr or sc == 0:
            return
        b = pool.blocks[which[g]]
        yield sc, b, b.cells[row[g]]


def greedy_half(pool: MovePool, scores: list[np.ndarray], x: np.ndarray, min_frac: float = 0.05) -> np.ndarray:
    """One extremal dataset along γ from half moves: moves in order of ⟨γ, u⟩ > 0 (orienting each by its score's
    sign), each pushed to what is left in the corners it takes records from. Returns δ with x + δ ≥ 0."""
    delta = np.zeros(len(x), dtype=np.int64)
    cap = x.copy()
    for sc, b, cells in _ranked_moves(pool, scores, min_frac):
        take = cells[b.sign < 0] if sc > 0 else cells[b.sign > 0]
        m = int(cap[take].min())
        if m > 0:
            cap[take] -= m
            delta[cells] += int(np.sign(sc)) * m * b.sign
    return delta


# ----------------------------------------------------------------------------------------------- extremal datasets


def greedy_extremal(pool: MovePool, scores: list[np.ndarray], x: np.ndarray, min_frac: float = 0.05) -> np.ndarray:
    """The extremal change along a direction γ: moves taken in order of |⟨γ, u⟩|, each with the sign of its score
    and pushed to the capacity left in its cells (Σ|c| ≤ x per cell, so both D* ± δ stay ≥ 0). Returns δ (int)."""
    cap = x.copy()
    delta = np.zeros(len(x), dtype=np.int64)
    for sc, b, cells in _ranked_moves(pool, scores, min_frac):
        m = int(cap[cells].min())
        if m > 0:
            cap[cells] -= m
            delta[cells] += int(np.sign(sc)) * m * b.sign
    return delta


def extremal_pair(
    theta: ThetaSpace, delta: np.ndarray, delta_minus: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """D₊ = Θ(D*) + δ, D₋ = Θ(D*) − δ (or + ``delta_minus``) as integer weights; checks non-negativity and
    φ(D±) == φ(D*) exactly."""
    plus = theta.x + delta
    minus = theta.x - delta if delta_minus is None else theta.x + delta_minus
    if plus.min() < 0 or minus.min() < 0:
        raise AssertionError("an extremal dataset has a negative count")
    phi0 = theta.phi_of(theta.x)
    for w in (plus, minus):
        for a, b in zip(theta.phi_of(w), phi0):
            if not np.array_equal(a, b):
                raise AssertionError("φ(D±) != φ(D*): an extremal dataset changed an agreed marginal")
    return plus, minus


# ----------------------------------------------------------------------------------------------- directions


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


# ----------------------------------------------------------------------------------------------- the test


def _seeds(seed: int, label: str, k: int) -> list[int]:
    ss = np.random.SeedSequence([seed, sum(label.encode()) * 7919 + len(label)])
    return [int(s.generate_state(1, np.uint32)[0]) for s in ss.spawn(k)]


def _fit_one(
    factory: Factory,
    gen_name: str,
    theta: ThetaSpace,
    params: dict[str, Any],
    recs: pd.DataFrame,
    w: np.ndarray,
    n: int,
    seed: int,
    features,
) -> np.ndarray:
    gen = make_generator(factory, theta.cliques, theta.domain, params, where=gen_name)
    fit_generator(gen, recs, w, seed=seed)
    df = check_sample(gen.sample(n, seed ^ 0x5EED), n, theta.domain, where=gen_name)
    return np.asarray(features(df), dtype=np.float64)


def _worker_fit(
    gen_name: str,
    theta: ThetaSpace,
    params: dict[str, Any],
    recs: pd.DataFrame,
    w: np.ndarray,
    n: int,
    seed: int,
    basis: Any,
) -> np.ndarray:
    """Process-pool entry point: the generator is re-imported by its path in the worker."""
    return _fit_one(load_generator(gen_name), gen_name, theta, params, recs, w, n, seed, basis.features)


def _fit_group(
    factory: Factory,
    gen_name: str,
    theta: ThetaSpace,
    params: dict[str, Any],
    weights: np.ndarray,
    n: int,
    seeds: list[int],
    basis: Any,
    pool: Any = None,
) -> np.ndarray:
    """K independent fits on one weighted dataset → the basis features of each fit's synthetic sample."""
    keep = weights > 0
    recs = theta.records[keep].reset_index(drop=True)
    w = weights[keep]
    if pool is not None:
        futures = [pool.submit(_worker_fit, gen_name, theta, params, recs, w, n, s, basis) for s in seeds]
        return np.asarray([f.result() for f in futures])
    return np.asarray([_fit_one(factory, gen_name, theta, params, recs, w, n, s, basis.features) for s in seeds])


def _executor(workers: int, direct_factory: bool):
    """A spawn-based process pool for the fits (never fork: JAX is not fork-safe); None for serial runs or when
    the factory was handed in as an object (it cannot be re-imported by path in a worker)."""
    if workers <= 1 or direct_factory:
        return None
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))


def _welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """(p, t, Cohen's d) of a two-sided Welch test; identical constant groups give p = 1."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    diff = a.mean() - b.mean()
    va, vb = a.var(ddof=1), b.var(ddof=1)
    pooled = math.sqrt((va + vb) / 2)
    if va == 0 and vb == 0:
        return (
            (1.0 if diff == 0 else 0.0),
            (0.0 if diff == 0 else math.copysign(math.inf, diff)),
            (0.0 if diff == 0 else math.copysign(math.inf, diff)),
        )
    res = stats.ttest_ind(a, b, equal_var=False)
    return float(res.pvalue), float(res.statistic), float(diff / pooled)


def run_decomposability(
    records: pd.DataFrame,
    cliques: list[Clique],
    domain: dict[str, int],
    generator: str,
    settings: AuditSettings | None = None,
    labels: dict[str, list[str]] | None = None,
    factory: Factory | None = None,
    _control: bool = True,
) -> DecomposabilityResult:
    """Audit ``generator`` (import path) against Φ = ``cliques`` on the encoded ``records`` (cell indices)."""
    st = settings or AuditSettings()
    t_start = time.perf_counter()
    cpu_start = time.process_time()
    given_factory = factory
    factory = factory or load_generator(generator)
    timing = {"basis": 0.0, "extremal": 0.0, "fits": 0.0, "test": 0.0}
    params = dict(st.generator_params)

    # ---- Θ, Φ⊥ basis, the pool of integer moves
    t0 = time.perf_counter()
    theta = ThetaSpace(records, cliques, domain)
    n = st.rows or 10 * int(theta.x.sum())
    rng = np.random.default_rng(np.random.SeedSequence([st.seed, 1]))
    explicit = st.explicit_max_cells >= theta.C
    pool = move_pool(theta, 10**6, rng) if explicit else half_move_pool(theta, st.move_pool, rng)
    if len(pool) == 0:
        raise AuditError(
            "Φ⊥ has no direction that moves only occupied cells of the data: nothing to test",
            "decomposability",
            "audit on more data, or Φ already fixes the whole table",
        )
    basis: Any = ExplicitBasis(theta, pool) if explicit else MarginalCellBasis(theta, st.candidate_basis, rng)
    binfo = {
        "mode": basis.mode,
        **basis.info,
        "moves": len(pool),
        "move_sets": pool.set_counts(),
        "occupied_cells": theta.C,
        "joint_cells": math.prod(theta.shape),
        "minimal_non_phi_sets": [list(s) for s in theta.minimal_non_phi_sets()],
    }
    timing["basis"] = time.perf_counter() - t0

    # ---- phase 1: random direction β ∈ Φ⊥, extremal datasets D±β, K fits each
    t0 = time.perf_counter()
    z = rng.standard_normal(basis.d)

    def extremal(coef: np.ndarray):
        scores = basis.scores(pool, coef)
        if explicit:
            plus, minus = extremal_pair(theta, greedy_extremal(pool, scores, theta.x))
        else:
            plus, minus = extremal_pair(
                theta, greedy_half(pool, scores, theta.x), greedy_half(pool, [-sc for sc in scores], theta.x)
            )
        moved = int(np.abs(plus - theta.x).sum() + np.abs(minus - theta.x).sum())
        return plus, minus, moved, _cos((plus - minus).astype(float), basis.cells_vector(coef))

    plus1, minus1, moved1, cos1 = extremal(z)
    if moved1 == 0:
        raise AuditError(
            "no extremal dataset can move away from D* without a negative count",
            "decomposability",
            "audit on more data",
        )
    ext = {"phi_unchanged": True, "phase1_records_moved": moved1, "phase1_cosine_to_beta": cos1}
    timing["extremal"] += time.perf_counter() - t0

    seeds = {k: _seeds(st.seed, k, st.K) for k in ("phase1_plus", "phase1_minus", "phase2_plus", "phase2_minus")}
    t0 = time.perf_counter()
    executor = _executor(st.workers, given_factory is not None)
    try:
        G1p = _fit_group(factory, generator, theta, params, plus1, n, seeds["phase1_plus"], basis, executor)
        G1m = _fit_group(factory, generator, theta, params, minus1, n, seeds["phase1_minus"], basis, executor)
    except BaseException:
        if executor is not None:
            executor.shutdown(cancel_futures=True)
        raise
    timing["fits"] += time.perf_counter() - t0

    # ---- eqs. 5–6: â per basis direction, critical direction β*, extremal datasets along β*
    t0 = time.perf_counter()
    a_hat = G1p.mean(axis=0) - G1m.mean(axis=0)
    se = np.sqrt(G1p.var(axis=0, ddof=1) / st.K + G1m.var(axis=0, ddof=1) / st.K)
    tstat = np.divide(a_hat, se, out=np.zeros_like(a_hat), where=se > 0)
    if explicit:
        keep = np.abs(tstat) >= st.beta_star_min_t
    else:  # keep the interaction sets whose components respond more than chance (Σt² over the set), all their cells
        keep = np.zeros(basis.d, dtype=bool)
        zs = {}
        for t in basis.used:
            sel = basis.t_of == t
            zt = stats.norm.isf(np.clip(stats.t.sf(np.abs(tstat[sel]), df=2 * st.K - 2), 1e-300, 1)) ** 2
            zs[t] = float((zt.sum() - sel.sum()) / math.sqrt(2 * sel.sum()))  # t → z first: heavy tails at small K
        chosen = [t for t, zt in zs.items() if zt >= st.beta_star_min_z] or [max(zs, key=zs.__getitem__)]
        for t in chosen:
            keep |= basis.t_of == t
        ext["beta_star_sets"] = [" × ".join(basis.sets[t]) for t in chosen]
    if not keep.any():
        keep = np.abs(tstat) >= np.sort(np.abs(tstat))[-min(10, len(tstat))]
    w = np.where(keep, a_hat, 0.0)
    if not np.any(w):
        w = z
    w = w / np.linalg.norm(w)
    plus2, minus2, moved2, cos2 = extremal(w)
    if moved2 == 0:
        plus2, minus2 = plus1, minus1
    beta_cells = basis.cells_vector(w)
    ext.update(
        {"phase2_records_moved": moved2, "phase2_cosine_to_beta_star": cos2, "beta_star_components": int(keep.sum())}
    )
    timing["extremal"] += time.perf_counter() - t0

    # ---- phase 2: K fresh fits on D±β*; g_β* = ⟨β*, Θ(synthetic)⟩
    t0 = time.perf_counter()
    try:
        gp = _fit_group(factory, generator, theta, params, plus2, n, seeds["phase2_plus"], basis, executor) @ w
        gm = _fit_group(factory, generator, theta, params, minus2, n, seeds["phase2_minus"], basis, executor) @ w
    finally:
        if executor is not None:
            executor.shutdown(cancel_futures=True)
    timing["fits"] += time.perf_counter() - t0

    # ---- eq. 7: two-sided Welch t-test
    t0 = time.perf_counter()
    p, tval, dval = _welch(gp, gm)
    verdict: Literal["pass", "fail"] = "fail" if p < st.alpha else "pass"
    top = np.argsort(-np.abs(beta_cells))[:10]
    top_cells = [
        {"cell": theta.describe_cell(int(i), labels), "weight": float(beta_cells[i]), "count_in_data": int(theta.x[i])}
        for i in top
        if beta_cells[i] != 0
    ]
    timing["test"] = time.perf_counter() - t0

    control = None
    if _control and st.positive_control:
        ct = time.perf_counter()
        cres = run_decomposability(
            records,
            cliques,
            domain,
            st.positive_control,
            st.model_copy(update={"generator_params": st.control_params}),
            labels,
            _control=False,
        )
        control = ControlResult(
            generator=st.positive_control,
            p_value=cres.p_value,
            verdict=cres.verdict,
            caught=cres.verdict == "fail",
            effect_size=cres.effect_size,
            seconds=round(time.perf_counter() - ct, 4),
        )
        timing["control"] = control.seconds
    total = time.perf_counter() - t_start
    timing["total"] = total
    timing["cpu_main_process"] = time.process_time() - cpu_start
    return DecomposabilityResult(
        generator=generator,
        generator_params=params,
        attributes=theta.attributes,
        phi=[list(c) for c in theta.cliques],
        alpha=st.alpha,
        K=st.K,
        rows=n,
        records=int(theta.x.sum()),
        seed=st.seed,
        p_value=p,
        verdict=verdict,
        t_statistic=tval,
        effect_size=dval,
        mean_difference=float(np.mean(gp) - np.mean(gm)),
        g_plus=[float(v) for v in gp],
        g_minus=[float(v) for v in gm],
        basis=binfo,
        extremal=ext,
        top_cells=top_cells,
        top_interactions=_interaction_shares(theta, beta_cells),
        seeds=seeds,
        timing={k: round(v, 4) for k, v in timing.items()},
        seconds=round(total, 4),
        control=control,
    )


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0


def _interaction_shares(theta: ThetaSpace, beta: np.ndarray, top: int = 5) -> list[dict[str, Any]]:
    """Share of β* carried by each minimal non-Φ interaction: ‖S-marginal of β*‖², normalised over the sets."""
    out = []
    for s in theta.minimal_non_phi_sets():
        idx = [theta.pos[a] for a in s]
        flat = np.ravel_multi_index(tuple(theta.values[:, i] for i in idx), tuple(theta.shape[i] for i in idx))
        m = np.bincount(flat, weights=beta, minlength=math.prod(theta.shape[i] for i in idx))
        out.append((float(m @ m), s))
    tot = sum(v for v, _ in out) or 1.0
    out.sort(key=lambda t: -t[0])
    return [{"attributes": list(s), "share": v / tot} for v, s in out[:top]]


# ----------------------------------------------------------------------------------------------- spec entry point


def audit_spec(
    spec_path: str,
    generator: str,
    K: int | None = None,
    seed: int | None = None,
    data_path: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> DecomposabilityResult:
    """Run the test for a release spec: its Φ, its data, its pre-registered ``audit`` settings."""
    from sdgov.schema import load_encoded
    from sdgov.spec import load_spec

    loaded = load_spec(spec_path)
    settings = settings_from_spec(loaded.spec)
    upd: dict[str, Any] = dict(overrides or {})
    if K is not None:
        upd["K"] = K
    if seed is not None:
        upd["seed"] = seed
    if upd:
        settings = AuditSettings(**{**settings.model_dump(), **upd})
    ag = loaded.agreement
    schema = loaded.schema_
    codes = load_encoded(data_path or loaded.data_path, schema)[ag.attributes]
    domain = {a: schema.by_name[a].size for a in ag.attributes}
    labels = {a: schema.by_name[a].labels() for a in ag.attributes}
    return run_decomposability(codes, [tuple(c) for c in ag.cliques], domain, generator, settings, labels)


def settings_from_spec(spec: Any) -> AuditSettings:
    """The pre-registered ``audit`` section of a spec or agreement as :class:`AuditSettings` (defaults when absent)."""
    section = getattr(spec, "audit", None)
    if section is None:
        return AuditSettings()
    data = section.model_dump() if hasattr(section, "model_dump") else dict(section)
    keep = set(AuditSettings.model_fields)
    return AuditSettings(**{k: v for k, v in data.items() if k in keep})
