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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sdgov.audits.privacy.base import record_keys, seed_of
from sdgov.audits.privacy.part import FitRequest, PrivacyPart
from sdgov.audits.privacy.policy import PolicyCheck, level_of, two_proportion_p
from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.agreement.sections.privacy_risk import RiskSettings
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


class DisclosureResult(Frozen):
    rows: int  # n: training records = synthetic records = holdout = independent sample
    exact_matches: int  # synthetic records equal to some training record
    exact_matches_independent: int  # the same for the independent sample
    unique: UniqueMatches
    dcr_synthetic: DCR
    dcr_holdout: DCR
    small_cells: SmallCells | None


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
    an independent real sample."""

    name: ClassVar[str] = "disclosure"
    result_field: ClassVar[str] = "disclosure"

    def fit_keys(self, settings: RiskSettings, shape: AuditShape) -> list[tuple[Any, ...]]:
        """Its one fit, on the training part."""
        return [(RECORD_CHECKS,)]

    def requests(self, frame: AuditFrame) -> list[FitRequest]:
        """The training part, one synthetic set of its size."""
        st = frame.settings
        train, _, _ = record_check_parts(frame.reference, st.disclosure_rows)
        return [FitRequest((RECORD_CHECKS,), train, seed_of(st.seed, 4), len(train), (seed_of(st.seed, 5),))]

    def run(self, frame: AuditFrame, fitted: list[Any]) -> DisclosureResult:
        """:func:`disclosure_checks` of the output against the three parts."""
        st = frame.settings
        train, holdout, independent = record_check_parts(frame.reference, st.disclosure_rows)
        return disclosure_checks(
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

    def checks(self, result: DisclosureResult, frame: AuditFrame) -> list[PolicyCheck]:
        """Exact matches under ``policy.exact_matches``, distance to closest record under ``policy.dcr``, small cells
        under ``policy.small_cells``."""
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
