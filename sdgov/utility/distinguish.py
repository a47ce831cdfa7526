"""Can a classifier tell real from synthetic records? Two propensity-score measures.

pMSE ratio (Snoke, Raab, Nowok, Dibben & Slavkovic 2018): a CART propensity model predicts "synthetic" from the
stacked records (so interactions count, not only one-way margins); pMSE = mean (p̂ − c)², c the synthetic share.
Its null expectation — real and synthetic from one distribution — is estimated by refitting the same tree with the
labels permuted; the ratio is ≈ 1 when the data cannot be told apart and grows as they can. (A logistic model
with main effects only would have an analytic null, (k − 1)(1 − c)² c / N, but it sees one-way margins only,
which every generator here reproduces by construction.)

SPECKS: a random forest propensity model, scored out of bag (so a forest that memorises records cannot fake a
difference); the Kolmogorov–Smirnov distance between the score distributions of real and synthetic records,
repeated over seeds (a fresh subsample and forest each time) — 0 when indistinguishable, 1 when fully separated.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.stats import ks_2samp

from sdgov.base.seeds import stream

N_JOBS = 1
"""Threads per SPECKS forest. One: a forest of 30 trees on 2 × 3000 records is ~0.1 s of work, and joblib's
threads spent more CPU handing it out than they saved (Adult, 20 seeds: 3.4–3.7 CPU s with 2 threads, 2.8–3.2 with
one; the forests and their scores are the same, each tree's seed comes from ``random_state``)."""


def pmse(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    attributes: list[str],
    rows: int = 20000,
    permutations: int = 5,
    min_leaf: int = 200,
    seed: int = 0,
) -> dict:
    """pMSE of a CART propensity model and its ratio to the permutation null (Snoke et al. 2018, §3.2)."""
    from sklearn.tree import DecisionTreeClassifier

    rng = stream(seed, 303)
    r, s = real[attributes].to_numpy(), synth[attributes].to_numpy()
    r = r[rng.choice(len(r), min(rows, len(r)), replace=False)]
    s = s[rng.choice(len(s), min(rows, len(s)), replace=False)]
    x = np.vstack([r, s])
    y = np.r_[np.zeros(len(r)), np.ones(len(s))]
    c = y.mean()

    def fit(labels: np.ndarray) -> float:
        tree = DecisionTreeClassifier(min_samples_leaf=min_leaf, random_state=seed).fit(x, labels)
        return float(np.mean((tree.predict_proba(x)[:, 1] - c) ** 2))

    value = fit(y)
    null = float(np.mean([fit(rng.permutation(y)) for _ in range(permutations)]))
    return {
        "pmse": value,
        "null_mean": null,
        "ratio": value / null if null > 0 else None,
        "model": f"CART (min {min_leaf} records per leaf), null from {permutations} label permutations",
        "rows_per_side": int(len(r)),
    }


def specks(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    attributes: list[str],
    seeds: int = 20,
    rows: int = 3000,
    trees: int = 30,
    seed: int = 0,
) -> dict:
    """SPECKS over ``seeds`` repeats, each a fresh subsample of at most ``rows`` records a side and a fresh forest from
    its own seed stream: the per-seed KS distances and their median."""
    from sklearn.ensemble import RandomForestClassifier

    r, s = real[attributes].to_numpy(), synth[attributes].to_numpy()
    m = min(rows, len(r), len(s))
    out = []
    for i in range(seeds):
        rng = stream(seed, i)
        x = np.vstack([r[rng.choice(len(r), m, replace=False)], s[rng.choice(len(s), m, replace=False)]])
        y = np.r_[np.zeros(m), np.ones(m)]
        rf = RandomForestClassifier(
            n_estimators=trees,
            min_samples_leaf=5,
            max_features="sqrt",
            oob_score=True,
            n_jobs=N_JOBS,
            random_state=int(rng.integers(2**31)),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rf.fit(x, y)
        score = rf.oob_decision_function_[:, 1]
        ok = ~np.isnan(score)
        out.append(float(ks_2samp(score[ok & (y == 0)], score[ok & (y == 1)]).statistic))
    return {"ks": out, "median_ks": float(np.median(out)), "seeds": seeds, "rows_per_side": m, "trees": trees}
