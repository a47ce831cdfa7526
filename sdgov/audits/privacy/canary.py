r"""An empirical lower bound on ε from nearest-neighbour reconstruction of random canaries.

Setting. m canaries z_1..z_m are drawn i.i.d. uniform in the unit hypercube [0,1]^d (one coordinate per audited
attribute). For categorical data each canary is **discretised into its domain cell** before training
(attribute j with k_j categories: index ⌊k_j·z_j⌋), and the cells are added to the training data. Every
synthetic record is **mapped back to a uniform random point inside its cell** ((index + U)/k_j, U ~ U[0,1) drawn
afresh). That map uses no data, so it is post-processing and keeps any DP guarantee of the generator. The
attacker's reconstruction of z_i is its nearest mapped synthetic point; D_i is the Euclidean distance to it and
ν̂ = Σ_i D_i (the statistic of the canary audit), here generalised to ν̂_k = the sum of the k smallest D_i.

Bound. Fix a set S of k canaries and write B = {Σ_{i∈S} D_i ≤ t}.

(a) *Null world.* Run the mechanism without the canaries of S (the other canaries stay in, as part of the
    data). Its n synthetic points y_1..y_n are independent of the z_i, i ∈ S, which are uniform. B implies that
    there are indices j_i with Σ_i ‖z_i − y_{j_i}‖ ≤ t, so by a union bound over the n^k index choices

        P₀(B) ≤ n^k · Vol{(u_1..u_k) ∈ (ℝ^d)^k : Σ_i ‖u_i‖ ≤ t} / Vol(box)^k.

    With polar coordinates in each block (‖u_i‖ = r_i has density d·V_d·r^{d−1}, V_d = π^{d/2}/Γ(d/2 + 1) the
    unit-ball volume) and the Dirichlet integral ∫_{Σr_i ≤ t} Π r_i^{d−1} dr = Γ(d)^k t^{dk}/Γ(dk + 1):

        Vol = (d·V_d·Γ(d))^k · t^{dk} / Γ(dk + 1) = (Γ(d+1)·π^{d/2}/Γ(d/2+1))^k · t^{dk} / Γ(dk + 1),

    so, in logs (the only stable form for large m·d; ``scipy.special.gammaln``),

        log P₀(B) ≤ L_k(t) = k·[log n + gammaln(d+1) + (d/2)·log π − gammaln(d/2+1) − log Vol(box)]
                             + dk·log t − gammaln(dk + 1).

    Vol(box) = 1 for the unit cube (``metric="unit"``, the default). ``metric="cells"`` measures distances after
    the fixed map z_j ↦ k_j·z_j (every cell a unit cube; Vol(box) = Π k_j): the same theorem for a pre-declared
    Euclidean metric, usually more powerful on categorical data.

(b) *Group privacy.* The real world differs from the null world by adding the k canaries of S. If the generator
    is (ε, δ)-DP under add/remove-one neighbours, then for any event (Dwork & Roth 2014, group privacy)

        P(B) ≤ e^{kε}·P₀(B) + δ·(e^{kε} − 1)/(e^ε − 1).

(c) *Choosing S after the fact.* "the k smallest D_i sum to at most t" is the union of B over all C(m, k) sets S,
    so its probability is at most C(m, k) times the bound in (b).

(d) *Several k.* The audit looks at k ∈ G = {1, 2, 4, …, m} ∪ {m} (fixed before the run) and at R independent
    runs, each at level β/(|G|·R) (Bonferroni).

Hence, observing ν̂_k, every ε with  C(m,k)·[e^{kε + L_k(ν̂_k)} + δ·(e^{kε} − 1)/(e^ε − 1)] ≤ β/(|G|·R)  is refuted
at confidence 1 − β; ε_lower is the largest such ε (0 if none). With δ = 0 it is closed-form:

    ε_lower(k) = (log(β/(|G|·R)) − log C(m,k) − L_k(ν̂_k)) / k,

which is decreasing in ν̂_k. With k = m, C(m, m) = 1 and this is the plain sum statistic ν̂ = Σ_i D_i. If the
claimed ε is below ε_lower, the claim is refuted with confidence 1 − β and the release is blocked.

The δ term costs power: choosing the best canary after the fact multiplies it by C(m, k), so nothing can be
refuted unless m·δ < β/(|G|·R) — keep m well below β/δ. ``epsilon_lower_pure`` (δ = 0) is reported beside it:
it refutes a *pure* ε-DP reading of the claim, which an (ε, δ) mechanism may legitimately violate (the policy
warns on it, and fails only on the δ-aware bound).

References: reconstruction robustness of DP (Balle, Cherubin & Hayes, "Reconstructing training data with informed
adversaries", IEEE S&P 2022; Hayes, Mahloujifar & Balle, "Bounding training data reconstruction in DP-SGD",
NeurIPS 2023), canary-based auditing of synthetic data (Annamalai, Ganev & De Cristofaro 2024), group privacy
(Dwork & Roth, "The Algorithmic Foundations of Differential Privacy", 2014, Thm 2.2 and its (ε, δ) form).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from scipy.special import gammaln

from sdgov.audits.privacy.base import GeneratorRef, seed_of
from sdgov.audits.privacy.part import EpsilonBound, PrivacyPart
from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.agreement.sections.privacy_risk import RiskSettings
    from sdgov.audits.privacy.part import AuditFrame

Metric = Literal["unit", "cells"]


def log_null_bound(nu: float, k: int, d: int, n: int, log_box: float = 0.0) -> float:
    """L_k(ν): log of the null-world bound on P(sum of k canary distances ≤ ν) (module docstring, (a))."""
    if nu <= 0:
        return -math.inf
    per = math.log(n) + gammaln(d + 1) + 0.5 * d * math.log(math.pi) - gammaln(0.5 * d + 1) - log_box
    return float(k * per + d * k * math.log(nu) - gammaln(d * k + 1))


def log_binom(m: int, k: int) -> float:
    """log C(m, k), through log-gamma (no overflow at any m)."""
    return float(gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1))


def epsilon_lower_k(
    nu: float, k: int, m: int, d: int, n: int, beta: float, delta: float = 0.0, log_box: float = 0.0
) -> float:
    """Largest ε refuted at level ``beta`` by the k smallest distances summing to ``nu`` (0 if none)."""
    L = log_null_bound(nu, k, d, n, log_box) + log_binom(m, k)
    target = math.log(beta)
    if delta <= 0:
        return max(0.0, (target - L) / k)

    def f(eps: float) -> float:
        ratio = (
            math.log(k)
            if eps < 1e-12
            else (
                math.log(math.expm1(k * eps)) - math.log(math.expm1(eps))
                if k * eps < 700
                else (k - 1) * eps - math.log1p(-math.exp(-eps))
            )
        )
        return float(np.logaddexp(k * eps + L, math.log(delta) + ratio + log_binom(m, k))) - target

    if f(0.0) >= 0:
        return 0.0
    from scipy.optimize import brentq  # here: see sdgov.audits.privacy.attribute.p_correct

    hi = 1.0
    while f(hi) < 0 and hi < 1e6:
        hi *= 2
    return float(brentq(f, 0.0, hi, xtol=1e-10)) if hi < 1e6 else math.inf


def k_grid(m: int) -> list[int]:
    """The numbers k of smallest canary distances tried (the Bonferroni grid): the powers of 2 up to ``m``, and
    ``m``."""
    return sorted({2**i for i in range(int(math.log2(m)) + 1)} | {m})


class CanaryRun(Frozen):
    nu_hat: float  # Σ of all m distances
    epsilon_lower: float  # refutes the (ε, δ) claim
    epsilon_lower_pure: float  # δ = 0: refutes a pure ε-DP reading of the claim
    best_k: int
    by_k: dict[int, float]
    mean_distance: float
    min_distance: float


class CanaryResult(Frozen):
    m: int
    d: int
    n_synth: int
    base_rows: int
    metric: str
    beta: float
    delta: float
    runs: list[CanaryRun]
    nu_hat: float
    epsilon_lower: float
    epsilon_lower_pure: float
    note: str


def epsilon_lower(
    distances: np.ndarray, d: int, n: int, beta: float, delta: float = 0.0, log_box: float = 0.0, runs: int = 1
) -> CanaryRun:
    """ε_lower of one run from its m canary distances (Bonferroni over the k grid and ``runs`` runs)."""
    dist = np.sort(np.asarray(distances, dtype=np.float64))
    m = len(dist)
    grid = k_grid(m)
    level = beta / (len(grid) * runs)
    csum = np.cumsum(dist)
    by_k = {k: epsilon_lower_k(float(csum[k - 1]), k, m, d, n, level, delta, log_box) for k in grid}
    pure = max(epsilon_lower_k(float(csum[k - 1]), k, m, d, n, level, 0.0, log_box) for k in grid)
    best = max(by_k, key=by_k.__getitem__)
    return CanaryRun(
        nu_hat=float(csum[-1]),
        epsilon_lower=by_k[best],
        epsilon_lower_pure=pure,
        best_k=best,
        by_k=by_k,
        mean_distance=float(dist.mean()),
        min_distance=float(dist[0]),
    )


def canary_audit(
    ref: GeneratorRef,
    base_rows: np.ndarray,
    m: int,
    n_synth: int,
    seed: int,
    beta: float,
    delta: float = 0.0,
    metric: Metric = "unit",
    runs: int = 1,
) -> CanaryResult:
    """Train on ``base_rows`` + m discretised canaries, sample n_synth records, bound ε from below."""
    from scipy.spatial import cKDTree  # here: see sdgov.audits.privacy.attribute.p_correct

    sizes = np.array([ref.domain[a] for a in ref.attributes], dtype=np.int64)
    d = len(sizes)
    scale = sizes.astype(np.float64) if metric == "cells" else np.ones(d)
    log_box = float(np.log(scale).sum())
    out = []
    for r in range(runs):
        rng = np.random.default_rng(seed_of(seed, 40, r))
        z = rng.random((m, d))
        cells = np.minimum((z * sizes).astype(np.int64), sizes - 1)
        train = np.vstack([np.asarray(base_rows, dtype=np.int64).reshape(-1, d), cells])
        synth = ref.fit_sample(train, seed_of(seed, 41, r), n_synth, [seed_of(seed, 42, r)])[0]
        points = (synth + rng.random(synth.shape)) / sizes  # fresh uniform point inside each cell
        dist, _ = cKDTree(points * scale).query(z * scale, k=1)
        out.append(epsilon_lower(dist, d, n_synth, beta, delta, log_box, runs))
    best = max(out, key=lambda x: x.epsilon_lower)
    return CanaryResult(
        m=m,
        d=d,
        n_synth=n_synth,
        base_rows=len(base_rows),
        metric=metric,
        beta=beta,
        delta=delta,
        runs=out,
        nu_hat=best.nu_hat,
        epsilon_lower=best.epsilon_lower,
        epsilon_lower_pure=max(x.epsilon_lower_pure for x in out),
        note=f"ε_lower holds with confidence {1 - beta:g} (Bonferroni over the k grid and {runs} run(s))",
    )


def default_canaries(train_rows: int, beta: float, delta: float | None) -> int:
    """n/2 canaries, but at most β/(20·δ): picking the best canary multiplies δ by m in the bound."""
    m = max(1, train_rows // 2)
    return min(m, max(1, int(beta / (20 * delta)))) if delta else m


class Canary(PrivacyPart):
    """The nearest-neighbour canary audit's ε lower bound (``--parts canary``, on request), on ``canary_runs`` fits
    of its own (base records plus made-up canaries: nothing another part could share)."""

    name: ClassVar[str] = "canary"
    result_field: ClassVar[str] = "canary"
    splits_beta: ClassVar[bool] = True

    def own_fits(self, settings: RiskSettings) -> int:
        """One per run."""
        return settings.canary_runs

    def run(self, frame: AuditFrame, fitted: list[Any]) -> CanaryResult:
        """Base records from the reference, the canaries, ``canary_runs`` fits, the bound at this part's β."""
        st, reference = frame.settings, frame.reference
        m = st.canaries or default_canaries(st.train_rows, st.beta, frame.claimed_delta)
        n_base = st.canary_base_rows if st.canary_base_rows is not None else st.train_rows - m
        base = reference[
            np.random.default_rng(seed_of(st.seed, 2)).choice(
                len(reference), size=max(0, min(n_base, len(reference))), replace=False
            )
        ]
        return canary_audit(
            frame.ref,
            base,
            m,
            st.m,
            seed_of(st.seed, 3),
            frame.beta_share(),
            frame.claimed_delta or 0.0,
            frame.canary_metric,
            st.canary_runs,
        )

    def bound(self, result: CanaryResult, frame: AuditFrame) -> EpsilonBound:
        """ε_lower at confidence 1 − (its share of β)."""
        return EpsilonBound(
            epsilon_lower=result.epsilon_lower,
            epsilon_lower_pure=result.epsilon_lower_pure,
            confidence=1 - result.beta,
        )
