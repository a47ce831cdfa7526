"""Which pre-registered settings the decomposability test can be trusted at, decided from the settings alone.

Phase 1 chooses the interaction set that carries β* by exact sign-flip tests of the K paired differences
(:mod:`.beta_star`). Their statistics are even functions of the sign pattern (flipping every pair gives the same
value), so an enumeration of all 2^K patterns can give a set no p-value below 2/2^K, and a set's p is the smaller
of its two tests, doubled: at best 4/2^K. At the demo's former K = 4 that is 0.25 — no set can ever respond at
``beta_star_alpha`` = 0.05 and the screen ranks quantised p-values by their tie-break. With ``permutations`` sampled
patterns (when 2^K exceeds them) the floor is about 2/(permutations + 1). A spec whose screen cannot reach its own level
is refused at pre-flight, before any noise is drawn: at the defaults K ≥ 7 (4/128 = 0.031).

The verdict itself is phase 2's paired t-test on fresh fits, which reaches any α for K ≥ 2; its false-alarm rate
at the smallest and the default K on Applications 1–3 and the demo is in ``docs/decomposability.md``
(``benchmarks/bench_decomposability_power.py``). The family-wise report of responding sets (Holm over all sets)
needs 4/2^K ≤ α/sets, which K = 10 does not reach on Application 3's 35 sets: it is a description, never a verdict.
"""

from __future__ import annotations

from sdgov.agreement.sections.decomposability import MAX_K, DecomposabilitySettings


def smallest_screen_p(K: int, permutations: int) -> float:
    """The smallest p-value phase 1 gives one interaction set, doubled for the set's two tests: 2/2^K when all 2^K
    sign patterns are enumerated (the observed one and its mirror tie), else (1 + 2B/2^K)/(B + 1) for B sampled
    patterns (its expected value: the observed pattern and its mirror recur among them)."""
    if permutations + 1 >= 2**K:
        floor = 2 / 2**K
    else:
        floor = (1 + 2 * permutations / 2**K) / (permutations + 1)
    return min(1.0, 2 * floor)


def smallest_k(settings: DecomposabilitySettings) -> int | None:
    """The smallest K whose screen can reach ``beta_star_alpha`` with these settings' permutations (None: none)."""
    return next(
        (
            k
            for k in range(2, MAX_K + 1)
            if smallest_screen_p(k, settings.beta_star_permutations) <= settings.beta_star_alpha
        ),
        None,
    )


def calibration_problem(settings: DecomposabilitySettings) -> tuple[str, str, str] | None:
    """(what, the field, how to fix) when the screen of these settings cannot reach its level, else None."""
    floor = smallest_screen_p(settings.K, settings.beta_star_permutations)
    if floor <= settings.beta_star_alpha:
        return None
    k = smallest_k(settings)
    what = (
        f"K = {settings.K} is too light: the decomposability screen's smallest possible p-value is {floor:.3g}, "
        f"above beta_star_alpha = {settings.beta_star_alpha:g}"
    )
    if k is None:
        return what, "audit.beta_star_alpha", "pre-register a larger beta_star_alpha or more beta_star_permutations"
    return what, "audit.K", f"pre-register K ≥ {k} (docs/decomposability.md: the false-alarm rate by K)"
