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
from typing import Any

import numpy as np

from sdgov.audits.privacy.base import GeneratorRef, Progress, record_keys, seed_of
from sdgov.base.executor import Executor, executor_for
from sdgov.base.model import Frozen


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

    from sdgov.audits.privacy.beyond_phi import MAX_CELLS, phi_projection

    tk, hk = record_keys(train, sizes), record_keys(holdout, sizes)
    keys, cnt = np.unique(np.concatenate([tk, hk]), return_counts=True)
    once = keys[cnt == 1]
    ut, uh = np.intersect1d(once, tk), np.intersect1d(once, hk)
    cand = np.concatenate([ut, uh])
    sk = np.sort(record_keys(synth, sizes))
    observed = np.searchsorted(sk, cand, side="right") - np.searchsorted(sk, cand, side="left")
    if math.prod(sizes) <= MAX_CELLS:
        joint = np.bincount(sk, minlength=math.prod(sizes)).astype(np.float64).reshape(sizes)
        expected = phi_projection(joint, phi_axes).ravel()[cand] * len(synth)
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


def _verbatim_job(ref: GeneratorRef, train: np.ndarray, fit_seed: int, n: int, seeds: list[int]) -> np.ndarray:
    return np.concatenate(ref.fit_sample(train, fit_seed, n, seeds))


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
    (at most half of them) with as many held out, ``samples`` sets of n rows from each."""
    reference = np.asarray(reference, dtype=np.int64)
    attrs = ref.attributes
    sizes = [ref.domain[a] for a in attrs]
    phi_axes = [tuple(sorted(attrs.index(a) for a in c)) for c in ref.cliques]
    n = min(int(train_rows), len(reference) // 2)
    rng = np.random.default_rng(seed_of(seed, 70))
    halves: list[tuple[np.ndarray, np.ndarray]] = []
    jobs: list[tuple[Any, ...]] = []
    for r in range(rounds):  # each round its own random split (rounds may share records: each split is independent)
        pick = rng.choice(len(reference), size=2 * n, replace=False)
        halves.append((reference[pick[:n]], reference[pick[n:]]))
        jobs.append((ref, halves[-1][0], seed_of(seed, 71, r), n, [seed_of(seed, 72, r, j) for j in range(samples)]))
    found = []
    for (train, holdout), synth in zip(halves, (executor or executor_for(1)).map(_verbatim_job, jobs, "verbatim-fit")):
        found.append(verbatim_round(train, holdout, synth, sizes, phi_axes, flag_level))
        if progress:
            progress(len(found), rounds, "verbatim-copy fits")
    from sdgov.audits.privacy.beyond_phi import MAX_CELLS

    return VerbatimResult(
        rounds=rounds,
        train_rows=n,
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
