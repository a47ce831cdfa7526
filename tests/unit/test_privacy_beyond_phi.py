"""Interactions beyond Φ (issue 29 item 3): the privacy audit's non-Φ check catches a blend that copies no record,
passes an honest generator, and is reproducible. Tiny domain (64 cells) and few bootstrap samples: seconds."""

from __future__ import annotations

import numpy as np

from sdgov.audits.privacy.base import GeneratorRef
from sdgov.audits.privacy.beyond_phi import beyond_phi_audit, non_phi_tables

ATTRS = ["A", "B", "C"]
DOMAIN = dict.fromkeys(ATTRS, 4)
PHI = (("A", "B"), ("B", "C"))  # A and C meet only through B: A × C and A × B × C lie outside Φ


def _population(n: int = 20_000, seed: int = 0) -> np.ndarray:
    """A depends on C directly (an interaction Φ does not hold), B on both."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 4, n)
    a = np.where(rng.random(n) < 0.6, c, rng.integers(0, 4, n))
    b = np.where(rng.random(n) < 0.5, (a + c) % 4, rng.integers(0, 4, n))
    return np.column_stack([a, b, c])


def _audit(path: str, params: dict, seed: int):
    ref = GeneratorRef(path, PHI, DOMAIN, params)
    return beyond_phi_audit(ref, _population(), train_rows=3000, synth_rows=100_000, bootstrap=99, seed=seed)


def test_non_phi_tables_are_those_outside_every_marginal():
    assert non_phi_tables(ATTRS, list(PHI)) == [(0, 2), (0, 1, 2)]
    assert non_phi_tables(ATTRS, [("A", "B", "C")]) == []


def test_blend_caught_honest_passes_and_reproducible():
    honest = [_audit("sdgov.audits.generators:honest_ipf", {"sigma": 10.0}, s) for s in (0, 1)]
    assert all(r.ran and r.p_value > 0.05 for r in honest), [r.p_value for r in honest]
    # 5 % of the rows from IPF on Φ plus A × B × C: no record copied, the interaction shown all the same
    blend = _audit("sdgov.audits.generators:blend5_ipf", {"sigma": 10.0}, 0)
    assert blend.p_value == 0.01 and blend.statistic > 5, blend  # beyond every one of the 99 bootstrap samples
    again = _audit("sdgov.audits.generators:blend5_ipf", {"sigma": 10.0}, 0)
    assert again == blend  # same inputs and seed: the same result, to the bit


def test_too_large_a_joint_is_reported_not_run():
    ref = GeneratorRef("sdgov.audits.generators:honest_ipf", PHI, DOMAIN, {})
    r = beyond_phi_audit(ref, _population(200), 100, 1000, 19, 0, max_cells=10)
    assert not r.ran and "64 cells" in r.reason
