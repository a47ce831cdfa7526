"""Task-specific utility: run each declared task on the real and on the synthetic data, and compare.

The real data is split once (``Split``): models are trained on the real training part, and every model — the
real-trained one and the synthetic-trained one — is tested on the same real holdout (train-on-synthetic /
test-on-real, TSTR, against train-on-real, TRTR). Tables and gaps compare with the whole real data.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax

from sdgov.agreement.sections.tasks import ClassifierTask, GapTask, RegressionTask, TableTask
from sdgov.base.seeds import stream
from sdgov.data.schema import Schema
from sdgov.engines.recordset import RecordSet
from sdgov.utility.distinguish import N_JOBS
from sdgov.utility.jaro import ordering_similarity


@dataclass(frozen=True)
class Split:
    """The real records the models see (all of them, or the real sample at scale), split once."""

    real: pd.DataFrame
    train: pd.DataFrame
    holdout: pd.DataFrame


def split_real(real: pd.DataFrame, holdout: float = 0.2, seed: int = 0) -> Split:
    """The real records split once by a seeded permutation: ``holdout`` of them (rounded) held out, the rest to train
    on; the same seed, the same split."""
    perm = np.random.default_rng(seed).permutation(len(real))
    cut = int(round(len(real) * holdout))
    return Split(real, real.iloc[perm[cut:]].reset_index(drop=True), real.iloc[perm[:cut]].reset_index(drop=True))


def table_attributes(t: TableTask | GapTask) -> tuple[str, ...]:
    """The one exact table a table or gap task is computed from: its attributes, then its ``where`` attributes."""
    attrs = list(t.attributes) if isinstance(t, TableTask) else [t.group, *t.by]
    return tuple(dict.fromkeys([*attrs, *t.where]))


def _table(records: RecordSet, schema: Schema, attrs: list[str], where: dict) -> np.ndarray:
    """The float table of ``attrs`` over the records that ``where`` keeps, from one exact table of the records
    (:func:`table_attributes`): the ``where`` axes are masked to their kept cells and summed out."""
    order = tuple(dict.fromkeys([*attrs, *where]))
    table = records.table(order).astype(np.float64)
    for a, wanted in where.items():
        lookup = [str(c) for c in schema.by_name[a].codes()]
        keep = np.zeros(schema.by_name[a].size)
        keep[[lookup.index(str(c)) for c in wanted]] = 1.0
        shape = [1] * table.ndim
        shape[order.index(a)] = -1
        table = table * keep.reshape(shape)
    extra = tuple(i for i, a in enumerate(order) if a not in attrs)
    table = table.sum(axis=extra) if extra else table
    kept = [a for a in order if a in attrs]
    return np.transpose(table, [kept.index(a) for a in attrs])


# --------------------------------------------------------------------------------------------- tables


def table_task(t: TableTask, real: RecordSet, synth: RecordSet, schema: Schema) -> dict:
    """The task's table on real and on synthetic records (scaled to the real total): RMSE in counts, TVD of the
    proportions, and both totals."""
    r = _table(real, schema, t.attributes, t.where)
    s = _table(synth, schema, t.attributes, t.where) * (real.rows / max(synth.rows, 1))
    p, q = r / max(r.sum(), 1), s / max(s.sum(), 1)
    return {
        "rmse": float(np.sqrt(np.mean((r - s) ** 2))),
        "tvd": float(0.5 * np.abs(p - q).sum()),
        "cells": int(r.size),
        "real_total": float(r.sum()),
        "synthetic_total_scaled": float(s.sum()),
        "units": "counts (synthetic scaled to the real record total)",
    }


def _gap(records: RecordSet, schema: Schema, t: GapTask) -> tuple[np.ndarray, list[str]]:
    col = schema.by_name[t.group]
    lookup = [str(c) for c in col.codes()]
    a, b = [lookup.index(str(g)) for g in t.groups] if t.groups is not None else [0, 1]
    tab = _table(records, schema, [t.group, *t.by], t.where).reshape(col.size, -1)
    share_a = tab[a] / max(tab[a].sum(), 1)
    share_b = tab[b] / max(tab[b].sum(), 1)
    return 100 * (share_a - share_b), [col.labels()[a], col.labels()[b]]


def gap_task(t: GapTask, real: RecordSet, synth: RecordSet, schema: Schema) -> dict:
    """The gap P(by | group a) − P(by | group b), in percentage points, on real and on synthetic records: RMSE, largest
    error and sign agreement over the cells the real data has."""
    gr, groups = _gap(real, schema, t)
    gs, _ = _gap(synth, schema, t)
    labels = [" / ".join(x) for x in _cell_labels(schema, t.by)]
    err = gs - gr
    present = _table(real, schema, [t.group, *t.by], t.where).sum(axis=0).ravel() > 0
    same_sign = np.sign(gr[present]) == np.sign(gs[present])
    return {
        "rmse_pp": float(np.sqrt(np.mean(err**2))),
        "max_abs_error_pp": float(np.abs(err).max()),
        "sign_agreement": float(same_sign.mean()) if present.any() else 1.0,
        "groups": groups,
        "definition": f"P({', '.join(t.by)} | {groups[0]}) − P({', '.join(t.by)} | {groups[1]}), percentage points",
        "cells": [
            {"cell": lab, "real": float(x), "synthetic": float(y)}
            for lab, x, y, ok in zip(labels, gr, gs, present)
            if ok
        ],
    }


def _cell_labels(schema: Schema, attrs: list[str]) -> list[tuple[str, ...]]:
    import itertools

    return list(itertools.product(*(schema.by_name[a].labels() for a in attrs)))


# --------------------------------------------------------------------------------------------- regression


class _Design:
    """One-hot design (intercept + every level but a reference) for categorical features, fixed on real data."""

    def __init__(self, real: pd.DataFrame, schema: Schema, features: list[str]) -> None:
        self.features = features
        self.levels: list[tuple[str, np.ndarray]] = []
        self.names = ["(intercept)"]
        for a in features:
            present = np.flatnonzero(np.bincount(real[a].to_numpy(), minlength=schema.by_name[a].size))
            kept = present[1:]  # the first level present is the reference
            self.levels.append((a, kept))
            labels = schema.by_name[a].labels()
            self.names += [f"{a} = {labels[k]}" for k in kept]

    def __call__(self, codes: pd.DataFrame) -> np.ndarray:
        cols = [np.ones(len(codes))]
        for a, kept in self.levels:
            v = codes[a].to_numpy()
            cols += [(v == k).astype(np.float64) for k in kept]
        return np.stack(cols, axis=1)


def _fit_mnlogit(x: np.ndarray, y: np.ndarray, k: int, ridge: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logit by maximum likelihood on grouped rows; returns (W, standard errors), shape p × (k−1).

    Class 0 is the reference. A tiny ridge keeps separated levels finite (their coefficient is then meaningless).
    """
    keys, inv = np.unique(x, axis=0, return_inverse=True)
    inv = inv.ravel()
    yc = np.zeros((len(keys), k))
    np.add.at(yc, (inv, y), 1.0)
    ng = yc.sum(axis=1)
    p = x.shape[1]

    def nll(w: np.ndarray) -> tuple[float, np.ndarray]:
        w = w.reshape(p, k - 1)
        eta = np.hstack([np.zeros((len(keys), 1)), keys @ w])
        logp = log_softmax(eta, axis=1)
        f = -(yc * logp).sum() + ridge * (w**2).sum()
        g = keys.T @ (ng[:, None] * np.exp(logp) - yc)[:, 1:] + 2 * ridge * w
        return float(f), g.ravel()

    res = minimize(nll, np.zeros(p * (k - 1)), jac=True, method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-7})
    w = res.x.reshape(p, k - 1)
    pi = softmax(np.hstack([np.zeros((len(keys), 1)), keys @ w]), axis=1)[:, 1:]
    # Fisher information: Σ_g n_g (diag π − π πᵀ) ⊗ x xᵀ, parameters ordered (feature, class)
    cov_c = ng[:, None, None] * (np.einsum("gi,ij->gij", pi, np.eye(k - 1)) - np.einsum("gi,gj->gij", pi, pi))
    info = np.einsum("gab,gi,gj->iajb", cov_c, keys, keys).reshape(p * (k - 1), p * (k - 1))
    info += 2 * ridge * np.eye(p * (k - 1))
    se = np.sqrt(np.clip(np.diag(np.linalg.pinv(info)), 0, None)).reshape(p, k - 1)
    return w, se


def _predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.argmax(np.hstack([np.zeros((len(x), 1)), x @ w]), axis=1)


def fit_regression(t: RegressionTask, train: pd.DataFrame, design: _Design, classes: np.ndarray) -> dict:
    """Fit on ``train``; rows whose target is not among ``classes`` (absent from the real data) are dropped."""
    y = train[t.target].to_numpy()
    keep = np.isin(y, classes)
    yi = np.searchsorted(classes, y[keep])
    w, se = _fit_mnlogit(design(train[keep]), yi, len(classes))
    return {"w": w, "se": se, "dropped": int((~keep).sum())}


def regression_task(
    t: RegressionTask, split: Split, synth: pd.DataFrame, schema: Schema, real_fit: dict | None = None
) -> tuple[dict, dict]:
    """Compare the synthetic-data regression with the real one; ``real_fit`` caches the real models."""
    if real_fit is None:
        design = _Design(split.real, schema, t.features)
        classes = np.flatnonzero(np.bincount(split.real[t.target].to_numpy(), minlength=schema.by_name[t.target].size))
        full = fit_regression(t, split.real, design, classes)
        train = fit_regression(t, split.train, design, classes)
        hold_x, hold_y = design(split.holdout), split.holdout[t.target].to_numpy()
        acc = float(np.mean(classes[_predict(train["w"], hold_x)] == hold_y))
        real_fit = {"design": design, "classes": classes, "full": full, "acc": acc, "hold": (hold_x, hold_y)}
    design, classes, full = real_fit["design"], real_fit["classes"], real_fit["full"]
    sfit = fit_regression(t, synth, design, classes)
    hold_x, hold_y = real_fit["hold"]
    tstr = float(np.mean(classes[_predict(sfit["w"], hold_x)] == hold_y))
    br, bs, sr, ss = full["w"], sfit["w"], full["se"], sfit["se"]
    # only coefficients that are estimable: not separated (huge SE) in the real fit
    ok = np.isfinite(sr) & (sr < 10) & (np.abs(br) > 1e-8)
    lr, ur, ls, us = br - 1.96 * sr, br + 1.96 * sr, bs - 1.96 * ss, bs + 1.96 * ss
    inter = np.minimum(ur, us) - np.maximum(lr, ls)
    overlap = np.clip(0.5 * (inter / np.maximum(ur - lr, 1e-12) + inter / np.maximum(us - ls, 1e-12)), 0, 1)
    labels = schema.by_name[t.target].labels()
    coefs = [
        {
            "term": design.names[i],
            "class": labels[classes[j + 1]],
            "real": float(br[i, j]),
            "synthetic": float(bs[i, j]),
            "se_real": float(sr[i, j]),
            "se_synthetic": float(ss[i, j]),
            "ci_overlap": float(overlap[i, j]),
        }
        for i in range(br.shape[0])
        for j in range(br.shape[1])
        if ok[i, j]
    ]
    res = {
        "accuracy_train_on_real": real_fit["acc"],
        "accuracy_train_on_synthetic": tstr,
        "accuracy_gap": real_fit["acc"] - tstr,
        "coef_bias_pct_median": float(np.median(100 * np.abs(bs - br)[ok] / np.abs(br)[ok])) if ok.any() else None,
        "ci_overlap_mean": float(overlap[ok].mean()) if ok.any() else None,
        "variance_ratio_median": float(np.median((ss[ok] / sr[ok]) ** 2)) if ok.any() else None,
        "reference_class": labels[classes[0]],
        "coefficients_compared": int(ok.sum()),
        "synthetic_rows_dropped": sfit["dropped"],
        "coefficients": coefs,
    }
    return res, real_fit


# --------------------------------------------------------------------------------------------- classifier


def _forest(t: ClassifierTask, seed: int):
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(
        n_estimators=t.trees, min_samples_leaf=5, max_features="sqrt", n_jobs=N_JOBS, random_state=seed
    )


def _importance_order(
    model, x: np.ndarray, y: np.ndarray, features: list[str], seed: int, repeats: int, rows: int
) -> tuple[list[str], dict[str, float]]:
    from sklearn.inspection import permutation_importance

    rng = np.random.default_rng(seed)
    idx = rng.choice(len(x), min(rows, len(x)), replace=False)
    imp = permutation_importance(model, x[idx], y[idx], n_repeats=repeats, random_state=seed, n_jobs=1)
    values = dict(zip(features, (float(v) for v in imp.importances_mean)))
    return sorted(features, key=lambda f: -values[f]), values


def classifier_task(
    t: ClassifierTask,
    split: Split,
    synth: pd.DataFrame,
    seed: int = 0,
    repeats: int = 3,
    rows: int = 4000,
    real_fit: dict | None = None,
) -> tuple[dict, dict]:
    """A random forest trained on synthetic against one trained on real, both tested on the real holdout (plus
    overconfidence and the Jaro similarity of importance orderings); returns the real fit too, to pass back as
    ``real_fit``."""
    f = list(t.features)
    hx, hy = split.holdout[f].to_numpy(), split.holdout[t.target].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if real_fit is None:
            model = _forest(t, seed).fit(split.train[f].to_numpy(), split.train[t.target].to_numpy())
            order, imp = _importance_order(model, hx, hy, f, seed, repeats, rows)
            real_fit = {"acc": float(model.score(hx, hy)), "order": order, "importance": imp}
        perm = stream(seed, 1).permutation(len(synth))
        cut = int(round(len(synth) * len(split.holdout) / len(split.real)))
        s_hold, s_train = synth.iloc[perm[:cut]], synth.iloc[perm[cut:]]
        sx, sy = s_hold[f].to_numpy(), s_hold[t.target].to_numpy()
        model = _forest(t, seed).fit(s_train[f].to_numpy(), s_train[t.target].to_numpy())
        order, imp = _importance_order(model, sx, sy, f, seed, repeats, rows)
        on_real, on_synth = float(model.score(hx, hy)), float(model.score(sx, sy))
    res = {
        "accuracy_real_model_real_holdout": real_fit["acc"],
        "accuracy_synthetic_model_real_holdout": on_real,
        "accuracy_synthetic_model_synthetic_holdout": on_synth,
        "accuracy_gap": real_fit["acc"] - on_real,
        "overconfidence": on_synth - on_real,
        "importance_order_real": real_fit["order"],
        "importance_order_synthetic": order,
        "jaro": ordering_similarity(real_fit["order"], order),
        "importance_real": real_fit["importance"],
        "importance_synthetic": imp,
    }
    return res, real_fit


def run_task(t, real: RecordSet, split: Split, synth: RecordSet, schema: Schema, cache: dict, seed: int = 0) -> dict:
    """One task on one synthetic set: tables and gaps from the exact tables of every record, models fitted on the
    records the models see (``split``, ``synth.sample()``); ``cache`` keeps the real-data models across sets."""
    head = {"name": t.name, "kind": t.kind, "description": t.description}
    if isinstance(t, TableTask):
        return {
            **head,
            "attributes": list(t.attributes),
            "where": {k: list(v) for k, v in t.where.items()},
            **table_task(t, real, synth, schema),
        }
    if isinstance(t, GapTask):
        return {
            **head,
            "group": t.group,
            "by": list(t.by),
            "where": {k: list(v) for k, v in t.where.items()},
            **gap_task(t, real, synth, schema),
        }
    if isinstance(t, RegressionTask):
        res, cache[t.name] = regression_task(t, split, synth.sample(), schema, cache.get(t.name))
        return {**head, "target": t.target, "features": list(t.features), **res}
    res, cache[t.name] = classifier_task(t, split, synth.sample(), seed=seed, real_fit=cache.get(t.name))
    return {**head, "target": t.target, "features": list(t.features), **res}
