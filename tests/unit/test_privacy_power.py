"""The privacy audit's power and calibration (issue 13): the memoriser and the copier fail, the honest generator
passes, the one-run canary bound refutes a release of exact marginals and never the honest generator's claim.

Small data (an App-2-shaped population of 4 attributes, 630 cells), few seeds, fast generators (no JAX): every
rate asserted here is one the audit can miss. Full-scale figures: benchmarks/bench_privacy_table.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sdgov.agreement.sections.privacy_risk import RiskPolicy
from sdgov.audits.privacy.base import GeneratorRef
from sdgov.audits.privacy.memorisation import memorisation_audit
from sdgov.audits.privacy.one_run import epsilon_from_guesses, one_run_audit, p_value
from sdgov.audits.privacy.policy import apply_policy

ATTRS = ["A", "B", "C", "D"]
DOMAIN = {"A": 6, "B": 3, "C": 7, "D": 5}
PHI = (("A", "B", "C"), ("A", "D"), ("B", "D"), ("C", "D"))  # Application 2's shape
INDEPENDENT = "sdgov.audits.generators:independent"
IPF = "sdgov.audits.generators:honest_ipf"
LEAKY = "sdgov.audits.privacy.leaky:"


def _population(rows: int = 30_000) -> np.ndarray:
    """A skewed joint over all 630 cells (a 4-way interaction outside Φ included)."""
    rng = np.random.default_rng(13)
    sizes = list(DOMAIN.values())
    p = rng.dirichlet(np.full(int(np.prod(sizes)), 0.3))
    cells = rng.choice(len(p), size=rows, p=p)
    return np.stack(np.unravel_index(cells, sizes), axis=1).astype(np.int64)


def _ref(path: str, **params) -> GeneratorRef:
    return GeneratorRef(path=path, cliques=PHI, domain=DOMAIN, params=params)


def _memo_level(gen: str, seed: int, pairs: int = 8, **params) -> str:
    res = memorisation_audit(
        _ref(gen, **params), _population(), pairs=pairs, train_rows=1000, synth_factor=50, seed=seed, confidence=0.95
    )
    (check,) = apply_policy(
        RiskPolicy(),
        claimed_epsilon=None,
        epsilon_lower=None,
        targets=[],
        dp_bound=None,
        disclosure=None,
        memorisation=res,
    )
    return check.level


def test_memorisation_check_passes_the_honest_generator():
    # reads only 1-way marginals (a subset of Φ) with noise: no warning in 3 of 3 seeds (false-warning rate 1 % each)
    honest = [_memo_level(INDEPENDENT, s, sigma=5.0) for s in range(3)]
    assert honest == ["pass"] * 3, honest


def test_memorisation_check_fails_the_memoriser_and_the_copier():
    # copying 2 % of its rows: copy share ≈ 0.02 with a standard error ≈ 0.004, fails in 3 of 3 seeds
    memo = [_memo_level(LEAKY + "memoriser_2pct", s, base=INDEPENDENT, sigma=5.0) for s in range(3)]
    assert memo == ["fail"] * 3, memo
    assert _memo_level(LEAKY + "copier", 0, pairs=3, base=INDEPENDENT) == "fail"


def test_copy_share_estimates_the_copied_fraction():
    res = memorisation_audit(
        _ref(LEAKY + "memoriser", base=INDEPENDENT, sigma=5.0, copy_fraction=0.2),
        _population(),
        pairs=4,
        train_rows=1000,
        synth_factor=10,
        seed=1,
        confidence=0.95,
    )
    # about f (slightly below: the χ² metric is the fits' own distribution, copies included)
    assert 0.15 < res.copy_share < 0.25 and res.copy_share_ci[0] > 0.1 and res.non_phi_dimensions > 100


# ----------------------------------------------------------------------------------------- one-run canaries


def test_one_run_p_value_and_bound():
    # ε = 0: each guess a fair coin; 30 of 30 right has probability 2^-30
    assert p_value(100, 30, 30, 0.0, 0.0) == pytest.approx(2.0**-30)
    assert epsilon_from_guesses(100, 30, 15, 0.0, 0.05) == 0.0  # chance performance refutes nothing
    e = epsilon_from_guesses(100, 30, 30, 1e-5, 0.05)
    assert p_value(100, 30, 30, e, 1e-5) == pytest.approx(0.05, rel=1e-3)  # the bound is where p hits β
    assert epsilon_from_guesses(100, 30, 30, 1e-5, 0.05) <= epsilon_from_guesses(100, 30, 30, 0.0, 0.05)


def _zcdp_epsilon(sigma: float, delta: float) -> float:
    rho = len(PHI) / (2 * sigma**2)  # one record moves one cell of every Φ marginal by 1
    return rho + 2 * math.sqrt(rho * math.log(1 / delta))


def test_exact_marginals_refute_the_claim_and_honest_noise_does_not():
    real = _population()
    claimed = _zcdp_epsilon(10.0, 1e-5)  # the census specs' σ = 10
    exact = one_run_audit(_ref(LEAKY + "exact_marginal", base=IPF), real, 200, 1000, 10, 0, 0.05, 1e-5)
    assert exact.canaries >= 40 and exact.epsilon_lower > claimed, exact
    for seed in range(3):  # the theorem: a σ = 10 release is refuted with probability ≤ β = 0.01 per seed
        honest = one_run_audit(_ref(IPF, sigma=10.0), real, 200, 1000, 10, seed, 0.01, 1e-5)
        assert honest.epsilon_lower <= claimed, honest
