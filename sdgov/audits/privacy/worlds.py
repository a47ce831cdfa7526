"""The shadow datasets of the privacy-risk audit, designed once per audit and shared by every part that asks for them.

**Membership pairs** (:func:`shadow_pairs`; the membership game and attribute inference, :mod:`.mia`). The online
variant of LiRA (Carlini et al., "Membership Inference Attacks From First Principles", IEEE S&P 2022): every shadow
dataset holds every target independently with probability ½, so one set of fits serves every target — scored on
the worlds where it is in against those where it is out — instead of one pair of fits per target (the design of
Stadler et al. 2022, which this audit used until issue 37: (T + 1)·``n_shadow`` fits, 330 at the defaults). The
worlds come in *antithetic* pairs that share a base of n − T reference records: world 2p holds the targets of a
random half S_p, world 2p + 1 the others (each topped up to n records with fresh reference records). So each
target is in exactly one world of every pair and out of the other, and the per-target statistic stays the paired
per-world one of Stadler et al.'s game, its two datasets sharing their base: ``n_shadow`` pairs give every target
``n_shadow`` in-worlds and ``n_shadow`` out-worlds from 2·``n_shadow`` fits. A pair's two datasets differ by T
records (every target swapped, one filler each way) instead of one; for target t the other swaps are noise, and
for an (ε, δ)-DP release they change nothing it may reveal: over the other targets' independent coins a world with
t and one without are mixtures of datasets that differ by one replaced record (t for a filler), so the replaced-
record bound of :func:`.mia.membership_adv_bound` still caps the advantage.

**Sample worlds** (:func:`sample_world`; memorisation, interactions beyond Φ). World w is a uniform sample of n
reference records (worlds 2p and 2p + 1 disjoint); any part that needs "one fit on n reference records" asks for
world w at its n and gets the same fit (same rows, same fit seed) as every other part asking for it. The
memorisation check fits its worlds; the beyond-Φ check takes world 0, the same fit, when its training size is
memorisation's (the default: both 10,000 records).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdgov.audits.generator_protocol import AuditError
from sdgov.audits.privacy.base import seed_of

MEMBERSHIP = "membership-world"  # the fit keys of the two designs (sdgov.audits.privacy.planner)
SAMPLE = "sample-world"


@dataclass(frozen=True)
class ShadowPairs:
    """2·P worlds of n records: ``rows[w]`` the training records of world w, ``inside[w, t]`` whether it holds
    target t (exactly one world of every pair (2p, 2p + 1) does)."""

    rows: tuple[np.ndarray, ...]
    inside: np.ndarray

    @property
    def pairs(self) -> int:
        """P: the number of pairs (every target's in-worlds, and its out-worlds)."""
        return len(self.rows) // 2

    def in_and_out(self, target: int) -> tuple[list[int], list[int]]:
        """The world holding ``target`` in each pair, and the one without it, pair by pair."""
        ins = [2 * p if self.inside[2 * p, target] else 2 * p + 1 for p in range(self.pairs)]
        return ins, [w ^ 1 for w in ins]


def shadow_pairs(reference: np.ndarray, target_rows: np.ndarray, n: int, pairs: int, seed: int) -> ShadowPairs:
    """The membership design of the module docstring: per pair, n distinct reference records (a base of n − T,
    T fillers), a fair coin per target, and the two complementary worlds."""
    R, T = len(reference), len(target_rows)
    if n > R:
        raise AuditError(
            f"the reference data has {R} records, fewer than the {n} of a shadow training set",
            "privacy audit",
            "lower train_rows or use more data",
        )
    if n < T:
        raise AuditError(
            f"a shadow training set of {n} records cannot hold the {T} targets",
            "privacy audit",
            "raise train_rows or lower n_outliers / n_random",
        )
    rng = np.random.default_rng(seed_of(seed, 20))
    rows: list[np.ndarray] = []
    inside = np.zeros((2 * pairs, T), dtype=bool)
    for p in range(pairs):
        pick = rng.choice(R, size=n, replace=False)
        coin = rng.random(T) < 0.5
        base, fillers = reference[pick[: n - T]], reference[pick[n - T :]]
        k = int(coin.sum())  # world 2p: the targets with coin = 1 and T − k fillers; world 2p + 1: the rest, k fillers
        rows.append(np.vstack([base, target_rows[coin], fillers[: T - k]]))
        rows.append(np.vstack([base, target_rows[~coin], fillers[T - k :]]))
        inside[2 * p], inside[2 * p + 1] = coin, ~coin
    return ShadowPairs(rows=tuple(rows), inside=inside)


def membership_fit_seed(seed: int, world: int) -> int:
    """The fit seed of membership world ``world``."""
    return seed_of(seed, 21, world)


def sample_world(reference: np.ndarray, n: int, seed: int, world: int) -> np.ndarray:
    """World ``world``'s n training records. Worlds 2p and 2p + 1 are the first and second n records of one
    permutation of the reference, seeded by (``seed``, p): disjoint, as the memorisation check's pairs are; and
    parts asking for the same world at different sizes get nested samples, at the same size the same one."""
    start = (world % 2) * n
    if start + n > len(reference):
        raise AuditError(
            f"the reference data has {len(reference)} records, fewer than the {start + n} of "
            f"{'two disjoint training sets' if start else 'a training set'} of {n}",
            "privacy audit",
            "lower the part's rows or use more data",
        )
    order = np.random.default_rng(seed_of(seed, 60, world // 2)).permutation(len(reference))
    return reference[order[start : start + n]]


def sample_world_fit_seed(seed: int, world: int) -> int:
    """The fit seed of sample world ``world``."""
    return seed_of(seed, 61, world)


def sample_world_key(world: int, n: int) -> tuple[str, int, int]:
    """The planner's key of sample world ``world`` at n records: parts asking for it share one fit."""
    return (SAMPLE, world, n)


def sample_world_set_rows(n: int, synth_factor: int) -> int:
    """Records per memorisation sample set drawn from a sample world of n records: ``synth_factor``·n (K·n) — one
    sampler call per set, not per n records. (The beyond-Φ check draws its own sets of the same fit, at its size.)"""
    return int(synth_factor) * int(n)
