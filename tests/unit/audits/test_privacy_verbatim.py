"""The verbatim-copy test of the record checks (issue 37 item 5): exact, calibrated by the auditor's own split, and
blind no more to a thin copier — a generator copying well under 1 % of its rows, the training records unique on
quasi-identifiers drawn at random.

Small data (the App-2-shaped population of test_privacy_power), fast generators (IPF, no JAX). Full-scale figures:
``benchmarks/bench_privacy_table.py --generators "thin copier,honest" --parts disclosure``.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats

from sdgov.audits.privacy.disclosure import VerbatimRound, stratified_hypergeom_sf, verbatim_audit
from sdgov.audits.privacy.leaky import thin_qis
from tests.fixtures.app2_population import DOMAIN, IPF, app2_records, generator_ref


def test_the_p_value_is_the_exact_tail_of_the_rounds_hypergeometric_sum():
    one = VerbatimRound(unique_train=6, unique_holdout=5, flagged_train=3, flagged_holdout=1)
    assert np.isclose(stratified_hypergeom_sf([one]), stats.hypergeom.sf(2, 11, 4, 6))
    rounds = [one, VerbatimRound(unique_train=4, unique_holdout=5, flagged_train=2, flagged_holdout=1)]
    # brute force: every way the flagged candidates of each round can fall on its training half, equally likely
    tail = total = 0
    for a in itertools.combinations(range(11), 6):
        for b in itertools.combinations(range(9), 4):
            hits = sum(i < 4 for i in a) + sum(i < 3 for i in b)  # the flagged ones: the first 4 and the first 3
            total += 1
            tail += hits >= 5
    assert np.isclose(stratified_hypergeom_sf(rounds), tail / total)
    none = VerbatimRound(unique_train=10, unique_holdout=10, flagged_train=0, flagged_holdout=0)
    assert stratified_hypergeom_sf([none]) == 1.0


def test_honest_generators_are_rejected_no_more_often_than_the_level():
    """20 seeds of the honest IPF with the plan-like noise (unseeded and seeded): rejections at 0.05 within the
    Binomial(20, 0.05) 99.9 % quantile — the label-exchangeable null holds with the Φ residual."""
    real = app2_records()
    ps = [
        verbatim_audit(generator_ref(IPF, sigma=10.0, unseeded_noise=bool(s % 2)), real, 3, 1000, 5, s).p_value
        for s in range(20)
    ]
    assert sum(p <= 0.05 for p in ps) <= stats.binom.ppf(0.999, 20, 0.05), ps


def test_a_thin_copier_of_random_quasi_identifiers_is_caught():
    """QIs drawn at random, never the QI copier's default; where they single out records of a 1,000-record sample
    (here: 3 to 85 of them; no pair of this population's attributes does) the copies are found."""
    real = app2_records()
    assert [thin_qis(DOMAIN, s) for s in (3, 5)] == [["B", "C", "D"], ["A", "B", "D"]]
    for seed in (0, 3, 5):
        res = verbatim_audit(generator_ref("thin_copier", base=IPF, sigma=10.0, qi_seed=seed), real, 8, 1000, 20, seed)
        assert res.p_value <= 0.001 and res.flagged_train > 5 * res.flagged_holdout, (seed, res)


def test_the_same_inputs_and_seed_give_the_same_result():
    real = app2_records()
    a = verbatim_audit(generator_ref("thin_copier", base=IPF, sigma=10.0, qi_seed=1), real, 2, 500, 5, 7)
    b = verbatim_audit(generator_ref("thin_copier", base=IPF, sigma=10.0, qi_seed=1), real, 2, 500, 5, 7)
    assert a == b
