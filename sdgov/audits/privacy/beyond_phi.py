r"""Interactions beyond Φ: does the generator's output carry structure that its Φ marginals do not imply?

Why (issue 29 item 3). A generator that draws a share of its rows from a model with one extra non-Φ interaction
(a *blend*) copies no record, so the record-level checks — memorisation, membership, exact matches — barely
react (App 2, 5 % blend: 2 of 10 seeds). What it does release is an interaction the agreement never allowed:
the tables outside Φ of its output differ from what its own Φ tables imply. This check looks for exactly that,
with no reference to the training records.

Design (the joint over the audited attributes is held in memory, up to ``max_cells`` cells; Apps 1–2: 200 and 630,
the demo 28,800, App 3 1.56M):

1. One fit on n reference records and m records sampled from it (m ≫ n: sampling from a fitted model is
   post-processing, so an honest release loses nothing and every interaction it carries shows m times more
   sharply), drawn as S independent sets of m/S records (S = 20: each set one sampler call with its own seed). The
   fit is sample world 0 of :mod:`sdgov.audits.privacy.worlds`, the memorisation check's first world when both
   train on the same number of records (the defaults): any fit on n reference records answers "what does this
   generator release from n records?", and each check reads its own sample sets of it, so neither's calibration
   depends on the other (each is conditional on the fit; the verdict's union bound needs no independence between
   checks).
2. The Φ-only model of the pooled output: the maximum-entropy distribution p̂ with its own Φ marginals (IPF from
   the uniform joint on the exact counts, run to convergence once). For a generator that reads only noisy Φ
   marginals (ψ) and samples from a model whose potentials live on Φ (the PGM, IPF), the output *is* a sample of a
   distribution in that family, so p̂ is its maximum-likelihood estimate: the same noisy ψ, seen through the sample.
3. Every set's non-Φ residual (:func:`non_phi_residual`: the set less its Φ-only model, linearised at p̂) on every
   table t outside Φ (each set of 2 or 3 attributes not inside a Φ marginal, and the full joint when it has more
   than 3 attributes and m ≥ 5 records a cell on average — App 3's joint, 1.56M cells for 1M records, is left out:
   a statistic over mostly empty cells measures nothing). The residuals add up to the pooled output's. For an
   honest generator each has mean zero — its model is in the Φ family — and the sets are independent given the fit;
   a non-Φ interaction in the model puts the same shift in every set.
4. Calibration by sign flips (the decomposability audit's phase-1 test, :mod:`sdgov.audits.decomposability`): per
   table, Pearson's statistic of the summed residuals Q_t = Σ_c (Σ_s r_sc)² / (m p̂_c), standardised by its exact
   mean and spread over the 2^S sign patterns ε (Q_t(ε) = ε'G_tε, G_t the sets' Gram matrix); the statistic is the
   largest standardised Q_t (the leak may sit in any one table), and p = (1 + #{flips' max ≥ observed max}) /
   (B + 1) over B random flips: a Monte-Carlo randomisation test, exact to the symmetry of the residuals. A shift
   common to the sets adds up under the identity and cancels under a random flip; noise does neither. (A generator
   whose ``sample`` ignores its seed returns one set S times: its own sampling noise then looks like a common shift
   and fails — the protocol asks every seed for a fresh draw, as a release's reader would get.)

   Why flips and not a parametric bootstrap (the first design, 2026-11-26 to issue 37's third pass): B multinomial
   samples of m records from p̂ draw the output as an i.i.d. sampler would. Since issue 40 the default sampler rounds
   (each cell of a chunk within one record of the model's count), so an honest output lies far closer to p̂ than a
   multinomial sample does and the bootstrap's p-value was 1.0 on every honest seed of Apps 1–3 — and on 9 of 10
   seeds of App 2's 2 % unseeded blend: a blind spot. The flips read the null spread from the output's own sets, so
   the test holds for any sampler whose sets are independent draws of one model (i.i.d., rounded, or a plug-in's),
   and needs no B projections: App 3's check costs its one IPF fit and S residuals.

Everything is seeded (training draw, fit, sample sets, flips) and returns the same p-value for the same inputs and
seed. Tables are plain numpy sums; the only BLAS call is the Fisher information's eigendecomposition (and its
product with each set's margins), whose rounding differs between kernels far below any gap between statistics.

Like the memorisation check it tests the
agreement — only Φ leaves the data — not DP: a DP generator that measures other statistics, with noise, is caught
too, correctly. Its power: the blend controls of :mod:`sdgov.audits.generators` in docs/privacy_risk.md.
"""

from __future__ import annotations

import itertools
import math
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sdgov.audits.privacy.base import GeneratorRef, record_keys, seed_of
from sdgov.audits.privacy.part import FitRequest, PrivacyPart
from sdgov.audits.privacy.planner import fit_all
from sdgov.audits.privacy.policy import PolicyCheck, level_of
from sdgov.audits.privacy.worlds import sample_world, sample_world_fit_seed, sample_world_key
from sdgov.base.executor import Executor, SerialExecutor
from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.agreement.sections.privacy_risk import RiskSettings
    from sdgov.audits.privacy.part import AuditFrame, AuditShape

MAX_CELLS = 20_000_000  # the joint is held in memory (8 bytes a cell, a few copies): App 3's 1.56M cells take
# ~12 MB each; above this the check reports "not run"
JOINT_MIN_MEAN = 5.0  # the joint itself is a tested table only where it holds ≥ 5 synthetic records a cell on average
# (Cochran's rule for a G² that means something: App 3's 1.56M-cell joint at 1M records is mostly empty cells)
TOL = 1e-8  # IPF stops when no Φ margin is further than this from its target (in probability: 0.01 of a record
# in a million, far below the sampling noise the test measures) …
MAX_SWEEPS = 1000  # … or after this many sweeps (a margin with empty cells can pull the fit to the boundary slowly)
SCORE_SWEEPS = 50  # the record scorers' projection (verbatim copies, the one-run record guesser): see phi_projection
SETS = 20  # independent sample sets the output is drawn as (the settings' default): the sign-flip test's units
PINV_RTOL = 1e-10  # eigenvalues of the Fisher information below this share of the largest: Φ's redundant directions
# (two Φ tables sharing an attribute share its margin), not information


class BeyondPhiResult(Frozen):
    ran: bool
    reason: str = ""  # why it did not run
    train_rows: int = 0  # n
    synth_rows: int = 0  # m
    cells: int = 0  # of the joint
    sets: int = 0  # S: independent sample sets of the fit
    bootstrap: int = 0  # B: random sign flips drawn
    tables: dict[str, float] = {}  # table (attributes joined by " × ") → standardised G²
    worst_table: str = ""
    statistic: float = 0.0  # the largest standardised G²
    p_value: float = 1.0


def non_phi_tables(attributes: list[str], cliques: list[tuple[str, ...]]) -> list[tuple[int, ...]]:
    """Attribute index sets outside Φ: every 2- and 3-set not inside a Φ marginal, and the full joint (if more than
    3 attributes and not inside Φ)."""
    inside = [set(c) for c in cliques]
    d = len(attributes)
    sets = [s for k in (2, 3) if k <= d for s in itertools.combinations(range(d), k)]
    if d > 3:
        sets.append(tuple(range(d)))
    return [s for s in sets if not any({attributes[j] for j in s} <= c for c in inside)]


def tested_tables(
    outside: list[tuple[int, ...]], attributes: int, synth_rows: int, cells: int
) -> list[tuple[int, ...]]:
    """The tables outside Φ the test compares (``outside``: :func:`non_phi_tables`): all of them, less the joint of
    the ``attributes`` when ``synth_rows`` give it fewer than :data:`JOINT_MIN_MEAN` records a cell of its ``cells``."""
    return [t for t in outside if len(t) < attributes or synth_rows >= JOINT_MIN_MEAN * cells]


class Margins:
    """The marginal tables of one joint (an array with one axis per audited attribute), each summed once over one
    axis of a cached table above it: the 35 three-way tables of App 3's 1.56M-cell joint cost 0.01 CPU-s this way
    against 0.18 by a pass over the joint each. Plain numpy sums, no BLAS."""

    def __init__(self, joint: np.ndarray) -> None:
        self._cache: dict[tuple[int, ...], np.ndarray] = {tuple(range(joint.ndim)): joint}

    def __call__(self, axes: tuple[int, ...]) -> np.ndarray:
        """The table over ``axes`` (ascending), its axes in that order."""
        if axes not in self._cache:
            top = max(a for a in range(len(next(iter(self._cache)))) if a not in axes)
            parent = tuple(sorted((*axes, top)))
            self._cache[axes] = self(parent).sum(axis=parent.index(top))
        return self._cache[axes]


def _expand(table: np.ndarray, axes: tuple[int, ...], ndim: int) -> np.ndarray:
    """A table over ``axes`` shaped to broadcast against the joint."""
    return table.reshape([table.shape[axes.index(a)] if a in axes else 1 for a in range(ndim)])


def phi_projection(counts: np.ndarray, phi_axes: list[tuple[int, ...]], sweeps: int = MAX_SWEEPS) -> np.ndarray:
    """The maximum-entropy joint with the Φ marginals of ``counts`` (an array over the audited attributes;
    ``phi_axes``: each Φ marginal's axes, ascending): IPF from the uniform joint, run to convergence (``TOL``) or
    ``sweeps`` sweeps, on the output.

    This check's null model is run to convergence. The record scorers — the verbatim-copy test and the one-run
    record guesser — stop at ``SCORE_SWEEPS``: their validity does not rest on e (a random split's labels are
    exchangeable given the output, Thm 5.2 holds for any score), only their power, and on a large sparse joint IPF
    creeps to the boundary for all its 1,000 sweeps (App 3, a verbatim round's 25,000 records: 65 CPU-s, the audit's
    largest cost once 16 rounds paid it, issue 37). After 50 sweeps (3.3 CPU-s) the expected count of the median
    observed candidate is 7 % from the converged one and the flagged candidates are the same."""
    total = float(counts.sum())
    have = Margins(counts)
    targets = [have(ax) / total for ax in phi_axes]
    joint = np.full(counts.shape, 1.0 / counts.size)
    every = range(counts.ndim)
    for _ in range(sweeps):
        worst = 0.0
        for ax, t in zip(phi_axes, targets):
            cur = joint.sum(axis=tuple(a for a in every if a not in ax))
            worst = max(worst, float(np.abs(cur - t).max()))
            joint *= _expand(np.divide(t, cur, out=np.zeros_like(t), where=cur > 0), ax, counts.ndim)
        if worst < TOL:
            break
    return joint / joint.sum()


def fisher_pinv(p: np.ndarray, phi_axes: list[tuple[int, ...]]) -> np.ndarray:
    """Pseudo-inverse of the Fisher information X'(diag p − p p')X of the Φ family at ``p`` (X: the indicator of
    every cell of every Φ marginal, in :func:`_stack` order). Block (i, j) is the table of p over the attributes of
    both marginals (at most 4 when Φ is 2-way), laid out as marginal i's cells × marginal j's: small tables only."""
    have = Margins(p)
    sizes = [have(ax).size for ax in phi_axes]
    offs = np.cumsum([0, *sizes])
    info = np.empty((int(offs[-1]), int(offs[-1])))
    for i, ai in enumerate(phi_axes):
        for j in range(i, len(phi_axes)):
            aj = phi_axes[j]
            both = tuple(sorted(set(ai) | set(aj)))
            u = have(both)
            grid = np.indices(u.shape).reshape(len(both), -1)
            ri = np.ravel_multi_index(tuple(grid[[both.index(a) for a in ai]]), have(ai).shape)
            rj = np.ravel_multi_index(tuple(grid[[both.index(a) for a in aj]]), have(aj).shape)
            block = np.bincount(ri * sizes[j] + rj, weights=u.ravel(), minlength=sizes[i] * sizes[j])
            block = block.reshape(sizes[i], sizes[j]) - np.outer(have(ai).ravel(), have(aj).ravel())
            info[offs[i] : offs[i + 1], offs[j] : offs[j + 1]] = block
            info[offs[j] : offs[j + 1], offs[i] : offs[i + 1]] = block.T
    w, v = np.linalg.eigh(info)
    keep = w > PINV_RTOL * w.max()
    return (v[:, keep] / w[keep]) @ v[:, keep].T


def _stack(have: Margins, phi_axes: list[tuple[int, ...]]) -> np.ndarray:
    """Every Φ marginal of one joint, flattened and concatenated: X' times the joint."""
    return np.concatenate([have(ax).ravel() for ax in phi_axes])


def non_phi_residual(counts: np.ndarray, p_hat: np.ndarray, phi_axes: list[tuple[int, ...]], pinv: np.ndarray):
    """What of ``counts`` (a joint over the audited attributes) its Φ marginals do not explain: ``counts`` less m·(its
    Φ-only model), the model linearised at ``p_hat`` — one Newton step on the Φ family's natural parameters with the
    Fisher information there (``pinv``: :func:`fisher_pinv`), θ = I⁺X'(c − m p̂), residual = c − m p̂ − p̂·(Xθ − p̂'Xθ).

    Linear in ``counts``, so the residuals of the sample sets add up to the pooled output's; zero on every Φ margin;
    and zero for any difference from p̂ along the Φ family (the honest model lies in it, so an honest set's residual
    has mean zero whatever its sampler — and a non-Φ interaction's does not). One pass of Φ-margin sums and broadcasts
    over the joint: App 3's 1.56M cells, ≈ 0.1 CPU-s."""
    d = counts - float(counts.sum()) * p_hat
    theta = pinv @ _stack(Margins(d), phi_axes)
    x_theta = np.zeros(counts.shape)
    at = 0
    for ax in phi_axes:
        shape = tuple(counts.shape[a] for a in ax)
        x_theta += _expand(theta[at : at + math.prod(shape)].reshape(shape), ax, counts.ndim)
        at += math.prod(shape)
    return d - p_hat * (x_theta - float(np.sum(p_hat * x_theta)))


def not_run_reason(
    attrs: list[str], cliques: list[tuple[str, ...]], sizes: list[int], synth_rows: int, max_cells: int = MAX_CELLS
) -> str | None:
    """Why the check cannot run on this Φ and domain (nothing outside Φ to test, or a joint too large to hold), or
    None: it runs. Known before any fit."""
    outside = non_phi_tables(attrs, cliques)
    cells = math.prod(sizes)
    if not tested_tables(outside, len(attrs), synth_rows, cells):
        return (
            f"the only table outside Φ is the joint, with fewer than {JOINT_MIN_MEAN:g} synthetic records a cell"
            if outside
            else "Φ holds every interaction of the audited attributes"
        )
    if cells > max_cells:
        return f"the joint of the audited attributes has {cells:,} cells, above {max_cells:,}"
    return None


def set_cells(records: np.ndarray, *, sizes: list[int]) -> np.ndarray:
    """A sample set's records as cells of the joint (int32: App 3's 1.56M cells), kept as the set is drawn."""
    return record_keys(records, sizes).astype(np.int32 if math.prod(sizes) < 2**31 else np.int64)


def _check_of_sets(
    sets: list[np.ndarray],
    *,
    attrs: list[str],
    cliques: list[tuple[str, ...]],
    sizes: list[int],
    train_rows: int,
    bootstrap: int,
    seed: int,
) -> BeyondPhiResult:
    """The whole check on the fit's sets (as :func:`set_cells`) — the request's reducer, so it runs in the worker that
    drew them, beside the audit's other fits rather than after them (App 3: ≈ 40 CPU-s, issue 37)."""
    tables = tested_tables(non_phi_tables(attrs, cliques), len(attrs), sum(len(k) for k in sets), math.prod(sizes))
    return beyond_phi_test(sets, sizes, attrs, cliques, tables, bootstrap, seed).model_copy(
        update={"train_rows": train_rows}
    )


def beyond_phi_request(
    ref: GeneratorRef,
    reference: np.ndarray,
    train_rows: int,
    synth_rows: int,
    sets: int,
    seed: int,
    bootstrap: int,
) -> FitRequest:
    """The check's one fit: sample world 0 at ``train_rows`` records (:mod:`sdgov.audits.privacy.worlds` — the same fit
    as memorisation world 0 when their training sizes agree), ``sets`` independent sample sets of
    ``synth_rows``/``sets`` records each, and the check itself as its reducer."""
    n = min(int(train_rows), len(reference))
    sizes = [ref.domain[a] for a in ref.attributes]
    check = partial(
        _check_of_sets,
        attrs=list(ref.attributes),
        cliques=[tuple(c) for c in ref.cliques],
        sizes=sizes,
        train_rows=n,
        bootstrap=int(bootstrap),
        seed=int(seed),
    )
    return FitRequest(
        sample_world_key(0, n),
        sample_world(reference, n, seed, 0),
        sample_world_fit_seed(seed, 0),
        max(1, int(synth_rows) // int(sets)),
        tuple(seed_of(seed, 72, j) for j in range(int(sets))),
        check,
        partial(set_cells, sizes=sizes),
    )


def beyond_phi_audit(
    ref: GeneratorRef,
    reference: np.ndarray,
    train_rows: int,
    synth_rows: int,
    bootstrap: int,
    seed: int,
    max_cells: int = MAX_CELLS,
    executor: Executor | None = None,
    sets: int = SETS,
) -> BeyondPhiResult:
    """The test of the module docstring on its own fit (the audit shares it: :class:`BeyondPhi`)."""
    attrs = ref.attributes
    sizes = [ref.domain[a] for a in attrs]
    reason = not_run_reason(attrs, [tuple(c) for c in ref.cliques], sizes, synth_rows, max_cells)
    if reason is not None:
        return BeyondPhiResult(ran=False, reason=reason, cells=math.prod(sizes))
    reference = np.asarray(reference, dtype=np.int64)
    request = beyond_phi_request(ref, reference, train_rows, synth_rows, sets, seed, bootstrap)
    (result,) = fit_all(ref, [request], executor or SerialExecutor())
    return result


def beyond_phi_test(
    set_cells: list[np.ndarray],
    sizes: list[int],
    attrs: list[str],
    cliques: list[tuple[str, ...]],
    tables: list[tuple[int, ...]],
    bootstrap: int,
    seed: int,
) -> BeyondPhiResult:
    """Steps 2–4 of the module docstring on the output's sample sets (``set_cells``: each set's records as cells of
    the joint over ``attrs``, of ``sizes``): the pooled output's Φ-only model, every set's non-Φ residual on each of
    ``tables``, and the sign-flip test of their sum."""
    shape, cells = tuple(sizes), math.prod(sizes)
    phi_axes = [tuple(sorted(attrs.index(a) for a in c)) for c in cliques]
    pooled = np.zeros(cells)
    for k in set_cells:
        pooled += np.bincount(k, minlength=cells)
    pooled = pooled.reshape(shape)
    m = float(pooled.sum())
    p_hat = phi_projection(pooled, phi_axes)
    pinv = fisher_pinv(p_hat, phi_axes)
    expect = Margins(p_hat)
    weights = [1.0 / np.maximum(m * expect(t).ravel(), 1.0) for t in tables]  # Pearson's, a cell's weight ≤ 1
    res = [np.empty((len(set_cells), expect(t).size)) for t in tables]
    for s, k in enumerate(set_cells):
        have = Margins(
            non_phi_residual(np.bincount(k, minlength=cells).reshape(shape).astype(np.float64), p_hat, phi_axes, pinv)
        )
        for r, t in zip(res, tables):
            r[s] = have(t).ravel()
    # Q_t(ε) = Σ_c w_c (Σ_s ε_s r_sc)² = ε'G_tε: each table's Gram matrix over the sets, then any flip for free
    gram = np.stack([np.einsum("sc,c,uc->su", r, w, r) for r, w in zip(res, weights)])
    mean = np.einsum("tss->t", gram)  # E Q_t over uniform flips, and its variance 2 Σ_{s≠u} G_su², both exact
    sd = np.sqrt(2.0 * (np.einsum("tsu,tsu->t", gram, gram) - np.einsum("tss,tss->t", gram, gram)))
    sd = np.where(sd > 0, sd, np.inf)  # a table that cannot vary says nothing
    z_obs = (gram.sum(axis=(1, 2)) - mean) / sd
    flips = np.random.default_rng(seed_of(seed, 73)).choice([-1.0, 1.0], size=(int(bootstrap), len(set_cells)))
    z_flip = (np.einsum("bs,tsu,bu->bt", flips, gram, flips) - mean) / sd
    stat = float(z_obs.max())
    exceed = int(np.sum(z_flip.max(axis=1) >= stat))
    names = [" × ".join(attrs[j] for j in t) for t in tables]
    return BeyondPhiResult(
        ran=True,
        synth_rows=int(round(m)),
        sets=len(set_cells),
        cells=cells,
        bootstrap=int(bootstrap),
        tables={k: float(v) for k, v in zip(names, z_obs)},
        worst_table=names[int(np.argmax(z_obs))],
        statistic=stat,
        p_value=(1 + exceed) / (int(bootstrap) + 1),
    )


class BeyondPhi(PrivacyPart):
    """Interactions beyond Φ (``--parts beyond_phi``), on sample world 0."""

    name: ClassVar[str] = "beyond_phi"
    result_field: ClassVar[str] = "beyond_phi"

    def fit_keys(self, settings: RiskSettings, shape: AuditShape) -> list[tuple[Any, ...]]:
        """Sample world 0 at ``beyond_phi_rows`` records, unless Φ and the domain leave nothing to test."""
        if shape.domain is not None and shape.cliques is not None:
            attrs = list(shape.domain)
            sizes = [shape.domain[a] for a in attrs]
            if not_run_reason(attrs, list(shape.cliques), sizes, settings.beyond_phi_synth_rows) is not None:
                return []
        return [sample_world_key(0, shape.rows(settings.beyond_phi_rows))]

    def requests(self, frame: AuditFrame) -> list[FitRequest]:
        """Its one fit, when there is something to test."""
        st = frame.settings
        if self._reason(frame) is not None:
            return []
        return [
            beyond_phi_request(
                frame.ref,
                frame.reference,
                st.beyond_phi_rows,
                st.beyond_phi_synth_rows,
                st.beyond_phi_sets,
                st.seed,
                st.beyond_phi_bootstrap,
            )
        ]

    def run(self, frame: AuditFrame, fitted: list[Any]) -> BeyondPhiResult:
        """The test, as its fit's reducer made it (or why it does not run)."""
        reason = self._reason(frame)
        if reason is not None:
            return BeyondPhiResult(ran=False, reason=reason, cells=math.prod(frame.sizes))
        result: BeyondPhiResult = fitted[0]
        return result

    def _reason(self, frame: AuditFrame) -> str | None:
        cliques = [tuple(c) for c in frame.ref.cliques]
        return not_run_reason(frame.attributes, cliques, frame.sizes, frame.settings.beyond_phi_synth_rows)

    def checks(self, result: BeyondPhiResult, frame: AuditFrame) -> list[PolicyCheck]:
        """Its p-value under ``policy.beyond_phi``."""
        bq, b = frame.policy.beyond_phi, result
        return [
            PolicyCheck(
                name="interactions beyond Φ",
                level=level_of(b.ran and b.p_value <= bq.fail_alpha, b.ran and b.p_value <= bq.warn_alpha),
                detail=(
                    f"p = {b.p_value:.4g} ({b.bootstrap} random sign flips of {b.sets} independent sample sets' "
                    f"residuals from the Φ-only model of the output's own Φ tables); largest standardised statistic "
                    f"{b.statistic:+.1f} on {b.worst_table} ({b.synth_rows:,} synthetic records from one fit on "
                    f"{b.train_rows:,})"
                    if b.ran
                    else f"not run: {b.reason}"
                ),
            )
        ]
