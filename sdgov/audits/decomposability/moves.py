"""Integer moves u ∈ Φ⊥ (entries −1, 0, +1 on 2^|S| cells) and the extremal datasets D± built from them.

Full moves need all their corners occupied (small tables); half moves only the corners they take records from
(large, sparse tables). Every move keeps φ exactly and counts non-negative (see :mod:`.test`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import sparse

from sdgov.audits.decomposability.theta import ThetaSpace


class MoveBlock:
    """Integer moves of one minimal non-Φ set T: ``cells`` (moves × 2^|T|) occupied-cell indices with corner
    signs ``sign``; ``tcell`` the same corners as flat indices of the T-marginal table."""

    def __init__(self, attrs: tuple[str, ...], cells: np.ndarray, sign: np.ndarray, tcell: np.ndarray):
        self.attrs, self.cells, self.sign, self.tcell = attrs, cells, sign, tcell

    def __len__(self) -> int:
        return len(self.cells)


class MovePool:
    def __init__(self, theta: ThetaSpace, blocks: Sequence[MoveBlock]):
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
        """The number of moves of each minimal non-Φ set, keyed ``A × B × …``."""
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
        lows: list[np.ndarray] = []
        highs: list[np.ndarray] = []
        keys: list[np.ndarray] = []
        for k, a, c in zip(sl.keys, sl.starts, sl.counts):
            if c < 2**s:
                continue
            tv = theta.values[sl.order[a : a + c]][:, sl.t_idx]
            diff = np.all(tv[:, None, :] != tv[None, :, :], axis=2)
            i, j = np.nonzero(np.triu(diff, 1))
            if len(i) == 0:
                continue
            lows.append(np.minimum(tv[i], tv[j]))
            highs.append(np.maximum(tv[i], tv[j]))
            keys.append(np.full(len(i), k))
        if not lows:
            continue
        P, Q, Kk = np.concatenate(lows), np.concatenate(highs), np.concatenate(keys)
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
    occupied in D*. Corners that D* leaves empty are added to Θ's cell list (they can only gain records).

    In every slice (T-cells sharing the other attributes) with at least 2^(|T|−1) cells and two values on every
    axis of T, the candidate moves are the pairs p < q of present values per axis — all of them, or ``per_slice``
    drawn at random, slice by slice in order (the only random numbers: the pool is a function of the seed).
    Everything else is computed for all slices of a set at once (App 3: 34k slices in 35 sets)."""
    sets = theta.minimal_non_phi_sets()
    per_set = max(1, limit // max(1, len(sets)))
    raw = []
    for T in sets:
        found = _half_moves(theta, T, rng, per_slice)
        if found is None:
            continue
        P, Q, Kk, sl = found
        s = len(T)
        E, even = _corner_parity(s)
        sign = np.where(even, 1, -1).astype(np.int64)
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


def _pair_tables(m_max: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every m ≤ ``m_max``, the pairs i < j of range(m) in ``itertools.combinations`` order, concatenated:
    (offset of m's pairs, first index, second index)."""
    offsets = np.zeros(m_max + 1, dtype=np.int64)
    first: list[int] = []
    second: list[int] = []
    n = 0
    for m in range(m_max + 1):
        offsets[m] = n
        pairs = list(itertools.combinations(range(m), 2))
        first.extend(i for i, _ in pairs)
        second.extend(j for _, j in pairs)
        n += len(pairs)
    return offsets, np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)


def _half_moves(
    theta: ThetaSpace, T: tuple[str, ...], rng: np.random.Generator, per_slice: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, _SetSlices] | None:
    """The half moves of one set T as (P, Q, slice key) rows, slice by slice (see :func:`half_move_pool`)."""
    sl, s = _slices(theta, T), len(T)
    n_sl = len(sl.keys)
    slice_of_cell = np.repeat(np.arange(n_sl), sl.counts)  # cells in slice order
    tv = theta.values[sl.order][:, sl.t_idx]
    values, starts, m = [], [], np.zeros((n_sl, s), dtype=np.int64)
    for d, k in enumerate(sl.tshape):  # the values present on axis d of each slice, ascending
        u = np.unique(slice_of_cell * k + tv[:, d])
        m[:, d] = np.bincount(u // k, minlength=n_sl)
        values.append(u % k)
        starts.append(np.concatenate([[0], np.cumsum(m[:, d])[:-1]]))
    eligible = np.flatnonzero((sl.counts >= 2 ** (s - 1)) & (m >= 2).all(axis=1))
    if len(eligible) == 0:
        return None
    sizes = m * (m - 1) // 2  # pairs per axis
    picks = []
    for k in eligible.tolist():
        total = math.prod(int(v) for v in sizes[k])
        picks.append(np.arange(total) if total <= per_slice else rng.choice(total, per_slice, replace=False))
    lengths = np.array([len(p) for p in picks])
    pick = np.concatenate(picks).astype(np.int64)
    sl_of = np.repeat(eligible, lengths)
    offsets, first, second = _pair_tables(int(m.max()))
    P = np.empty((len(pick), s), dtype=np.int64)
    Q = np.empty_like(P)
    rest = pick.copy()
    for d in reversed(range(s)):  # np.unravel_index(pick, sizes) with per-slice sizes (C order)
        size = sizes[sl_of, d]
        idx = rest % size
        rest //= size
        at = offsets[m[sl_of, d]] + idx
        base = starts[d][sl_of]
        P[:, d] = values[d][base + first[at]]
        Q[:, d] = values[d][base + second[at]]
    E, even = _corner_parity(s)
    # is each corner's cell occupied? A lookup table over (slice, T-cell), at most slices × T-cells booleans
    tsize = math.prod(sl.tshape)
    strides = [math.prod(sl.tshape[d + 1 :]) for d in range(s)]
    occupied = np.zeros(n_sl * tsize, dtype=bool)
    occupied[slice_of_cell * tsize + np.ravel_multi_index(tuple(tv.T), sl.tshape)] = True
    base = sl_of * tsize
    present = np.empty((len(pick), len(E)), dtype=bool)
    for e, corner in enumerate(E):
        at = base.copy()
        for d in range(s):
            at += (Q if corner[d] else P)[:, d] * strides[d]
        present[:, e] = occupied[at]
    ok = present[:, even].all(axis=1) | present[:, ~even].all(axis=1)
    if not ok.any():
        return None
    return P[ok], Q[ok], sl.keys[sl_of[ok]], sl


def ranked_by_magnitude(values: np.ndarray, digits: int = 9) -> np.ndarray:
    """Indices by decreasing |value|, compared at ``digits`` significant digits relative to the largest, ties by
    index: the same order on every machine although the values may differ in their last bits between BLAS kernels
    (only values within 1e-9 of each other could still swap, which rounding cannot rule out but makes rare)."""
    mag = np.abs(np.asarray(values, dtype=np.float64))
    top = float(mag.max(initial=0.0))
    key = np.round(mag / top, digits) if top > 0 else mag
    return np.lexsort((np.arange(len(mag)), -key))


def _ranked_moves(pool: MovePool, scores: list[np.ndarray], min_frac: float):
    """(score, block, cells) of every move in order of |score|, down to ``min_frac`` of the largest (none if all 0)."""
    allsc = np.concatenate(scores) if scores else np.zeros(0)
    if len(allsc) == 0 or not np.any(allsc):
        return
    which = np.concatenate([np.full(len(s), bi) for bi, s in enumerate(scores)])
    row = np.concatenate([np.arange(len(s)) for s in scores])
    thr = min_frac * np.abs(allsc).max()
    for g in ranked_by_magnitude(allsc):
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
