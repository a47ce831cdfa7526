"""Attribute inference on a declared sensitive attribute, per target (Stadler et al. 2022, §4.3).

The attacker knows every attribute of the target except the sensitive one S. From each synthetic set it trains
a model of S given the other attributes — a random forest when S is categorical, a linear model (on one-hot
features, prediction rounded to the nearest bin) when S is a numeric (binned) attribute — and predicts the
target's S. On the same shadow worlds as the linkability game (:mod:`sdgov.audits.privacy.mia`):

    Adv_AI = P(correct | target in the training data) − P(correct | target out)

so that what any record of the population would reveal (the "base rate" of inference from statistics) is
subtracted, and only what the target's own presence adds remains. The CI is a t-interval over worlds.
"""

from __future__ import annotations

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression

from sdgov.audits.privacy.base import world_ci
from sdgov.base.model import Frozen


class AttributeResult(Frozen):
    sensitive: str
    p_in: float
    p_out: float
    advantage: float
    ci: tuple[float, float]


def predict_sensitive(
    synth: np.ndarray, queries: np.ndarray, s: int, numeric: bool, sizes: list[int], trees: int, seed: int
) -> np.ndarray:
    """Train on one synthetic set (cell indices), predict column ``s`` of ``queries``."""
    X = np.delete(synth, s, axis=1)
    y = synth[:, s]
    Q = np.delete(queries, s, axis=1)
    if numeric:
        other = [k for j, k in enumerate(sizes) if j != s]
        model = LinearRegression().fit(_onehot(X, other), y.astype(float))
        return np.clip(np.rint(model.predict(_onehot(Q, other))), 0, sizes[s] - 1).astype(np.int64)
    if np.unique(y).size == 1:
        return np.full(len(Q), y[0])
    model = RandomForestClassifier(n_estimators=trees, random_state=seed, n_jobs=1, min_samples_leaf=1)
    return model.fit(X, y).predict(Q)


def _onehot(X: np.ndarray, sizes: list[int]) -> np.ndarray:
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    out = np.zeros((len(X), int(sum(sizes))), dtype=np.float32)
    out[np.arange(len(X))[:, None], X + offsets] = 1.0
    return out


def advantage(correct_in: np.ndarray, correct_out: np.ndarray, sensitive: str, level: float) -> AttributeResult:
    """``correct_in``/``correct_out``: worlds × sets booleans. t-interval over the per-world differences."""
    ci_, co = np.asarray(correct_in, float), np.asarray(correct_out, float)
    p_in, p_out = float(ci_.mean()), float(co.mean())
    return AttributeResult(
        sensitive=sensitive,
        p_in=p_in,
        p_out=p_out,
        advantage=p_in - p_out,
        ci=world_ci(ci_.mean(axis=1) - co.mean(axis=1), level),
    )
