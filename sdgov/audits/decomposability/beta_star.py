"""Which interaction set carries the generator's response (eq. 6's β*), decided by a rule that needs no basis.

Phase 1 fits K synthetic datasets on each of D₊β and D₋β, **in pairs**: fit i on D₊ and fit i on D₋ get the same
seed. For every interaction set S (a non-Φ attribute set: its cells in the full table, or the cells of a minimal
non-Φ marginal on large tables) the pairs' differences d_i = Y_S(fit i on D₊) − Y_S(fit i on D₋) (cells), and the
data moved by u_S (the S-coordinates of D₊β − D₋β). Two statistics per set:

* **directed**: the paired score of ⟨u_S ⊘ v, d_i⟩ (v each cell's mean squared difference) — a generator that
  reads the S-marginal follows the data along u_S (one degree of freedom: the most power against a marginal leak);
* **omnibus**: Σ_j (Σ_i d_ij)² / Σ_i d_ij² over the set's cells (a paired t² per cell, up to a monotone map) — any
  response, in whatever direction.

Each p-value is a **sign-flip** test: the observed pairing against every other assignment of each pair's two fits
to D₊ and D₋ (all 2^K − 1 of them for K ≤ 10, else ``permutations`` seeded ones). Under the null (a generator whose
output depends on the data only through φ, and D₊, D₋ have the same φ) the two fits of a pair are exchangeable,
whatever the generator does with the seed, so the p-values are exact. A generator that draws its randomness from
the seed gives identical pairs under the null — its noise cancels in d_i, which is where the pairing buys power:
a blend's honest rows (and any noise it draws from the seed) vanish from the differences and only what it reads
outside Φ remains. A set's p is the smaller of its two, doubled (Bonferroni). β* uses the **one** set with the
smallest p (ties: the larger score per cell, then the canonical set order): a leak of one marginal shows in one
set, and adding the noise of other sets' responses dilutes it (the |t| ≥ 2 per-component rule this replaces kept ~9
of App 2's 156 null components by chance and missed a 2 % leak, issue 13). The sets that respond beyond chance at
family-wise level ``alpha`` (Holm over the sets) are reported beside it.

Cells are canonical coordinates (unlike the components of a numerically computed basis), the sign patterns are
enumerated (or drawn from the audit seed), and every ranking has a deterministic tie-break, so the choice is the
same on every machine. Because the fits of phase 2 are fresh, the choice cannot make the final test
anti-conservative.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: relative slack when comparing a relabelled statistic with the observed one: the same value computed in a
#: different summation order must count as a tie on every machine
_TIE = 1e-9


@dataclass(frozen=True)
class SetSelection:
    chosen: list[int]
    responding: list[int]
    p_set: list[float]
    p_directed: list[float]
    p_omnibus: list[float]
    statistics: list[float]
    cells: list[int]


def _flips(K: int, permutations: int, rng: np.random.Generator) -> np.ndarray:
    """Row 0 the observed pairing (+1: fit i on D₊, its partner on D₋), then every other sign pattern of the K pairs
    when there are at most ``permutations`` of them (K = 10: all 1,023), else ``permutations`` seeded ones."""
    if permutations + 1 >= 2**K:
        bits = (np.arange(2**K)[:, None] >> np.arange(K)[None, :]) & 1
        return (1 - 2 * bits).astype(np.float64)
    return np.vstack([np.ones((1, K)), rng.choice([-1.0, 1.0], size=(permutations, K))])


def _flip_scores(D: np.ndarray, signs: np.ndarray) -> tuple[np.ndarray, int]:
    """Σ_j (Σ_i s_i d_ij)² / Σ_i d_ij² for every sign pattern s (rows of ``signs``), over the cells whose paired
    differences are not all zero: per cell, a monotone function of the paired t² (its denominator does not change
    under sign flips). ``D`` is pairs × cells."""
    den = (D * D).sum(axis=0)
    keep = den > 1e-18 * float(den.max(initial=0.0)) + 1e-300
    if not np.any(keep):
        return np.zeros(len(signs)), 0
    num = signs @ D[:, keep]
    return (num * num / den[keep]).sum(axis=1), int(keep.sum())


def _along(D: np.ndarray, u: np.ndarray) -> np.ndarray:
    """⟨u ⊘ v, d_i⟩ per pair, v the mean squared paired difference of each cell (unchanged by sign flips, so the
    flips stay exact): the data change weighted by the inverse noise of each cell, as a matched filter would."""
    v = (D * D).mean(axis=0)
    floor = 1e-9 * float(v.max(initial=0.0)) + 1e-300
    w = np.where(v > floor, u / np.maximum(v, floor), 0.0)
    return D @ w


def _p(T: np.ndarray) -> float:
    """Permutation p-value of the observed T[0] among the relabelled T[1:] (ties within _TIE count as ≥)."""
    return float((1 + np.sum(T[1:] >= T[0] * (1 - _TIE))) / len(T))


def select_sets(
    groups: list[np.ndarray],
    directions: list[np.ndarray],
    K: int,
    alpha: float,
    permutations: int,
    rng: np.random.Generator,
) -> SetSelection:
    """Two sign-flip tests per set, then Holm at ``alpha`` over all of them (see the module docstring). ``groups``
    hold the K fits on D₊ first, then their K partners on D₋ in the same order."""
    signs = _flips(K, permutations, rng)
    p_dir, p_omni, ts, qs = [], [], [], []
    for Y, u in zip(groups, directions):
        D = Y[:K] - Y[K:]  # paired differences: fit i on D₊ and fit i on D₋ share their seed
        T, q = _flip_scores(D, signs)
        p_omni.append(_p(T) if q else 1.0)
        ts.append(float(T[0]))
        qs.append(q)
        Td, qd = _flip_scores(_along(D, u)[:, None], signs) if np.any(u) else (T, 0)
        p_dir.append(_p(Td) if qd else 1.0)
    p_set = [min(1.0, 2 * min(a, b)) for a, b in zip(p_dir, p_omni)]  # Bonferroni over the set's two tests
    order = sorted(range(len(groups)), key=lambda i: (p_set[i], -ts[i] / max(qs[i], 1), i))
    responding: list[int] = []
    for rank, i in enumerate(order):  # Holm's step-down over the sets
        if p_set[i] > alpha / (len(order) - rank):
            break
        responding.append(i)
    return SetSelection(order[:1], sorted(responding), p_set, p_dir, p_omni, ts, qs)
