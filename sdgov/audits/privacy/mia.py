"""Linkability (membership-inference) game with shadow models — Stadler et al., "Synthetic Data – Anonymisation
Groundhog Day", USENIX Security 2022, Fig. 1 and §4.2.

The attacker knows the generator and its settings, the training size n and the synthetic size m, and holds a
reference dataset from the same population that does not contain the targets. For each target t:

1. Shadow worlds shared by every target (:func:`sdgov.audits.privacy.worlds.shadow_pairs`: LiRA's online design,
   Carlini et al. 2022, in antithetic pairs): ``n_shadow`` pairs of datasets of n records, each pair a base of
   n − T reference records; in each pair every target is in exactly one of the two worlds (a fair coin), each
   world topped up to n with other reference records. So each target has ``n_shadow`` in-worlds and ``n_shadow``
   out-worlds, paired by their base, from 2·``n_shadow`` fits for all targets — not (T + 1)·``n_shadow``.
2. Each dataset is fitted once and ``n_synth`` synthetic sets of m records are sampled from the fit.
3. Every synthetic set becomes a feature vector — F_naive (per attribute: share of categories present, the most
   and the least frequent present category, mean and spread of the category index), F_hist (every category's
   frequency) or F_corr (pairwise correlations of the one-hot indicators of different attributes; Cramér's V
   per attribute pair when there are too many categories), F_query (TAPAS, Houssiau et al. 2022: the target's
   own counts — the share of synthetic records that agree with the target on each subset of its attributes,
   i.e. the target's cells in every marginal of the synthetic data; subsets of at most 3 attributes plus the full
   record when there are more than 6 attributes) — and a random forest learns in (1) vs out (0).
4. The game is scored on worlds the classifier did not see: grouped k-fold cross-validation over the pairs (a
   target's in-world and out-world of one pair are always held out together), so training and challenge datasets
   are drawn independently from the same population, as in the game.

Advantage Adv = TP rate − FP rate over the held-out sets, privacy gain PG = 1 − Adv, with a Student-t CI over
the per-pair advantages (sets sampled from one fit share its noise and are not independent; pairs are — so the
precision is set by ``n_shadow``, not by ``n_synth``). A target's reported
Adv is the largest over the feature sets (the attacker may pick the best; this errs on the side of risk), and its
interval is Bonferroni-adjusted over targets × feature sets: the policy acts on the worst of many intervals, so
each is drawn at level 1 − (1 − confidence)/(T·F) to keep the family-wise level.

DP bound shown beside it: an (ε, δ)-DP release keeps TPR ≤ e^ε·FPR + δ, hence Adv ≤ e^ε − 1 (the bound the issue
names, vacuous for ε ≥ ln 2) and, tighter, Adv ≤ (e^ε − 1 + 2δ)/(e^ε + 1) (Kairouz, Oh, Viswanath 2015: the
two-sided hypothesis-testing region of (ε, δ)-DP; maximise 1 − FPR − FNR over it). For the target, the game's in
and out datasets differ by a replaced record (the target for a reference record; the other targets' swaps are
independent of it, :mod:`sdgov.audits.privacy.worlds`), two add/remove steps, so the membership check applies the
tight bound at (2ε, (1 + e^ε)δ) (:func:`membership_adv_bound`).
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sdgov.agreement.sections.privacy_risk import RiskSettings
from sdgov.audits.privacy.attribute import AttributeResult, advantage, p_correct
from sdgov.audits.privacy.base import GeneratorRef, Progress, Target, seed_of, world_ci
from sdgov.audits.privacy.part import EpsilonBound, FitRequest, PrivacyPart
from sdgov.audits.privacy.planner import fit_all
from sdgov.audits.privacy.policy import PolicyCheck, level_of
from sdgov.audits.privacy.worlds import MEMBERSHIP, ShadowPairs, membership_fit_seed, shadow_pairs
from sdgov.base.executor import Executor, executor_for
from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.audits.privacy.part import AuditFrame, AuditShape

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


def world_summary(
    sets: list[np.ndarray],
    *,
    sizes: list[int],
    which: tuple[str, ...],
    target_rows: np.ndarray,
    ai: dict[str, Any] | None,
) -> dict[str, Any]:
    """What the game keeps of one shadow world's synthetic sets (run where the world was fitted): each set's feature
    vectors — the query features for every target, sets × targets × subsets — and, for attribute inference, the
    probability that the attacker's guess of each target's sensitive value is right (sets × targets)."""
    plain = tuple(f for f in which if f != "query")
    feats = [features(s, sizes, plain) for s in sets]
    out: dict[str, Any] = {f: np.stack([x[f] for x in feats]) for f in plain}
    if "query" in which:
        subs = query_subsets(len(sizes))
        out["query"] = np.stack([query_features(s, target_rows, subs) for s in sets])
    if ai is not None:
        out["ai"] = np.stack(
            [
                p_correct(s, target_rows, ai["s"], ai["numeric"], sizes, ai["trees"], ai["seed"] + j)
                for j, s in enumerate(sets[: ai["sets"]])
            ]
        )
    return out


def attribute_inference(
    ref: GeneratorRef, sensitive: str | None, numeric_sensitive: bool, st: RiskSettings
) -> dict[str, Any] | None:
    """How attribute inference rides on the worlds (None: not asked — no sensitive attribute, or ``ai_sets`` = 0)."""
    if sensitive is None or st.ai_sets <= 0:
        return None
    return {
        "s": ref.attributes.index(sensitive),
        "numeric": numeric_sensitive,
        "trees": st.ai_trees,
        "sets": min(st.ai_sets, st.n_synth),
    }


def membership_requests(
    ref: GeneratorRef, worlds: ShadowPairs, target_rows: np.ndarray, st: RiskSettings, ai: dict[str, Any] | None
) -> list[FitRequest]:
    """One fit per shadow world (:func:`sdgov.audits.privacy.worlds.shadow_pairs`), ``n_synth`` sets of ``m``
    records from each, summarised by :func:`world_summary` where it was fitted."""
    sizes = [ref.domain[a] for a in ref.attributes]
    out = []
    for w, rows in enumerate(worlds.rows):
        fit_seed = membership_fit_seed(st.seed, w)
        summary = partial(
            world_summary,
            sizes=sizes,
            which=tuple(st.features),
            target_rows=target_rows,
            ai=None if ai is None else {**ai, "seed": fit_seed},
        )
        seeds = tuple(seed_of(st.seed, 22, w, j) for j in range(st.n_synth))
        out.append(FitRequest((MEMBERSHIP, w), rows, fit_seed, st.m, seeds, summary))
    return out


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


def score_targets(
    targets: list[Target],
    worlds: ShadowPairs,
    summaries: list[dict[str, Any]],
    st: RiskSettings,
    sensitive: str | None,
    executor: Executor,
    progress: Progress | None = None,
) -> list[TargetRisk]:
    """Every target's game on the shared worlds: its in-world and out-world of each pair, one attack classifier per
    target and feature set (through ``executor``); attribute inference on the same worlds when ``summaries`` carry
    it and ``sensitive`` is named."""
    plain = [f for f in st.features if f != "query"]
    level = 1 - (1 - st.confidence) / (len(targets) * len(st.features))  # Bonferroni: targets × feature sets
    jobs = []
    for t, tg in enumerate(targets):
        ins, outs = worlds.in_and_out(t)
        data = {f: (np.stack([summaries[w][f] for w in ins]), np.stack([summaries[w][f] for w in outs])) for f in plain}
        if "query" in st.features:  # the target's own queries
            data["query"] = (
                np.stack([summaries[w]["query"][:, t, :] for w in ins]),
                np.stack([summaries[w]["query"][:, t, :] for w in outs]),
            )
        ai_t = None
        if sensitive is not None and "ai" in summaries[0]:
            ai_t = (
                np.stack([summaries[w]["ai"][:, t] for w in ins]),
                np.stack([summaries[w]["ai"][:, t] for w in outs]),
            )
        jobs.append((t, tg, data, ai_t, st, sensitive if ai_t is not None else None, level))
    out = []
    for r in executor.map(_score_target, jobs, "attack-classifier"):
        out.append(r)
        if progress:
            progress(len(out), len(jobs), "attack classifiers")
    return out


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
    """The game for every target on its own shadow worlds (the audit shares them: :class:`Membership`); attribute
    inference on ``sensitive`` rides on the same worlds."""
    target_rows = np.array([[t.record[a] for a in ref.attributes] for t in targets], dtype=np.int64)
    worlds = shadow_pairs(reference, target_rows, st.train_rows, st.n_shadow, st.seed)
    ai = attribute_inference(ref, sensitive, numeric_sensitive, st)
    executor = executor or executor_for(st.n_jobs)
    summaries = fit_all(ref, membership_requests(ref, worlds, target_rows, st, ai), executor, progress)
    return score_targets(targets, worlds, summaries, st, sensitive if ai else None, executor, progress)


# ------------------------------------------------------------------------------------------------ the audit's part


class Membership(PrivacyPart):
    """Membership inference against every target, and attribute inference on the same worlds (``--parts mia``)."""

    name: ClassVar[str] = "mia"
    result_field: ClassVar[str] = "targets"

    def fit_keys(self, settings: RiskSettings, shape: AuditShape) -> list[tuple[Any, ...]]:
        """The 2·``n_shadow`` shadow worlds (none without targets)."""
        return [(MEMBERSHIP, w) for w in range(2 * settings.n_shadow)] if shape.targets else []

    def requests(self, frame: AuditFrame) -> list[FitRequest]:
        """One fit per shared shadow world, summarised where it ran."""
        if not frame.targets:
            return []
        ai = attribute_inference(frame.ref, frame.sensitive, frame.numeric_sensitive, frame.settings)
        return membership_requests(frame.ref, frame.membership_worlds(), frame.target_rows, frame.settings, ai)

    def run(self, frame: AuditFrame, fitted: list[Any]) -> list[TargetRisk]:
        """Every target's risk from the worlds' summaries."""
        if not frame.targets:
            return []
        st = frame.settings
        sensitive = frame.sensitive if st.ai_sets > 0 else None
        return score_targets(
            frame.targets, frame.membership_worlds(), fitted, st, sensitive, frame.executor, frame.progress
        )

    def checks(self, result: list[TargetRisk], frame: AuditFrame) -> list[PolicyCheck]:
        """Membership under ``policy.membership`` (failing a target whose advantage beats the DP bound of a replaced
        record), attribute inference under ``policy.attribute``."""
        if not result:
            return []
        mp, st = frame.policy.membership, frame.settings
        dp_bound = membership_adv_bound(frame.claimed_epsilon, frame.claimed_delta)
        worst_t = min(result, key=lambda r: r.privacy_gain)
        fail = any(r.privacy_gain_ci[1] < mp.fail_below_pg for r in result)
        above = [r for r in result if dp_bound is not None and r.advantage_ci[0] > dp_bound]
        few = st.n_shadow < mp.min_worlds
        bad = fail or (mp.fail_above_dp_bound and bool(above))
        out = [
            PolicyCheck(
                name="membership inference (per-record privacy gain)",
                level=level_of(
                    bad and not few, (bad and few) or any(r.privacy_gain_ci[1] < mp.warn_below_pg for r in result)
                ),
                detail=f"lowest PG = {worst_t.privacy_gain:.2f} (CI {worst_t.privacy_gain_ci[0]:.2f}–"
                f"{worst_t.privacy_gain_ci[1]:.2f}, {worst_t.target.kind} record #{worst_t.target.index}, "
                f"{worst_t.feature} features)"
                + (f"; {len(above)} target(s) beat the DP bound Adv ≤ {dp_bound:.3f}" if above else "")
                + (
                    f"; only {st.n_shadow} shadow worlds (< {mp.min_worlds}): CIs unreliable, not failing"
                    if few
                    else ""
                ),
            )
        ]
        ai = [r.attribute for r in result if r.attribute is not None]
        if ai:
            q = frame.policy.attribute
            top = max(ai, key=lambda a: (a.ci[0], a.advantage))  # the policy acts on lower bounds: the largest one
            p_in, p_out = (sum(a.p_in for a in ai) / len(ai), sum(a.p_out for a in ai) / len(ai))  # a typical target
            out.append(
                PolicyCheck(
                    name=f"attribute inference ({top.sensitive})",
                    level=level_of(
                        any(a.ci[0] > q.fail_above_adv for a in ai), any(a.ci[0] > q.warn_above_adv for a in ai)
                    ),
                    detail=f"advantage {top.advantage:+.2f} "
                    f"(CI {top.ci[0]:+.2f}–{top.ci[1]:+.2f}, Bonferroni over targets); "
                    f"P(correct | in) {top.p_in:.2f} vs P(correct | out) {top.p_out:.2f}; over all {len(ai)} "
                    f"targets P(correct | in) {p_in:.2f} vs P(correct | out) {p_out:.2f}",
                )
            )
        return out

    def bound(self, result: list[TargetRisk], frame: AuditFrame) -> EpsilonBound | None:
        """The shadow models' scores as an ε bound, reported beside ε_lower (not part of it): every target's advantage
        interval holds jointly at the audit's confidence (Bonferroni), so the largest ε their lower ends need is a
        lower bound on ε at that confidence (docs/privacy_risk.md, "ε_lower and its confidence")."""
        if not result:
            return None
        eps = max(epsilon_from_membership_advantage(r.advantage_ci[0], frame.claimed_delta) for r in result)
        return EpsilonBound(epsilon_lower=eps, confidence=frame.settings.confidence, refutes=False)
