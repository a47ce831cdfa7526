"""Linkability (membership-inference) game with shadow models — Stadler et al., "Synthetic Data – Anonymisation
Groundhog Day", USENIX Security 2022, Fig. 1 and §4.2.

The attacker knows the generator and its settings, the training size n and the synthetic size m, and holds a
reference dataset from the same population that does not contain the targets. For each target t:

1. ``n_shadow`` shadow worlds: a base B_s of n − 1 reference records; the *out* dataset is B_s plus one other
   reference record r_s, the *in* dataset is B_s plus t (both of size n). The out datasets do not depend on t,
   so they are fitted once and shared by all targets: (T + 1)·n_shadow fits instead of 2·T·n_shadow.
2. Each dataset is fitted once and ``n_synth`` synthetic sets of m records are sampled from the fit.
3. Every synthetic set becomes a feature vector — F_naive (per attribute: share of categories present, the most
   and the least frequent present category, mean and spread of the category index), F_hist (every category's
   frequency) or F_corr (pairwise correlations of the one-hot indicators of different attributes; Cramér's V
   per attribute pair when there are too many categories), F_query (TAPAS, Houssiau et al. 2022: the target's
   own counts — the share of synthetic records that agree with the target on each subset of its attributes,
   i.e. the target's cells in every marginal of the synthetic data; subsets of at most 3 attributes plus the full
   record when there are more than 6 attributes) — and a random forest learns in (1) vs out (0).
4. The game is scored on worlds the classifier did not see: grouped k-fold cross-validation over the shadow
   worlds (a world's in and out sets are always held out together), so training and challenge datasets are
   drawn independently from the same population, as in the game.

Advantage Adv = TP rate − FP rate over the held-out sets, privacy gain PG = 1 − Adv, with a Student-t CI over
the per-world advantages (sets sampled from one fit share its noise and are not independent; worlds are — so the
precision is set by ``n_shadow``, not by ``n_synth``). A target's reported
Adv is the largest over the feature sets (the attacker may pick the best; this errs on the side of risk), and its
interval is Bonferroni-adjusted over targets × feature sets: the policy acts on the worst of many intervals, so
each is drawn at level 1 − (1 − confidence)/(T·F) to keep the family-wise level.

DP bound shown beside it: an (ε, δ)-DP release keeps TPR ≤ e^ε·FPR + δ, hence Adv ≤ e^ε − 1 (the bound the issue
names, vacuous for ε ≥ ln 2) and, tighter, Adv ≤ (e^ε − 1 + 2δ)/(e^ε + 1) (Kairouz, Oh, Viswanath 2015: the
two-sided hypothesis-testing region of (ε, δ)-DP; maximise 1 − FPR − FNR over it). The game's in and out
datasets differ by a replaced record, two add/remove steps, so the membership check applies the tight bound at
(2ε, (1 + e^ε)δ) (:func:`membership_adv_bound`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sdgov.agreement.sections.privacy_risk import RiskSettings
from sdgov.audits.privacy.attribute import AttributeResult, advantage, p_correct
from sdgov.audits.privacy.base import GeneratorRef, Progress, Target, seed_of, world_ci
from sdgov.base.executor import Executor, executor_for
from sdgov.base.model import Frozen

CORR_MAX_CATEGORIES = 300


def dp_adv_bound(epsilon: float | None) -> float | None:
    """Adv ≤ e^ε − 1 (capped at 1): the bound the card shows beside each bar."""
    return None if epsilon is None else float(min(1.0, math.expm1(epsilon)))


def dp_adv_bound_tight(epsilon: float | None, delta: float | None) -> float | None:
    """Adv ≤ (e^ε − 1 + 2δ)/(e^ε + 1): the largest TPR − FPR any test can reach against (ε, δ)-DP."""
    if epsilon is None:
        return None
    return float(min(1.0, (math.expm1(epsilon) + 2 * (delta or 0.0)) / (math.exp(epsilon) + 1)))


def membership_adv_bound(epsilon: float | None, delta: float | None) -> float | None:
    """The largest advantage an add/remove-one (ε, δ)-DP release allows in this module's game, whose in and out
    datasets differ by *replacing* one record (B + t vs B + r, both of size n): one removal and one addition, so by
    group privacy (2ε, (1 + e^ε)δ)-indistinguishable, and the tight bound is :func:`dp_adv_bound_tight` at those.
    The membership check fails a target whose advantage interval lies above it;
    :func:`epsilon_from_membership_advantage` inverts it."""
    if epsilon is None:
        return None
    return dp_adv_bound_tight(2 * epsilon, (1 + math.exp(epsilon)) * (delta or 0.0))


def epsilon_from_membership_advantage(adv: float, delta: float | None) -> float:
    """The smallest add/remove-one ε whose (ε, δ)-DP allows advantage ``adv`` in this game (inf when it reaches 1).

    The game's in and out datasets differ by *replacing* one record (B + t vs B + r: both of size n), i.e. by one
    removal and one addition; an (ε, δ)-DP release under add/remove-one is (2ε, (1 + e^ε)δ)-indistinguishable on such
    a pair (group privacy), so the advantage it allows is :func:`dp_adv_bound_tight` at those — and a lower
    confidence bound on the advantage gives, through this, a lower bound on the claimed (add/remove) ε."""
    if adv >= 1:
        return math.inf
    d = delta or 0.0

    def excess(e: float) -> float:
        return (membership_adv_bound(e, d) or 0.0) - adv

    if excess(0.0) >= 0:
        return 0.0
    from scipy.optimize import brentq  # here, as in sdgov.audits.privacy.canary: scipy.optimize loads on use

    hi = 1.0
    while excess(hi) < 0:  # the bound reaches 1 > adv by ε = 64 (e^128 rounds it to 1)
        hi *= 2
    return float(brentq(excess, 0.0, hi, xtol=1e-12))


# ------------------------------------------------------------------------------------------------ features


def features(synth: np.ndarray, sizes: list[int], which: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Feature vectors of one synthetic set (cell indices, records × attributes)."""
    m, d = synth.shape
    counts = [np.bincount(synth[:, j], minlength=k).astype(np.float64) for j, k in enumerate(sizes)]
    out: dict[str, np.ndarray] = {}
    if "naive" in which:
        f = []
        for c, k in zip(counts, sizes):
            present = c > 0
            idx = np.arange(k)
            mean = float((c * idx).sum() / m)
            f += [
                present.mean(),
                float(np.argmax(c)) / k,
                float(idx[present][np.argmin(c[present])]) / k if present.any() else 0.0,
                mean / k,
                math.sqrt(max(float((c * (idx - mean) ** 2).sum() / m), 0.0)) / k,
            ]
        out["naive"] = np.asarray(f)
    if "hist" in which:
        out["hist"] = np.concatenate(counts) / m
    if "corr" in which:
        out["corr"] = _corr(synth, sizes, counts)
    return out


def _corr(synth: np.ndarray, sizes: list[int], counts: list[np.ndarray]) -> np.ndarray:
    m, d = synth.shape
    if sum(sizes) <= CORR_MAX_CATEGORIES:
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        X = np.zeros((m, int(sum(sizes))), dtype=np.float64)
        X[np.arange(m)[:, None], synth + offsets] = 1.0
        p = X.mean(axis=0)
        sd = np.sqrt(p * (1 - p))
        Z = np.divide(X - p, sd, out=np.zeros_like(X), where=sd > 0)
        C = Z.T @ Z / m
        owner = np.repeat(np.arange(d), sizes)
        iu = np.triu_indices(len(owner), k=1)
        keep = owner[iu[0]] != owner[iu[1]]
        return C[iu[0][keep], iu[1][keep]]
    vs = []
    for i in range(d):  # Cramér's V per pair
        for j in range(i + 1, d):
            t = np.bincount(synth[:, i] * sizes[j] + synth[:, j], minlength=sizes[i] * sizes[j]).reshape(
                sizes[i], sizes[j]
            )
            e = np.outer(t.sum(1), t.sum(0)) / m
            chi2 = float(np.divide((t - e) ** 2, e, out=np.zeros_like(e), where=e > 0).sum())
            r, c = (t.sum(1) > 0).sum(), (t.sum(0) > 0).sum()
            vs.append(math.sqrt(chi2 / (m * max(min(r, c) - 1, 1))))
    return np.asarray(vs)


def query_subsets(d: int) -> list[tuple[int, ...]]:
    """Attribute subsets of the query features: all of them up to 6 attributes, else those of size ≤ 3 + the
    full record."""
    import itertools

    top = d if d <= 6 else 3
    subs = [c for k in range(1, top + 1) for c in itertools.combinations(range(d), k)]
    return subs if top == d else subs + [tuple(range(d))]


def query_features(synth: np.ndarray, targets: np.ndarray, subsets: list[tuple[int, ...]]) -> np.ndarray:
    """targets × subsets: share of synthetic records agreeing with each target on each subset (TAPAS queries)."""
    out = np.empty((len(targets), len(subsets)))
    for j, sub in enumerate(subsets):
        cols = list(sub)
        eq = synth[None, :, cols] == targets[:, None, cols]  # targets × records × |sub|
        out[:, j] = eq.all(axis=2).mean(axis=1)
    return out


# ------------------------------------------------------------------------------------------------ worlds


def _world_job(
    ref: GeneratorRef,
    rows: np.ndarray,
    fit_seed: int,
    sample_seeds: list[int],
    m: int,
    which: tuple[str, ...],
    ai: dict[str, Any] | None,
    targets: np.ndarray | None = None,
) -> dict[str, Any]:
    """Fit one shadow dataset, sample its synthetic sets, return their features (and attribute guesses)."""
    sizes = [ref.domain[a] for a in ref.attributes]
    sets = ref.fit_sample(rows, fit_seed, m, sample_seeds)
    plain = tuple(f for f in which if f != "query")
    feats = [features(s, sizes, plain) for s in sets]
    out: dict[str, Any] = {f: np.stack([x[f] for x in feats]) for f in plain}
    if "query" in which and targets is not None:  # sets × targets × subsets
        subs = query_subsets(len(sizes))
        out["query"] = np.stack([query_features(s, targets, subs) for s in sets])
    if ai is not None:
        scores = [
            p_correct(s, ai["queries"], ai["s"], ai["numeric"], sizes, ai["trees"], fit_seed + j)
            for j, s in enumerate(sets[: ai["sets"]])
        ]
        out["ai"] = np.stack(scores) if scores else None  # sets × queries: P(the attacker's guess is right)
    return out


class Worlds:
    """Features of every shadow world: out[s] and in_[t][s] are dicts feature-set → (n_synth × F)."""

    def __init__(self, out: list[dict], in_: list[list[dict]]):
        self.out, self.in_ = out, in_


def run_worlds(
    ref: GeneratorRef,
    reference: np.ndarray,
    target_rows: np.ndarray,
    st: RiskSettings,
    ai: dict[str, Any] | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> Worlds:
    """All shadow fits, in parallel through ``executor`` (default: ``n_jobs`` processes), out-worlds shared by the
    targets."""
    R = len(reference)
    n = st.train_rows
    if n > R:
        from sdgov.audits.generator_protocol import AuditError

        raise AuditError(
            f"the reference data has {R} records, fewer than the {n} of a shadow training set",
            "privacy audit",
            "lower train_rows or use more data",
        )
    rng = np.random.default_rng(seed_of(st.seed, 20))
    bases, extras = [], []
    for _ in range(st.n_shadow):
        pick = rng.choice(R, size=n, replace=False)
        bases.append(pick[:-1])
        extras.append(pick[-1])
    T = len(target_rows)
    jobs, keys = [], []
    for s in range(st.n_shadow):
        for t in range(-1, T):  # -1: the out world of base s
            rows = np.vstack([reference[bases[s]], (reference[extras[s]] if t < 0 else target_rows[t])[None, :]])
            q = None
            if ai is not None:
                q = dict(ai, queries=target_rows if t < 0 else target_rows[t : t + 1])
            jobs.append(
                (
                    ref,
                    rows,
                    seed_of(st.seed, 21, s, t + 1),
                    [seed_of(st.seed, 22, s, t + 1, j) for j in range(st.n_synth)],
                    st.m,
                    tuple(st.features),
                    q,
                    target_rows if t < 0 else target_rows[t : t + 1],
                )
            )
            keys.append((s, t))
    results: dict[tuple[int, int], dict] = {}
    for k, res in zip(keys, (executor or executor_for(st.n_jobs)).map(_world_job, jobs, "shadow-fit")):
        results[k] = res
        if progress:
            progress(len(results), len(jobs), "shadow fits")
    return Worlds(
        out=[results[(s, -1)] for s in range(st.n_shadow)],
        in_=[[results[(s, t)] for s in range(st.n_shadow)] for t in range(T)],
    )


# ------------------------------------------------------------------------------------------------ game


class FeatureScore(Frozen):
    tpr: float
    fpr: float
    advantage: float
    ci: tuple[float, float]


class TargetRisk(Frozen):
    target: Target
    by_feature: dict[str, FeatureScore]
    feature: str  # the attacker's best feature set
    advantage: float
    advantage_ci: tuple[float, float]
    privacy_gain: float  # 1 − Adv, clipped to [0, 1]
    privacy_gain_ci: tuple[float, float]
    attribute: AttributeResult | None = None


def _classify(X_in: np.ndarray, X_out: np.ndarray, folds: int, trees: int, seed: int, level: float) -> FeatureScore:
    """``level``: of the per-target interval (already Bonferroni-adjusted by the caller)."""
    """X_in, X_out: worlds × sets × F. Grouped CV over worlds; t-interval of TPR − FPR over worlds."""
    from sklearn.ensemble import RandomForestClassifier  # here: see sdgov.audits.privacy.attribute

    W, S, F = X_in.shape
    fold_of = np.random.default_rng(seed).permutation(W) % min(folds, W)
    tp = np.zeros(W)
    fp = np.zeros(W)
    for f in np.unique(fold_of):
        tr, te = np.flatnonzero(fold_of != f), np.flatnonzero(fold_of == f)
        X = np.concatenate([X_in[tr].reshape(-1, F), X_out[tr].reshape(-1, F)])
        y = np.r_[np.ones(len(tr) * S), np.zeros(len(tr) * S)]
        clf = RandomForestClassifier(n_estimators=trees, random_state=seed + int(f), n_jobs=1).fit(X, y)
        tp[te] = clf.predict(X_in[te].reshape(-1, F)).reshape(len(te), S).sum(axis=1)
        fp[te] = clf.predict(X_out[te].reshape(-1, F)).reshape(len(te), S).sum(axis=1)
    tpr, fpr = tp.sum() / (W * S), fp.sum() / (W * S)
    return FeatureScore(tpr=float(tpr), fpr=float(fpr), advantage=float(tpr - fpr), ci=world_ci((tp - fp) / S, level))


def _score_target(
    t: int,
    target: Target,
    data: dict[str, tuple[np.ndarray, np.ndarray]],
    ai: tuple[np.ndarray, np.ndarray] | None,
    st: RiskSettings,
    sensitive: str | None,
    level: float | None = None,
) -> TargetRisk:
    level = st.confidence if level is None else level
    by = {
        f: _classify(X_in, X_out, st.folds, st.rf_trees, seed_of(st.seed, 30, t), level)
        for f, (X_in, X_out) in data.items()
    }
    best = max(by, key=lambda f: by[f].advantage)
    adv, ci = by[best].advantage, by[best].ci
    attr = None
    if ai is not None and sensitive is not None:
        attr = advantage(ai[0], ai[1], sensitive, 1 - (1 - level) * len(data))  # Bonferroni over targets only
    return TargetRisk(
        target=target,
        by_feature=by,
        feature=best,
        advantage=adv,
        advantage_ci=ci,
        privacy_gain=_pg(adv),
        privacy_gain_ci=(_pg(ci[1]), _pg(ci[0])),
        attribute=attr,
    )


def _pg(adv: float) -> float:
    """PG = 1 − Adv, in [0, 1] (a negative advantage is estimation noise: no gain beyond 1)."""
    return float(min(1.0, max(0.0, 1.0 - adv)))


def linkability(
    ref: GeneratorRef,
    reference: np.ndarray,
    targets: list[Target],
    st: RiskSettings,
    sensitive: str | None = None,
    numeric_sensitive: bool = False,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> list[TargetRisk]:
    """Run the game for every target; attribute inference on ``sensitive`` rides on the same worlds."""
    attrs = ref.attributes
    target_rows = np.array([[t.record[a] for a in attrs] for t in targets], dtype=np.int64)
    ai = None
    if sensitive is not None and st.ai_sets > 0:
        ai = {
            "s": attrs.index(sensitive),
            "numeric": numeric_sensitive,
            "trees": st.ai_trees,
            "sets": min(st.ai_sets, st.n_synth),
        }
    executor = executor or executor_for(st.n_jobs)
    worlds = run_worlds(ref, reference, target_rows, st, ai, progress, executor)
    plain = [f for f in st.features if f != "query"]
    X_out = {f: np.stack([w[f] for w in worlds.out]) for f in plain}
    level = 1 - (1 - st.confidence) / (len(targets) * len(st.features))  # Bonferroni: targets × feature sets
    jobs = []
    for t, tg in enumerate(targets):
        data = {f: (np.stack([w[f] for w in worlds.in_[t]]), X_out[f]) for f in plain}
        if "query" in st.features:  # the target's own queries, in its in-worlds (1 target) and the shared out-worlds
            data["query"] = (
                np.stack([w["query"][:, 0, :] for w in worlds.in_[t]]),
                np.stack([w["query"][:, t, :] for w in worlds.out]),
            )
        ai_t = None
        if ai is not None:
            ai_t = (np.stack([w["ai"][:, 0] for w in worlds.in_[t]]), np.stack([w["ai"][:, t] for w in worlds.out]))
        jobs.append((t, tg, data, ai_t, st, sensitive if ai else None, level))
    out = []
    for r in executor.map(_score_target, jobs, "attack-classifier"):
        out.append(r)
        if progress:
            progress(len(out), len(jobs), "attack classifiers")
    return out
