"""Attribute inference on a declared sensitive attribute, per target (Stadler et al. 2022, §4.3).

The attacker knows every attribute of the target except the sensitive one S. From each synthetic set it trains
a model of S given the other attributes — a random forest when S is categorical, a linear model (on one-hot
features, with a normal predictive of the residuals' spread over the bins) when S is a numeric (binned)
attribute — and guesses the target's S by drawing it from the model's predicted distribution. On the same shadow
worlds as the linkability game (:mod:`sdgov.audits.privacy.mia`):

    Adv_AI = P(correct | target in the training data) − P(correct | target out)

so that what any record of the population would reveal (the "base rate" of inference from statistics) is
subtracted, and only what the target's own presence adds remains. The CI is a t-interval over worlds.

Why the guess is drawn and not the model's most likely value (issue 26 item 5). The most likely value of S
given the other attributes is, for almost every target, the same in every world: one record more or less does
not change which category is commonest. Scored that way, P(correct) is 0 or 1 per target whatever the worlds
(a target whose S is not the commonest one for its other attributes — every outlier — reads 0.00 in and out),
the advantage is exactly 0 with a zero-width interval, and the evidence says nothing. A guess drawn from the
model's distribution is correct with probability p(S = s_target | rest): a proper attacker whose success rate
moves with every record the synthetic data carries — near 1 for a member whose record a copier reproduced and
whose other attributes no one else shares, and the same in and out for a release that reads only Φ.
"""

from __future__ import annotations

import numpy as np

from sdgov.audits.privacy.base import world_ci
from sdgov.base.model import Frozen


class AttributeResult(Frozen):
    sensitive: str
    p_in: float
    p_out: float
    advantage: float
    ci: tuple[float, float]


def p_correct(
    synth: np.ndarray, queries: np.ndarray, s: int, numeric: bool, sizes: list[int], trees: int, seed: int
) -> np.ndarray:
    """Train on one synthetic set (cell indices); for each row of ``queries`` the probability that the attacker's
    guess of column ``s`` (drawn from the model's predicted distribution) is the row's own value.

    scipy.stats and scikit-learn are imported here, not with the module: every command that reads the audit
    registry (validate, propose, the pre-flight's dry runs) imported them for nothing, ~2 CPU s a process."""
    from scipy import stats
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LinearRegression

    X = np.delete(synth, s, axis=1)
    y = synth[:, s]
    Q = np.delete(queries, s, axis=1)
    truth = queries[:, s]
    if numeric:
        other = [k for j, k in enumerate(sizes) if j != s]
        model = LinearRegression().fit(_onehot(X, other), y.astype(float))
        resid = y - model.predict(_onehot(X, other))
        sd = max(float(np.sqrt(np.mean(resid**2))), 1e-6)  # the predictive's spread: the residuals'
        mu = model.predict(_onehot(Q, other))
        lo = np.where(truth <= 0, -np.inf, truth - 0.5)  # the end bins take the tails
        hi = np.where(truth >= sizes[s] - 1, np.inf, truth + 0.5)
        return np.asarray(stats.norm.cdf((hi - mu) / sd) - stats.norm.cdf((lo - mu) / sd), dtype=np.float64)
    classes = np.unique(y)
    if classes.size == 1:
        return (truth == classes[0]).astype(np.float64)
    # every tree sees every synthetic record (no bootstrap): a record the output reproduced is found whole, by
    # each tree, rather than by the ~63 % of trees whose bootstrap drew it
    model = RandomForestClassifier(n_estimators=trees, random_state=seed, n_jobs=1, min_samples_leaf=1, bootstrap=False)
    proba = model.fit(X, y).predict_proba(Q)  # columns: model.classes_ (sorted)
    col = np.searchsorted(model.classes_, truth)
    seen = (col < len(model.classes_)) & (model.classes_[np.minimum(col, len(model.classes_) - 1)] == truth)
    return np.where(seen, proba[np.arange(len(Q)), np.minimum(col, len(model.classes_) - 1)], 0.0)


def _onehot(X: np.ndarray, sizes: list[int]) -> np.ndarray:
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    out = np.zeros((len(X), int(sum(sizes))), dtype=np.float32)
    out[np.arange(len(X))[:, None], X + offsets] = 1.0
    return out


def advantage(correct_in: np.ndarray, correct_out: np.ndarray, sensitive: str, level: float) -> AttributeResult:
    """``correct_in``/``correct_out``: worlds × sets of P(correct). t-interval over the per-world differences."""
    ci_, co = np.asarray(correct_in, float), np.asarray(correct_out, float)
    p_in, p_out = float(ci_.mean()), float(co.mean())
    return AttributeResult(
        sensitive=sensitive,
        p_in=p_in,
        p_out=p_out,
        advantage=p_in - p_out,
        ci=world_ci(ci_.mean(axis=1) - co.mean(axis=1), level),
    )
