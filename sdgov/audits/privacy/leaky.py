"""Deliberately leaky generators — positive controls for the privacy-risk audit (tests, benchmark).

All speak :mod:`sdgov.audits.generator_protocol` and wrap an honest base generator (``base``: a registered name,
default the pipeline's Private-PGM ``honest_pgm``; its parameters, e.g. ``sigma``, pass through). Registered names
(:mod:`sdgov.agreement.code_names`):

``memoriser``                                  samples from the base, then overwrites ``copy_fraction`` (default 2 %)
                                     of the output rows with training rows drawn uniformly with replacement, copied
                                     verbatim (``memoriser_1pct`` / ``memoriser_2pct``: the 1 % and 2 % controls
                                     of issue 13). A fraction f of every sample, whatever its size, is copied.
``copier``                                     the memoriser at ``copy_fraction`` 1: the output is a resample of the
                                     training rows.
``exact_marginal``                             the base generator on the exact Φ marginals (σ forced to 0 whatever
                                     the parameters say): the agreed statistics, released without noise.
``category_leak``                              learns the category list of every attribute from the training data (the
                                     metadata leak Stadler et al. 2022 found in published DP generators): output
                                     values outside the observed categories are redrawn from the observed ones, and
                                     every observed category is shown at least once, as a tool that publishes its
                                     learned category list does. A category that only the target holds thus
                                     appears in the output exactly when the target is in the training data.
``qi_copier``                                  the base's output with every training record that is unique on its
                                     ``quasi_identifiers`` (default: the first three attributes of the domain, in
                                     the schema's order) copied verbatim over as many output rows, one row each, in
                                     every sample (issue 29). On the census apps the default names the
                                     demographics a linker would hold: App 1's Sex, Economic Activity and Occupation
                                     (all three: its records are unique on them), App 2's Family Composition,
                                     Country of Birth and Ethnic Group (the fourth, the social grade, is what the
                                     analyst models). It copies only the few records that stand out, the ones a
                                     population-uniqueness rule (the classic disclosure-control test) protects, so a
                                     record's presence in the output flips with its membership.
``thin_copier``                                a *thin* QI copier (issue 37 item 5): its quasi-identifiers drawn at
                                     random (``qi_seed``) among the attribute sets of two or more attributes other
                                     than the QI copier's default whose cross-classification has at least
                                     ``min_cells`` cells (30: fine enough that a 1,000-record sample holds records
                                     unique on it — App 1: Economic Activity × Occupation; App 2: seven sets), or
                                     given (``quasi_identifiers``); in each sample it copies at most ``max_share``
                                     (1 %) of the rows, the training records unique on them (a random subset of them
                                     when there are more). On Apps 1–2 it copies 0.2–1 % of its rows.

None is (ε, δ)-DP for any finite ε at the claimed δ. The audit must fail the memorisers (copy share beyond Φ,
:mod:`sdgov.audits.privacy.memorisation`), the copier (every check) and refute the exact-marginal generator's claim
(ε_lower above the claimed ε, :mod:`sdgov.audits.privacy.one_run`) and the QI copier's (ε_lower from the one-run
canaries' record guesser; the shadow models' score bound is reported beside it, :mod:`sdgov.audits.privacy.run`).
The category leak reveals something only about records holding a category no other training record holds (see
docs/privacy_risk.md).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from sdgov.audits.generator_protocol import (
    AuditError,
    AuditGenerator,
    expand_rows,
    fit_generator,
    load_generator,
    make_generator,
)
from sdgov.data.schema import Clique

BASE = "honest_pgm"


class _Wrapped:
    def __init__(self, cliques: list[Clique], domain: dict[str, int], base: str = BASE, **params: Any) -> None:
        self.domain = dict(domain)
        self.attributes = list(domain)
        self.base: AuditGenerator = make_generator(load_generator(base, "base"), cliques, domain, params, base)
        self.rows: pd.DataFrame | None = None

    def fit(self, records: pd.DataFrame, weights: np.ndarray | None = None, *, seed: int | None = None) -> None:
        fit_generator(
            self.base,
            records,
            weights if weights is not None else np.ones(len(records), np.int64),
            0 if seed is None else seed,
        )
        self.rows = expand_rows(records[self.attributes], weights)


class Memoriser(_Wrapped):
    """``copy_fraction`` of the output rows are training rows (uniform, with replacement), the rest the base's."""

    def __init__(self, cliques: list[Clique], domain: dict[str, int], copy_fraction: float = 0.02, **kw: Any) -> None:
        if not 0 < float(copy_fraction) <= 1:
            raise AuditError(f"copy_fraction {copy_fraction} is not in (0, 1]", "memoriser")
        super().__init__(cliques, domain, **kw)
        self.copy_fraction = float(copy_fraction)

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        """The base's ``n`` records with ``copy_fraction`` of them (rounded up, at least one) replaced by training rows
        copied verbatim; the same seed gives the same rows."""
        assert self.rows is not None, "fit() first"
        rng = np.random.default_rng([int(seed), 7])
        c = min(max(1, math.ceil(self.copy_fraction * n)), n)
        out = (
            np.empty((n, len(self.attributes)), dtype=np.int64)
            if c == n
            else np.array(self.base.sample(n, seed)[self.attributes].to_numpy(dtype=np.int64), copy=True)
        )
        where = rng.choice(n, size=c, replace=False)
        out[where] = self.rows.to_numpy(dtype=np.int64)[rng.integers(0, len(self.rows), size=c)]
        return pd.DataFrame(out, columns=self.attributes)


class CategoryLeak(_Wrapped):
    def sample(self, n: int, seed: int) -> pd.DataFrame:
        """The base's ``n`` records with every value outside the observed categories redrawn from them and every
        observed category shown at least once."""
        out = pd.DataFrame(self.base.sample(n, seed)[self.attributes].to_numpy(dtype=np.int64), columns=self.attributes)
        assert self.rows is not None, "fit() first"
        rng = np.random.default_rng([int(seed), 8])
        for a in self.attributes:
            observed = np.unique(self.rows[a].to_numpy())
            col = out[a].to_numpy().copy()
            bad = ~np.isin(col, observed)
            col[bad] = rng.choice(observed, size=int(bad.sum()))
            missing = np.setdiff1d(observed, col)
            if len(missing):
                col[rng.choice(n, size=len(missing), replace=False)] = missing
            out[a] = col
        return out


class QICopier(_Wrapped):
    """The base's output with every training record unique on ``quasi_identifiers`` copied over one output row."""

    def __init__(
        self,
        cliques: list[Clique],
        domain: dict[str, int],
        quasi_identifiers: list[str] | tuple[str, ...] | None = None,
        **kw: Any,
    ) -> None:
        qi = list(quasi_identifiers) if quasi_identifiers is not None else list(domain)[:3]
        bad = [a for a in qi if a not in domain]
        if not qi or bad:
            raise AuditError(
                f"quasi_identifiers {qi} name no attribute or ones outside the domain {bad}",
                "qi_copier",
                f"choose from {list(domain)}",
            )
        super().__init__(cliques, domain, **kw)
        self.quasi_identifiers = qi
        self.unique: np.ndarray | None = None

    def fit(self, records: pd.DataFrame, weights: np.ndarray | None = None, *, seed: int | None = None) -> None:
        """The base's fit, then the training records whose quasi-identifier combination no other record holds."""
        super().fit(records, weights, seed=seed)
        assert self.rows is not None
        rows = self.rows.to_numpy(dtype=np.int64)
        qi = [self.attributes.index(a) for a in self.quasi_identifiers]
        _, inv, cnt = np.unique(rows[:, qi], axis=0, return_inverse=True, return_counts=True)
        self.unique = rows[cnt[inv.ravel()] == 1]

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        """The base's ``n`` records with one row per QI-unique training record overwritten by it (all of them, or
        ``n`` of them drawn without replacement when there are more); the same seed gives the same rows."""
        assert self.unique is not None, "fit() first"
        rng = np.random.default_rng([int(seed), 9])
        out = np.array(self.base.sample(n, seed)[self.attributes].to_numpy(dtype=np.int64), copy=True)
        copies = self.unique if len(self.unique) <= n else self.unique[rng.choice(len(self.unique), n, replace=False)]
        out[rng.choice(n, size=len(copies), replace=False)] = copies
        return pd.DataFrame(out, columns=self.attributes)


class ThinCopier(QICopier):
    """The base's output with at most ``max_share`` of every sample's rows overwritten by training records unique on
    quasi-identifiers drawn at random (:func:`thin_qis`) unless given."""

    def __init__(
        self,
        cliques: list[Clique],
        domain: dict[str, int],
        quasi_identifiers: list[str] | tuple[str, ...] | None = None,
        qi_seed: int = 0,
        max_share: float = 0.01,
        min_cells: int = 30,
        **kw: Any,
    ) -> None:
        if not 0 < float(max_share) <= 1:
            raise AuditError(f"max_share {max_share} is not in (0, 1]", "thin_copier", "give the copied rows' share")
        qi = list(quasi_identifiers) if quasi_identifiers is not None else thin_qis(domain, int(qi_seed), min_cells)
        super().__init__(cliques, domain, quasi_identifiers=qi, **kw)
        self.max_share = float(max_share)

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        """The base's ``n`` records with ⌊max_share · n⌋ of them (at most) overwritten by QI-unique training records,
        a random subset of them for every sample; the same seed gives the same rows."""
        assert self.unique is not None, "fit() first"
        rng = np.random.default_rng([int(seed), 10])
        out = np.array(self.base.sample(n, seed)[self.attributes].to_numpy(dtype=np.int64), copy=True)
        c = min(len(self.unique), int(math.floor(self.max_share * n)))
        if c:
            out[rng.choice(n, size=c, replace=False)] = self.unique[rng.choice(len(self.unique), c, replace=False)]
        return pd.DataFrame(out, columns=self.attributes)


def thin_qis(domain: dict[str, int], seed: int, min_cells: int = 30) -> list[str]:
    """Quasi-identifiers drawn with ``seed`` from the attribute sets of 2 or more attributes, other than the QI
    copier's default (the first three), with at least ``min_cells`` cells; the finest other set when none has."""
    attrs = list(domain)
    sets = [
        list(s)
        for k in range(2, len(attrs) + 1)
        for s in itertools.combinations(attrs, k)
        if list(s) != attrs[:3] and math.prod(domain[a] for a in s) >= min_cells
    ]
    if not sets:
        others = [list(s) for k in range(1, len(attrs) + 1) for s in itertools.combinations(attrs, k)]
        others = [s for s in others if s != attrs[:3]] or [attrs]
        return max(others, key=lambda s: math.prod(domain[a] for a in s))
    return sets[int(np.random.default_rng([seed, 37]).integers(len(sets)))]


def memoriser(cliques: list[Clique], domain: dict[str, int], **params: Any) -> Memoriser:
    """The memoriser over the base generator, copying ``copy_fraction`` (default 2 %) of its output."""
    return Memoriser(cliques, domain, **params)


def memoriser_1pct(cliques: list[Clique], domain: dict[str, int], **params: Any) -> Memoriser:
    """The memoriser copying 1 % of its output (a ``copy_fraction`` passed is overridden)."""
    return Memoriser(cliques, domain, **{**params, "copy_fraction": 0.01})


def memoriser_2pct(cliques: list[Clique], domain: dict[str, int], **params: Any) -> Memoriser:
    """The memoriser copying 2 % of its output (a ``copy_fraction`` passed is overridden)."""
    return Memoriser(cliques, domain, **{**params, "copy_fraction": 0.02})


def copier(cliques: list[Clique], domain: dict[str, int], **params: Any) -> Memoriser:
    """The memoriser at ``copy_fraction`` 1 unless another is given: every output row a training row."""
    return Memoriser(cliques, domain, **{"copy_fraction": 1.0, **params})


def exact_marginal(cliques: list[Clique], domain: dict[str, int], base: str = BASE, **params: Any) -> AuditGenerator:
    """The base generator on the exact Φ marginals: ``sigma`` is forced to 0 (no noise), whatever is passed."""
    return make_generator(load_generator(base, "base"), cliques, domain, {**params, "sigma": 0.0}, base)


def qi_copier(cliques: list[Clique], domain: dict[str, int], **params: Any) -> QICopier:
    """The base generator plus every training record unique on ``quasi_identifiers``, copied (:class:`QICopier`)."""
    return QICopier(cliques, domain, **params)


def thin_copier(cliques: list[Clique], domain: dict[str, int], **params: Any) -> ThinCopier:
    """The thin copier over the base generator: ≤ 1 % of each sample, records unique on random QIs."""
    return ThinCopier(cliques, domain, **params)


def category_leak(cliques: list[Clique], domain: dict[str, int], **params: Any) -> CategoryLeak:
    """The base generator showing the category lists it learned from the training data (:class:`CategoryLeak`)."""
    return CategoryLeak(cliques, domain, **params)
