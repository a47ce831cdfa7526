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
from sdgov.audits.privacy.memorisation import memorisation_audit, memorisation_check
from sdgov.audits.privacy.one_run import epsilon_from_guesses, one_run_audit, p_value
from tests.blas_kernels import BLAS_OF, under_two_kernels
from tests.fixtures.app2_population import ATTRS, DOMAIN, IPF, PHI, app2_records, audit_one_run, generator_ref

INDEPENDENT = "independent"


def _memo_level(gen: str, seed: int, worlds: int = 9, **params) -> str:
    res = memorisation_audit(
        generator_ref(gen, **params),
        app2_records(),
        worlds=worlds,
        train_rows=1000,
        synth_factor=50,
        seed=seed,
        confidence=0.95,
    )
    return memorisation_check(res, RiskPolicy()).level


def test_memorisation_check_passes_the_honest_generator():
    # reads only 1-way marginals (a subset of Φ) with noise: no warning in 3 of 3 seeds (false-warning rate 1 % each)
    honest = [_memo_level(INDEPENDENT, s, sigma=5.0) for s in range(3)]
    assert honest == ["pass"] * 3, honest


def test_memorisation_check_fails_the_memoriser_and_the_copier():
    # copying 2 % of its rows: copy share ≈ 0.02 with a standard error ≈ 0.004, fails in 3 of 3 seeds
    memo = [_memo_level("memoriser_2pct", s, base=INDEPENDENT, sigma=5.0) for s in range(3)]
    assert memo == ["fail"] * 3, memo
    assert _memo_level("copier", 0, worlds=4, base=INDEPENDENT) == "fail"


def test_copy_share_estimates_the_copied_fraction():
    res = memorisation_audit(
        generator_ref("memoriser", base=INDEPENDENT, sigma=5.0, copy_fraction=0.2),
        app2_records(),
        worlds=5,
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
    real = app2_records()
    claimed = _zcdp_epsilon(10.0, 1e-5)  # the census specs' σ = 10
    exact = one_run_audit(generator_ref("exact_marginal", base=IPF), real, 200, 1000, 10, 0, 0.05, 1e-5)
    assert exact.canaries >= 40 and exact.epsilon_lower > claimed, exact
    for seed in range(3):  # the theorem: a σ = 10 release is refuted with probability ≤ β = 0.01 per seed
        honest = one_run_audit(generator_ref(IPF, sigma=10.0), real, 200, 1000, 10, seed, 0.01, 1e-5)
        assert honest.epsilon_lower <= claimed, honest


def test_a_copier_of_qi_unique_records_is_refuted_and_the_honest_generator_is_not():
    """Issue 29: copying the training records unique on three quasi-identifiers (here A, B, C — the 3-way Φ table, as
    App 2's demographics) leaves the Φ cells as noisy as the honest generator's; the one-run audit's record guesser
    sees the copies themselves and refutes the claimed ε, the cell guesser alone did not (1 of 20 on the census)."""
    claimed = _zcdp_epsilon(10.0, 1e-5)
    for seed in (0, 1):
        leak = audit_one_run("qi_copier", seed, claimed, base=IPF, sigma=10.0)
        assert leak.one_run is not None and leak.epsilon_lower > claimed, leak.one_run
        assert {c.name: c.level for c in leak.checks}["DP lower bound"] == "fail"
        by = {(g.score, g.k): g.epsilon_lower for g in leak.one_run.by_k}
        assert max(v for (score, _), v in by.items() if score == "record") == leak.epsilon_lower
        honest = audit_one_run(IPF, seed, claimed, sigma=10.0)
        assert honest.epsilon_lower <= claimed and {c.name: c.level for c in honest.checks}["DP lower bound"] != "fail"


BLAS_RUN = (
    BLAS_OF
    + """
import json
from tests.fixtures.app2_population import IPF, audit_one_run
r = audit_one_run("qi_copier", 0, 0.98, base=IPF, sigma=10.0)
guesses = [g.model_dump(mode="json") for g in r.one_run.by_k]
print(json.dumps({"eps": r.epsilon_lower, "guesses": guesses, "blas": blas()}))
"""
)


def test_the_record_guesser_gives_the_same_bound_under_two_blas_kernels():
    """The record guesser ranks canaries by residuals against the output's Φ-only model (a projection, BLAS work):
    under two OpenBLAS kernels every guess, its count of right answers and ε_lower are the same (principle 6)."""
    a, b = under_two_kernels(BLAS_RUN)
    assert a["eps"] > 0 and any(g["score"] == "record" for g in a["guesses"])
    assert a["eps"] == b["eps"] and a["guesses"] == b["guesses"]


class _RandomisedPresence:
    """An exactly ε-DP generator (add/remove one record): every cell of the domain is reported present with
    probability e^ε/(1 + e^ε) if the training data holds it, 1/(1 + e^ε) if not — randomised response per cell, and
    one record changes one cell's answer — and each sample lists the reported cells, cycled to n rows
    (post-processing). The one-run audit's guessers read exactly that answer for every canary."""

    def __init__(self, cliques, domain, epsilon: float = 2.0):
        self.sizes, self.epsilon = list(domain.values()), float(epsilon)
        self.cells: np.ndarray | None = None

    def fit(self, records, weights=None, *, seed=None):
        """Randomised response on the presence of every cell."""
        keys = np.ravel_multi_index(tuple(records.to_numpy(np.int64).T), self.sizes)
        present = np.zeros(math.prod(self.sizes), bool)
        present[keys[np.asarray(weights) > 0] if weights is not None else keys] = True
        flip = np.random.default_rng(seed).random(present.size) < 1 / (1 + math.exp(self.epsilon))
        self.cells = np.flatnonzero(present ^ flip)

    def sample(self, n, seed):
        """The reported cells, cycled to n rows."""
        import pandas as pd

        assert self.cells is not None
        rows = np.resize(np.random.default_rng(seed).permutation(self.cells), n)
        return pd.DataFrame(np.stack(np.unravel_index(rows, self.sizes), axis=1), columns=ATTRS)


def randomised_presence(cliques, domain, **params):
    """Factory of :class:`_RandomisedPresence` (registered as ``test_randomised_presence``: tests/plugins)."""
    return _RandomisedPresence(cliques, domain, **params)


def test_one_run_bound_of_an_exactly_dp_generator_stays_below_its_epsilon_at_the_stated_confidence():
    """ε_lower is a lower bound at confidence 1 − β: over 40 seeds of a generator that is exactly ε-DP it exceeds ε
    at most as often as a Binomial(40, β) allows (99.9 % quantile), while its median is well above 0 — the bound is
    close enough to the truth that an invalid one (a guesser that saw the inclusion bits, a β not split over the
    guessers and k) would cross it."""
    from scipy import stats

    eps, beta, seeds = 2.0, 0.2, 40
    ref = generator_ref("test_randomised_presence", epsilon=eps)  # tests/plugins: an installed plug-in's entry points
    real = app2_records()
    lows = [one_run_audit(ref, real, 200, 1000, 3, seed, beta, 0.0).epsilon_lower for seed in range(seeds)]
    above = sum(x > eps for x in lows)
    assert above <= stats.binom.ppf(0.999, seeds, beta), lows
    assert np.median(lows) > 0.5 * eps, lows


def test_a_pairs_share_is_the_dense_projections():
    """The copy share of a pair, computed on the kept Φ cells with one Cholesky solve (no indicator matrix, no
    projection formed), is the formula's: r = M(a − b)/n with M = I − DX(XᵀDX)⁺Xᵀ on the dense X, the pair's own q."""
    from sdgov.audits.privacy.memorisation import WorldTerms, design_of

    rng = np.random.default_rng(3)
    population = app2_records(5000)
    ref = generator_ref(INDEPENDENT)
    design = design_of(ref, population)
    N, n, m = len(design.support), 500, 5000
    train = [design.counts(population[rng.choice(len(population), n, replace=False)]) for _ in range(2)]
    synth = [rng.multinomial(m, (t + 1) / (t + 1).sum()).astype(float) for t in train]
    terms = WorldTerms(design, train, synth, n, m)
    cells = np.stack(np.unravel_index(design.support, list(DOMAIN.values())), axis=1)
    X = np.hstack(  # the dense indicators of every Φ cell, and the constant
        [
            (
                np.ravel_multi_index(tuple(cells[:, [ATTRS.index(a) for a in c]].T), [DOMAIN[a] for a in c])[:, None]
                == np.arange(math.prod(DOMAIN[a] for a in c))[None, :]
            ).astype(float)
            for c in PHI
        ]
        + [np.ones((N, 1))]
    )
    q = (synth[0] + synth[1] + 1) / (2 * m + N)
    diff = (train[0] - train[1]) / n
    r = diff - (q[:, None] * X) @ (np.linalg.pinv(X.T @ (q[:, None] * X), hermitian=True) @ (X.T @ diff))
    dense = float(np.sum(r * (synth[0] - synth[1]) / m / q) / np.sum(r * diff / q))
    assert terms.pair_share(0, 1) == pytest.approx(dense, rel=1e-8, abs=1e-12)
    assert design.non_phi_dimensions == N - np.linalg.matrix_rank(X)
