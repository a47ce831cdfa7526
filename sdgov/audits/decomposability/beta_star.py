"""Which interaction set carries the generator's response (eq. 6's β*), decided by a rule that needs no basis.

Phase 1 fits K synthetic datasets on each of D₊β and D₋β. For every interaction set S (a non-Φ attribute set, or
the chosen cells of one in the random subspace) the fits have coordinates Y_S (2K fits × cells), and the data
moved by u_S (the S-coordinates of D₊β − D₋β). Two statistics per set:

* **directed**: the squared Welch t of ⟨u_S, Y_S⟩ between the D₊ and D₋ fits — a generator that reads the
  S-marginal follows the data along u_S (one degree of freedom: the most power against a marginal leak);
* **omnibus**: T_S = Σ_j t_j² over the set's cells (Welch t per cell; cells with no variance left out) — any
  response, in whatever direction.

Each p-value is a permutation test over ``permutations`` seeded relabellings of the 2K fits. Under the null (a
generator that reads only φ) the fits on D₊ and D₋ are exchangeable, so the p-values are exact whatever the cells'
variances or correlations. A set's p is the smaller of its two, doubled (Bonferroni). β* uses the **one** set with
the smallest p (ties: the larger Σt² per cell, then the canonical set order): a leak of one marginal shows in one
set, and adding the noise of other sets' responses dilutes it (the |t| ≥ 2 per-component rule this replaces kept
~9 of App 2's 156 null components by chance and missed a 2 % leak, issue 13). The sets that respond beyond chance
at family-wise level ``alpha`` (Holm over the sets) are reported beside it.

Cells are canonical coordinates (unlike the components of a numerically computed basis), the relabellings come
from the audit seed, and every ranking has a deterministic tie-break, so the choice is the same on every machine.
Because the fits of phase 2 are fresh, the choice cannot make the final test anti-conservative.
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


def _labellings(K: int, permutations: int, rng: np.random.Generator) -> np.ndarray:
    """Row 0 the observed split (first K fits in D₊), then ``permutations`` seeded relabellings (boolean, B+1 × 2K)."""
    lab = np.zeros((permutations + 1, 2 * K), dtype=bool)
    lab[0, :K] = True
    for b in range(1, permutations + 1):
        lab[b, rng.permutation(2 * K)[:K]] = True
    return lab


def _sum_t2(Y: np.ndarray, lab: np.ndarray) -> tuple[np.ndarray, int]:
    """Σ_j t_j² for every labelling (rows of ``lab``), over the cells of Y that vary at all."""
    K = int(lab[0].sum())
    Y = Y - Y.mean(axis=0)  # centre: the second moments below then lose no precision to large counts
    spread = np.abs(Y).max(axis=0)
    Y = Y[:, spread > 1e-9 * max(float(spread.max(initial=0.0)), 1e-300)]
    if Y.shape[1] == 0:
        return np.zeros(len(lab)), 0
    P, M = lab.astype(np.float64), (~lab).astype(np.float64)
    mp, mm = P @ Y / K, M @ Y / K
    vp = np.maximum((P @ (Y * Y) - K * mp * mp) / (K - 1), 0.0)
    vm = np.maximum((M @ (Y * Y) - K * mm * mm) / (K - 1), 0.0)
    se2 = (vp + vm) / K
    floor = 1e-12 * float(se2.max(initial=0.0)) + 1e-300
    t2 = np.where(se2 > floor, (mp - mm) ** 2 / np.maximum(se2, floor), 0.0)
    return t2.sum(axis=1), Y.shape[1]


def _along(Y: np.ndarray, u: np.ndarray) -> np.ndarray:
    """⟨u ⊘ v, Y_i⟩ per fit, v the variance of each cell over all 2K fits (labels ignored, so the relabellings
    stay exchangeable): the data change weighted by the inverse noise of each cell, as a matched filter would."""
    Yc = Y - Y.mean(axis=0)
    v = (Yc * Yc).mean(axis=0)
    floor = 1e-9 * float(v.max(initial=0.0)) + 1e-300
    w = np.where(v > floor, u / np.maximum(v, floor), 0.0)
    return Yc @ w


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
    """Two permutation tests per set, then Holm at ``alpha`` over all of them (see the module docstring)."""
    lab = _labellings(K, permutations, rng)
    p_dir, p_omni, ts, qs = [], [], [], []
    for Y, u in zip(groups, directions):
        T, q = _sum_t2(Y, lab)
        p_omni.append(_p(T) if q else 1.0)
        ts.append(float(T[0]))
        qs.append(q)
        Td, qd = _sum_t2(_along(Y, u)[:, None], lab) if np.any(u) else (T, 0)
        p_dir.append(_p(Td) if qd else 1.0)
    p_set = [min(1.0, 2 * min(a, b)) for a, b in zip(p_dir, p_omni)]  # Bonferroni over the set's two tests
    order = sorted(range(len(groups)), key=lambda i: (p_set[i], -ts[i] / max(qs[i], 1), i))
    responding: list[int] = []
    for rank, i in enumerate(order):  # Holm's step-down over the sets
        if p_set[i] > alpha / (len(order) - rank):
            break
        responding.append(i)
    return SetSelection(order[:1], sorted(responding), p_set, p_dir, p_omni, ts, qs)
