"""Record-level disclosure checks of one synthetic dataset against its training data and real holdouts.

The real records not used as attack targets are split into three disjoint parts of the same size n: the
training data T (the generator is fitted on it and samples n records), a holdout H, and an independent sample B.

* **Exact matches**: synthetic records identical to a training record (and, as a baseline, B's records that are).
* **Real-unique records**: records that occur once in the real data T ∪ H. Three counts:
  S_T — real-unique training records the synthetic data reproduces exactly;
  B_T — the same for B, a same-size independent sample from the real distribution (the issue's baseline:
  an honest release should reproduce no more than chance does);
  S_H — real-unique *holdout* records the synthetic data reproduces: records it never saw, so S_H is what this
  generator produces by chance ("phantom" matches). A generator that copies training records has S_T ≫ S_H:
  one-sided binomial test of S_T among S_T + S_H matches, with success probability |U_T| / (|U_T| + |U_H|).
  (Under (ε, δ)-DP the per-record rate ratio (S_T/|U_T|) / (S_H/|U_H|) is at most about e^ε.)
* **Distance to closest record (DCR)**: Hamming distance (attributes that differ) from a synthetic record to its
  nearest training record, against the same for holdout records (the baseline distribution).
* **Small cells**: cells of the released tables (each Φ marginal, tabulated on the synthetic data) holding
  fewer than ``threshold`` but more than zero synthetic records.

**Verbatim copies** (:func:`verbatim_audit`, issue 37 item 5) — a record-level test against a holdout baseline
that needs no uniqueness on the full record at release size, for the *thin* copier: a generator that copies well
under 1 % of its rows, the training records unique on a few attributes of its choosing. Several rounds; in each, 2n
reference records drawn at random are split at random into a training half T (the generator is fitted on it once
and samples ``samples`` sets of n rows) and a holdout half H. The candidates are the cells holding exactly one
record of T ∪ H; a candidate is *over-represented* when the output holds its record far more often than the output's
own Φ tables predict: P[Poisson(e) ≥ s] ≤ ``flag_level``, s the output's count of the record, e the count the
maximum-entropy model of the output's own Φ tables gives it (:func:`sdgov.audits.privacy.beyond_phi.phi_projection`;
e = 0 where the joint exceeds that check's ``MAX_CELLS``). A record a generator copies shows up in every sample; a
generator that reads only Φ puts into a record's cell what its Φ cells imply, which e already holds — whatever the
record's membership and whatever the noise of the Φ counts.

Calibration is by the split alone: T and H are an auditor's random split, so when the output does not single out
the training records, the labels T/H of the candidates are exchangeable given the output and the number of
over-represented training candidates in a round is hypergeometric (the candidates, the over-represented ones among
them and the training ones fixed). The p-value is the exact upper tail of the sum over the independent rounds (the
convolution of their hypergeometric laws: a stratified Fisher test, no Monte-Carlo). Its floor is (|U_T|/|U_T ∪
U_H|)^k for k over-represented candidates, all training ones, so power comes from the number of distinct copied
candidates — from the rounds (fits), not from the samples.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sdgov.audits.privacy.base import GeneratorRef, Progress, record_keys, seed_of
from sdgov.audits.privacy.part import FitRequest, PrivacyPart
from sdgov.audits.privacy.planner import fit_all
from sdgov.audits.privacy.policy import PolicyCheck, level_of, two_proportion_p
from sdgov.base.executor import Executor, SerialExecutor
from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.agreement.sections.privacy_risk import RiskPolicy, RiskSettings
    from sdgov.audits.privacy.part import AuditFrame, AuditShape


class UniqueMatches(Frozen):
    real_unique_train: int  # |U_T|: training records unique in T ∪ H
    real_unique_holdout: int  # |U_H|
    synthetic: int  # S_T
    independent: int  # B_T (the baseline sample)
    synthetic_holdout: int  # S_H (phantom matches)
    rate_ratio: float  # (S_T/|U_T|) / (S_H/|U_H|), +1-smoothed
    p_value: float  # one-sided binomial test of S_T vs S_H


class DCR(Frozen):
    histogram: list[int]  # index = Hamming distance 0..d
    share_zero: float
    median: float
    sample: int


class SmallCells(Frozen):
    threshold: int
    total: int
    by_marginal: dict[str, int]


class VerbatimRound(Frozen):
    unique_train: int  # candidates of the training half: cells holding exactly one record of T ∪ H, that of T
    unique_holdout: int  # the holdout half's
    flagged_train: int  # over-represented in the output (P[Poisson(e) ≥ s] ≤ flag_level)
    flagged_holdout: int


class VerbatimResult(Frozen):
    """The verbatim-copy test (module docstring): over-represented training vs holdout candidates, exact p-value."""

    rounds: int
    train_rows: int  # n: records of each half (T and H)
    samples: int  # synthetic sets of n rows from each round's one fit
    flag_level: float
    unique_train: int
    unique_holdout: int
    flagged_train: int
    flagged_holdout: int
    p_value: float  # exact upper tail of the stratified hypergeometric sum
    model: str  # how e was computed: the output's own Φ-only model, or 0 (joint too large)
    per_round: list[VerbatimRound]


class DisclosureResult(Frozen):
    rows: int  # n: training records = synthetic records = holdout = independent sample
    exact_matches: int  # synthetic records equal to some training record
    exact_matches_independent: int  # the same for the independent sample
    unique: UniqueMatches
    dcr_synthetic: DCR
    dcr_holdout: DCR
    small_cells: SmallCells | None
    verbatim: VerbatimResult | None = None  # the thin-copier test (None: older results, or not asked)


def unique_matches(
    train: np.ndarray, holdout: np.ndarray, independent: np.ndarray, synth: np.ndarray, sizes: list[int]
) -> UniqueMatches:
    """Training records unique in training ∪ holdout that the synthetic records (and the independent sample) reproduce,
    against the holdout's: the +1-smoothed rate ratio and a one-sided binomial p-value."""
    tk, hk = record_keys(train, sizes), record_keys(holdout, sizes)
    uk, cnt = np.unique(np.concatenate([tk, hk]), return_counts=True)
    once = uk[cnt == 1]
    ut, uh = np.intersect1d(once, tk), np.intersect1d(once, hk)
    sk, bk = np.unique(record_keys(synth, sizes)), np.unique(record_keys(independent, sizes))
    s_t, s_h = int(np.isin(ut, sk).sum()), int(np.isin(uh, sk).sum())
    b_t = int(np.isin(ut, bk).sum())
    ratio = ((s_t + 1) / max(len(ut), 1)) / ((s_h + 1) / max(len(uh), 1))
    from scipy import stats  # here: see sdgov.audits.privacy.attribute.p_correct

    p = (
        float(stats.binomtest(s_t, s_t + s_h, len(ut) / (len(ut) + len(uh)), alternative="greater").pvalue)
        if s_t + s_h > 0 and len(ut) + len(uh) > 0
        else 1.0
    )
    return UniqueMatches(
        real_unique_train=len(ut),
        real_unique_holdout=len(uh),
        synthetic=s_t,
        independent=b_t,
        synthetic_holdout=s_h,
        rate_ratio=float(ratio),
        p_value=p,
    )


def dcr(train: np.ndarray, queries: np.ndarray, block: int = 64) -> np.ndarray:
    """Hamming distance from every query to its nearest training record (computed on unique records)."""
    tu = np.unique(train, axis=0).astype(np.int16)
    qu, inv = np.unique(queries, axis=0, return_inverse=True)
    qu = qu.astype(np.int16)
    best = np.empty(len(qu), dtype=np.int64)
    for i in range(0, len(qu), block):
        q = qu[i : i + block]
        best[i : i + block] = (q[:, None, :] != tu[None, :, :]).sum(axis=2).min(axis=1)
    return best[np.asarray(inv).ravel()]


def _dcr_summary(dist: np.ndarray, d: int) -> DCR:
    return DCR(
        histogram=np.bincount(dist, minlength=d + 1).tolist(),
        share_zero=float((dist == 0).mean()),
        median=float(np.median(dist)),
        sample=len(dist),
    )


def small_cells(
    synth: np.ndarray, attributes: list[str], sizes: list[int], cliques: list[tuple[str, ...]], threshold: int
) -> SmallCells:
    """Per Φ marginal, the cells that hold at least one but fewer than ``threshold`` synthetic records, and their
    total."""
    by = {}
    for c in cliques:
        cols = [attributes.index(a) for a in c]
        counts = np.bincount(record_keys(synth[:, cols], [sizes[j] for j in cols]))
        by[" × ".join(c)] = int(((counts > 0) & (counts < threshold)).sum())
    return SmallCells(threshold=threshold, total=sum(by.values()), by_marginal=by)


def disclosure_checks(
    train: np.ndarray,
    holdout: np.ndarray,
    independent: np.ndarray,
    synth: np.ndarray,
    attributes: list[str],
    sizes: list[int],
    cliques: list[tuple[str, ...]] | None,
    threshold: int,
    dcr_sample: int,
    seed: int,
) -> DisclosureResult:
    """The disclosure measures against the training records: exact matches (and the independent sample's), unique
    matches, distance to the closest record of at most ``dcr_sample`` synthetic and holdout records (seeded), small
    cells when Φ is given."""
    rng = np.random.default_rng(seed)
    d = len(sizes)
    tkeys = np.unique(record_keys(train, sizes))
    s_idx = rng.choice(len(synth), size=min(dcr_sample, len(synth)), replace=False)
    h_idx = rng.choice(len(holdout), size=min(dcr_sample, len(holdout)), replace=False)
    return DisclosureResult(
        rows=len(train),
        exact_matches=int(np.isin(record_keys(synth, sizes), tkeys).sum()),
        exact_matches_independent=int(np.isin(record_keys(independent, sizes), tkeys).sum()),
        unique=unique_matches(train, holdout, independent, synth, sizes),
        dcr_synthetic=_dcr_summary(dcr(train, synth[s_idx]), d),
        dcr_holdout=_dcr_summary(dcr(train, holdout[h_idx]), d),
        small_cells=small_cells(synth, attributes, sizes, cliques, threshold) if cliques else None,
    )


# ------------------------------------------------------------------------------------------------ verbatim copies


def verbatim_round(
    train: np.ndarray,
    holdout: np.ndarray,
    synth: np.ndarray,
    sizes: list[int],
    phi_axes: list[tuple[int, ...]],
    flag_level: float,
) -> VerbatimRound:
    """One round of the verbatim test: the candidates (cells holding exactly one record of ``train`` ∪ ``holdout``)
    of each half, and how many of each the output ``synth`` (all its samples together) over-represents."""
    from scipy import stats  # here: see sdgov.audits.privacy.attribute.p_correct

    from sdgov.audits.privacy.beyond_phi import MAX_CELLS, SCORE_SWEEPS, phi_projection

    tk, hk = record_keys(train, sizes), record_keys(holdout, sizes)
    keys, cnt = np.unique(np.concatenate([tk, hk]), return_counts=True)
    once = keys[cnt == 1]
    ut, uh = np.intersect1d(once, tk), np.intersect1d(once, hk)
    cand = np.concatenate([ut, uh])
    sk = np.sort(record_keys(synth, sizes))
    observed = np.searchsorted(sk, cand, side="right") - np.searchsorted(sk, cand, side="left")
    if math.prod(sizes) <= MAX_CELLS:
        joint = np.bincount(sk, minlength=math.prod(sizes)).astype(np.float64).reshape(sizes)
        expected = phi_projection(joint, phi_axes, SCORE_SWEEPS).ravel()[cand] * len(synth)
    else:  # a record of a joint this large is reproduced by chance about never: e = 0, any copy stands out
        expected = np.zeros(len(cand))
    flagged = (observed > 0) & (stats.poisson.sf(observed - 1, expected) <= flag_level)
    return VerbatimRound(
        unique_train=len(ut),
        unique_holdout=len(uh),
        flagged_train=int(flagged[: len(ut)].sum()),
        flagged_holdout=int(flagged[len(ut) :].sum()),
    )


def stratified_hypergeom_sf(rounds: list[VerbatimRound]) -> float:
    """P[Σ_r X_r ≥ Σ_r flagged_train_r] for independent X_r ~ Hypergeometric(population |U_T| + |U_H|, successes
    = the flagged candidates, draws = |U_T|) of each round: the exact conditional test that the flagged candidates
    fall on the training half no more often than a random split puts them there."""
    from scipy import stats

    pmf = np.ones(1)
    for r in rounds:
        total, flagged, draws = r.unique_train + r.unique_holdout, r.flagged_train + r.flagged_holdout, r.unique_train
        support = np.arange(min(flagged, draws) + 1)
        pmf = np.convolve(pmf, stats.hypergeom.pmf(support, total, flagged, draws))
    observed = sum(r.flagged_train for r in rounds)
    return float(min(1.0, max(0.0, pmf[observed:].sum())))


VERBATIM = "verbatim"  # the planner's key of a verbatim-copy round's fit: (VERBATIM, round)


def verbatim_rows(train_rows: int, reference: np.ndarray) -> int:
    """n, the records of each half of a verbatim-copy round: ``train_rows``, at most half the reference."""
    return min(int(train_rows), len(reference) // 2)


def verbatim_round_of_sets(
    sets: list[np.ndarray],
    *,
    train: np.ndarray,
    holdout: np.ndarray,
    sizes: list[int],
    phi_axes: list[tuple[int, ...]],
    flag_level: float,
) -> VerbatimRound:
    """:func:`verbatim_round` of one fit's sample sets (all together): the reducer of a round's request, run where
    the fit ran, so four counts travel instead of the samples."""
    return verbatim_round(train, holdout, np.concatenate(sets), sizes, phi_axes, flag_level)


def verbatim_requests(
    ref: GeneratorRef, reference: np.ndarray, rounds: int, train_rows: int, samples: int, seed: int, flag_level: float
) -> list[FitRequest]:
    """One fit per round, key ``(VERBATIM, r)``: 2n reference records drawn at random (n = ``train_rows``, at most
    half of them; each round its own draw from ``seed_of(seed, 70)``, so rounds may share records), the first n the
    training half (fit seed ``seed_of(seed, 71, r)``), the rest held out; ``samples`` sets of n rows (seeds
    ``seed_of(seed, 72, r, j)``), reduced to the round's counts where they were drawn."""
    reference = np.asarray(reference, dtype=np.int64)
    attrs = ref.attributes
    sizes = [ref.domain[a] for a in attrs]
    phi_axes = [tuple(sorted(attrs.index(a) for a in c)) for c in ref.cliques]
    n = verbatim_rows(train_rows, reference)
    rng = np.random.default_rng(seed_of(seed, 70))
    out = []
    for r in range(rounds):
        pick = rng.choice(len(reference), size=2 * n, replace=False)
        train, holdout = reference[pick[:n]], reference[pick[n:]]
        reduce = partial(
            verbatim_round_of_sets, train=train, holdout=holdout, sizes=sizes, phi_axes=phi_axes, flag_level=flag_level
        )
        seeds = tuple(seed_of(seed, 72, r, j) for j in range(samples))
        out.append(FitRequest((VERBATIM, r), train, seed_of(seed, 71, r), n, seeds, reduce))
    return out


def verbatim_of(
    found: list[VerbatimRound], ref: GeneratorRef, train_rows: int, samples: int, flag_level: float
) -> VerbatimResult:
    """The test's result from its rounds' counts: the exact p-value of their stratified hypergeometric sum."""
    from sdgov.audits.privacy.beyond_phi import MAX_CELLS

    sizes = [ref.domain[a] for a in ref.attributes]
    return VerbatimResult(
        rounds=len(found),
        train_rows=train_rows,
        samples=samples,
        flag_level=flag_level,
        unique_train=sum(r.unique_train for r in found),
        unique_holdout=sum(r.unique_holdout for r in found),
        flagged_train=sum(r.flagged_train for r in found),
        flagged_holdout=sum(r.flagged_holdout for r in found),
        p_value=stratified_hypergeom_sf(found),
        model="the output's own Φ-only model" if math.prod(sizes) <= MAX_CELLS else "none (joint too large): e = 0",
        per_round=found,
    )


def verbatim_audit(
    ref: GeneratorRef,
    reference: np.ndarray,
    rounds: int,
    train_rows: int,
    samples: int,
    seed: int,
    flag_level: float = 0.01,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> VerbatimResult:
    """The verbatim-copy test (module docstring): ``rounds`` fits, each on n = ``train_rows`` reference records
    (at most half of them) with as many held out, ``samples`` sets of n rows from each — on fits of its own (the
    audit plans them with the record checks' fit: :class:`Disclosure`)."""
    requests = verbatim_requests(ref, reference, rounds, train_rows, samples, seed, flag_level)
    found = fit_all(ref, requests, executor or SerialExecutor(), progress, "verbatim-fit")
    return verbatim_of(found, ref, verbatim_rows(train_rows, reference), samples, flag_level)


def verbatim_check(result: VerbatimResult, policy: RiskPolicy) -> PolicyCheck:
    """The test's exact p-value under ``policy.verbatim``: fail at ``fail_alpha``, warn at ``warn_alpha``."""
    vq, v = policy.verbatim, result
    return PolicyCheck(
        name="verbatim copies of training records",
        level=level_of(v.p_value <= vq.fail_alpha, v.p_value <= vq.warn_alpha),
        detail=f"p = {v.p_value:.2g} (exact, training vs never-seen holdout): the output over-represents "
        f"{v.flagged_train} of {v.unique_train} training records vs {v.flagged_holdout} of {v.unique_holdout} "
        f"holdout records, each unique in its round ({v.rounds} fits on {v.train_rows:,} records, {v.samples} "
        f"synthetic sets each; over-represented: P[Poisson(e) ≥ count] ≤ {v.flag_level:g}, e from {v.model})",
    )


# ------------------------------------------------------------------------------------------------ the audit's part

RECORD_CHECKS = "record-checks"  # the planner's key of the record checks' fit


def record_check_parts(reference: np.ndarray, rows: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three disjoint parts of n reference records (training, holdout, independent sample): n = ``rows``, by
    default a third of the reference, at most 25,000."""
    from sdgov.audits.generator_protocol import AuditError

    n = rows or min(len(reference) // 3, 25_000)
    if 3 * n > len(reference):
        raise AuditError(
            f"disclosure_rows = {n}: three disjoint parts of that size do not fit in the {len(reference)} reference "
            "records",
            "privacy audit",
            "lower disclosure_rows",
        )
    train, holdout, independent = (reference[i * n : (i + 1) * n] for i in range(3))
    return train, holdout, independent


class Disclosure(PrivacyPart):
    """The record checks (``--parts disclosure``): one fit on a training part, its output against a real holdout and
    an independent real sample; and the verbatim-copy test, ``verbatim_rounds`` fits of its own (none when 0)."""

    name: ClassVar[str] = "disclosure"
    result_field: ClassVar[str] = "disclosure"

    def fit_keys(self, settings: RiskSettings, shape: AuditShape) -> list[tuple[Any, ...]]:
        """Its one fit, on the training part, then one per verbatim-copy round."""
        return [(RECORD_CHECKS,)] + [(VERBATIM, r) for r in range(settings.verbatim_rounds)]

    def requests(self, frame: AuditFrame) -> list[FitRequest]:
        """The training part, one synthetic set of its size; each verbatim-copy round's fit
        (:func:`verbatim_requests`, at the audit's seed ``seed_of(seed, 10)``)."""
        st = frame.settings
        train, _, _ = record_check_parts(frame.reference, st.disclosure_rows)
        checks = FitRequest((RECORD_CHECKS,), train, seed_of(st.seed, 4), len(train), (seed_of(st.seed, 5),))
        return [checks] + verbatim_requests(
            frame.ref,
            frame.reference,
            st.verbatim_rounds,
            st.train_rows,
            st.verbatim_samples,
            seed_of(st.seed, 10),
            st.verbatim_flag_level,
        )

    def run(self, frame: AuditFrame, fitted: list[Any]) -> DisclosureResult:
        """:func:`disclosure_checks` of the output against the three parts, with the verbatim-copy test's result
        from its rounds' counts (None when ``verbatim_rounds`` is 0)."""
        st = frame.settings
        train, holdout, independent = record_check_parts(frame.reference, st.disclosure_rows)
        rounds = fitted[1:]
        verbatim = (
            verbatim_of(
                rounds,
                frame.ref,
                verbatim_rows(st.train_rows, frame.reference),
                st.verbatim_samples,
                st.verbatim_flag_level,
            )
            if rounds
            else None
        )
        found = disclosure_checks(
            train,
            holdout,
            independent,
            fitted[0][0],
            frame.attributes,
            frame.sizes,
            [tuple(c) for c in frame.ref.cliques],
            frame.policy.small_cells.threshold,
            st.dcr_sample,
            seed_of(st.seed, 6),
        )
        return found.model_copy(update={"verbatim": verbatim})

    def checks(self, result: DisclosureResult, frame: AuditFrame) -> list[PolicyCheck]:
        """Exact matches under ``policy.exact_matches``, verbatim copies under ``policy.verbatim``, distance to closest
        record under ``policy.dcr``, small cells under ``policy.small_cells``."""
        policy, u = frame.policy, result.unique
        xq = policy.exact_matches
        big = u.synthetic >= xq.min_count
        # calibrated against the never-seen holdout (same generator, same chance of a phantom match), not against a
        # raw count: the independent sample is shown for context only
        out = [
            PolicyCheck(
                name="exact matches of real-unique records",
                level=level_of(
                    big and u.p_value < xq.alpha and u.rate_ratio > xq.fail_ratio,
                    big and u.p_value < xq.warn_alpha and u.rate_ratio > xq.warn_ratio,
                ),
                detail=f"{u.synthetic} of {u.real_unique_train} real-unique training records reproduced exactly vs "
                f"{u.independent} by a same-size independent real sample; reproduced real-unique holdout records "
                f"(never seen): {u.synthetic_holdout} of {u.real_unique_holdout} — rate ratio {u.rate_ratio:.2f}, "
                f"p = {u.p_value:.2g}; {result.exact_matches} of {result.rows} synthetic records equal a "
                f"training record (independent sample: {result.exact_matches_independent})",
            )
        ]
        if result.verbatim is not None:
            out.append(verbatim_check(result.verbatim, policy))
        ds, dh = result.dcr_synthetic, result.dcr_holdout
        zs, zh = ds.share_zero * ds.sample, dh.share_zero * dh.sample  # records at distance 0 in each sample
        ratio = ((zs + 1) / ds.sample) / ((zh + 1) / dh.sample)  # +1: no division by an empty baseline
        many = zs >= xq.min_count and two_proportion_p(zs, ds.sample, zh, dh.sample) < policy.dcr.alpha
        out.append(
            PolicyCheck(
                name="distance to closest record",
                level=level_of(
                    many and ratio > policy.dcr.fail_zero_ratio, many and ratio > policy.dcr.warn_zero_ratio
                ),
                detail=f"share at distance 0: synthetic {ds.share_zero:.3f} vs real holdout {dh.share_zero:.3f}; "
                f"median {ds.median:g} vs {dh.median:g}",
            )
        )
        if result.small_cells is not None:
            sc = result.small_cells
            out.append(
                PolicyCheck(
                    name="small synthetic cells",
                    level=level_of(
                        False, policy.small_cells.warn_above is not None and sc.total > policy.small_cells.warn_above
                    ),
                    detail=f"{sc.total} cell(s) of the released tables hold 1–{sc.threshold - 1} synthetic records",
                )
            )
        return out
