"""Pass / warn / fail thresholds of the privacy-risk audit, from a policy file (YAML or JSON).

Every section is optional; a missing value takes the default below (``examples/privacy_policy.yaml`` spells all
of them out). The verdict is the worst level of any check: one ``fail`` blocks the release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from sdgov.agreement.sections.privacy_risk import RiskPolicy
from sdgov.audits.generator_protocol import AuditError
from sdgov.base.loading import load_model_file
from sdgov.base.model import Frozen

Level = Literal["pass", "warn", "fail"]


def load_risk_policy(path: str | Path | None) -> RiskPolicy:
    """The thresholds from a policy file (YAML or JSON), or the built-in defaults without one."""
    if path is None:
        return RiskPolicy()
    return load_model_file(RiskPolicy, path, AuditError, "privacy policy")


class PolicyCheck(Frozen):
    name: str
    level: Level
    detail: str


def worst(levels: list[Level]) -> Level:
    """The worst of the levels: fail over warn over pass (pass for none)."""
    return "fail" if "fail" in levels else "warn" if "warn" in levels else "pass"


def _lvl(fail: bool, warn: bool) -> Level:
    return "fail" if fail else "warn" if warn else "pass"


def apply_policy(
    policy: RiskPolicy,
    *,
    claimed_epsilon: float | None,
    epsilon_lower: float | None,
    targets: list,
    dp_bound: float | None,
    disclosure,
    epsilon_lower_pure: float | None = None,
    epsilon_confidence: float | None = None,
    epsilon_lower_membership: float | None = None,
    membership_confidence: float | None = None,
    n_worlds: int | None = None,
    memorisation=None,
    beyond_phi=None,
) -> list[PolicyCheck]:
    """Checks of one audit result (``targets``: mia.TargetRisk; ``disclosure``: DisclosureResult or None)."""
    out: list[PolicyCheck] = []
    if epsilon_lower is not None:
        if claimed_epsilon is None:
            out.append(
                PolicyCheck(
                    name="DP lower bound",
                    level="warn",
                    detail=f"ε_lower = {epsilon_lower:.3g}, but the release claims no ε (no noise)",
                )
            )
        else:
            p = policy.epsilon_lower
            pure = epsilon_lower if epsilon_lower_pure is None else epsilon_lower_pure
            out.append(
                PolicyCheck(
                    name="DP lower bound",
                    level=_lvl(
                        p.fail_above_claimed and epsilon_lower > claimed_epsilon,
                        max(epsilon_lower, pure) > p.warn_fraction * claimed_epsilon,
                    ),
                    detail=f"ε_lower = {epsilon_lower:.3g} (δ-aware; pure-ε reading {pure:.3g}"
                    + (f"; confidence {epsilon_confidence:.0%}" if epsilon_confidence is not None else "")
                    + f") vs claimed ε = {claimed_epsilon:.3g}"
                    + (
                        f"; from the shadow models' scores ε ≥ {epsilon_lower_membership:.3g} (confidence "
                        f"{membership_confidence:.0%}, all targets jointly)"
                        if epsilon_lower_membership is not None and membership_confidence is not None
                        else ""
                    )
                    + (" — the privacy claim is REFUTED" if epsilon_lower > claimed_epsilon else ""),
                )
            )
    if targets:
        mp = policy.membership
        worst_t = min(targets, key=lambda r: r.privacy_gain)
        fail = any(r.privacy_gain_ci[1] < mp.fail_below_pg for r in targets)
        above = [r for r in targets if dp_bound is not None and r.advantage_ci[0] > dp_bound]
        few = n_worlds is not None and n_worlds < mp.min_worlds
        bad = fail or (mp.fail_above_dp_bound and bool(above))
        out.append(
            PolicyCheck(
                name="membership inference (per-record privacy gain)",
                level=_lvl(
                    bad and not few, (bad and few) or any(r.privacy_gain_ci[1] < mp.warn_below_pg for r in targets)
                ),
                detail=f"lowest PG = {worst_t.privacy_gain:.2f} (CI {worst_t.privacy_gain_ci[0]:.2f}–"
                f"{worst_t.privacy_gain_ci[1]:.2f}, {worst_t.target.kind} record #{worst_t.target.index}, "
                f"{worst_t.feature} features)"
                + (f"; {len(above)} target(s) beat the DP bound Adv ≤ {dp_bound:.3f}" if above else "")
                + (f"; only {n_worlds} shadow worlds (< {mp.min_worlds}): CIs unreliable, not failing" if few else ""),
            )
        )
        ai = [r.attribute for r in targets if r.attribute is not None]
        if ai:
            q = policy.attribute
            top = max(ai, key=lambda a: (a.ci[0], a.advantage))  # the policy acts on lower bounds: the largest one
            p_in, p_out = (sum(a.p_in for a in ai) / len(ai), sum(a.p_out for a in ai) / len(ai))  # a typical target
            out.append(
                PolicyCheck(
                    name=f"attribute inference ({top.sensitive})",
                    level=_lvl(
                        any(a.ci[0] > q.fail_above_adv for a in ai), any(a.ci[0] > q.warn_above_adv for a in ai)
                    ),
                    detail=f"advantage {top.advantage:+.2f} "
                    f"(CI {top.ci[0]:+.2f}–{top.ci[1]:+.2f}, Bonferroni over targets); "
                    f"P(correct | in) {top.p_in:.2f} vs P(correct | out) {top.p_out:.2f}; over all {len(ai)} "
                    f"targets P(correct | in) {p_in:.2f} vs P(correct | out) {p_out:.2f}",
                )
            )
    if beyond_phi is not None:
        bq, b = policy.beyond_phi, beyond_phi
        out.append(
            PolicyCheck(
                name="interactions beyond Φ",
                level=_lvl(b.ran and b.p_value <= bq.fail_alpha, b.ran and b.p_value <= bq.warn_alpha),
                detail=(
                    f"p = {b.p_value:.4g} ({b.bootstrap} samples of the Φ-only model of the output's own Φ tables); "
                    f"largest standardised G² {b.statistic:+.1f} on {b.worst_table} "
                    f"({b.synth_rows:,} synthetic records from one fit on {b.train_rows:,})"
                    if b.ran
                    else f"not run: {b.reason}"
                ),
            )
        )
    if memorisation is not None:
        mq = policy.memorisation
        lows = memorisation.copy_share_lower
        lw, lf = lows.get(f"{1 - mq.warn_alpha:g}"), lows.get(f"{1 - mq.fail_alpha:g}")
        out.append(
            PolicyCheck(
                name="memorisation beyond Φ (copy share)",
                level=_lvl(
                    lf is not None and lf > mq.min_share,
                    lw is not None and lw > mq.min_share,
                ),
                detail=f"copy share {memorisation.copy_share:+.4f} (CI {memorisation.copy_share_ci[0]:+.4f}–"
                f"{memorisation.copy_share_ci[1]:+.4f}; one-sided lower bounds "
                + ", ".join(f"{k}: {v:+.4f}" for k, v in lows.items())
                + f") over {memorisation.pairs} pairs of {memorisation.train_rows}-record training sets, "
                f"{memorisation.synth_rows} synthetic rows each; 0 = nothing outside Φ reproduced, 1 = a copier",
            )
        )
    if disclosure is not None:
        xq = policy.exact_matches
        u = disclosure.unique
        big = u.synthetic >= xq.min_count
        # calibrated against the never-seen holdout (same generator, same chance of a phantom match), not against a
        # raw count: the independent sample is shown for context only
        out.append(
            PolicyCheck(
                name="exact matches of real-unique records",
                level=_lvl(
                    big and u.p_value < xq.alpha and u.rate_ratio > xq.fail_ratio,
                    big and u.p_value < xq.warn_alpha and u.rate_ratio > xq.warn_ratio,
                ),
                detail=f"{u.synthetic} of {u.real_unique_train} real-unique training records reproduced exactly vs "
                f"{u.independent} by a same-size independent real sample; reproduced real-unique holdout records "
                f"(never seen): {u.synthetic_holdout} of {u.real_unique_holdout} — rate ratio {u.rate_ratio:.2f}, "
                f"p = {u.p_value:.2g}; {disclosure.exact_matches} of {disclosure.rows} synthetic records equal a "
                f"training record (independent sample: {disclosure.exact_matches_independent})",
            )
        )
        if disclosure.verbatim is not None:
            out.append(verbatim_check(policy, disclosure.verbatim))
        ds, dh = disclosure.dcr_synthetic, disclosure.dcr_holdout
        dz, hz = ds.share_zero, dh.share_zero
        zs, zh = dz * ds.sample, hz * dh.sample  # records at distance 0 in each sample
        ratio = ((zs + 1) / ds.sample) / ((zh + 1) / dh.sample)  # +1: no division by an empty baseline
        many = zs >= policy.exact_matches.min_count and _two_prop_p(zs, ds.sample, zh, dh.sample) < policy.dcr.alpha
        out.append(
            PolicyCheck(
                name="distance to closest record",
                level=_lvl(many and ratio > policy.dcr.fail_zero_ratio, many and ratio > policy.dcr.warn_zero_ratio),
                detail=f"share at distance 0: synthetic {dz:.3f} vs real holdout {hz:.3f}; median "
                f"{disclosure.dcr_synthetic.median:g} vs {disclosure.dcr_holdout.median:g}",
            )
        )
        if disclosure.small_cells is not None:
            sc = disclosure.small_cells
            out.append(
                PolicyCheck(
                    name="small synthetic cells",
                    level=_lvl(
                        False, policy.small_cells.warn_above is not None and sc.total > policy.small_cells.warn_above
                    ),
                    detail=f"{sc.total} cell(s) of the released tables hold 1–{sc.threshold - 1} synthetic records",
                )
            )
    return out


def verbatim_check(policy: RiskPolicy, v) -> PolicyCheck:
    """The verbatim-copy test's check (``v``: :class:`~sdgov.audits.privacy.disclosure.VerbatimResult`)."""
    vq = policy.verbatim
    return PolicyCheck(
        name="verbatim copies of training records",
        level=_lvl(v.p_value <= vq.fail_alpha, v.p_value <= vq.warn_alpha),
        detail=f"p = {v.p_value:.2g} (exact, training vs never-seen holdout): the output over-represents "
        f"{v.flagged_train} of {v.unique_train} training records vs {v.flagged_holdout} of {v.unique_holdout} "
        f"holdout records, each unique in its round ({v.rounds} fits on {v.train_rows:,} records, {v.samples} "
        f"synthetic sets each; over-represented: P[Poisson(e) ≥ count] ≤ {v.flag_level:g}, e from {v.model})",
    )


def _two_prop_p(x1: float, n1: int, x2: float, n2: int) -> float:
    """One-sided p-value of share x1/n1 > x2/n2 (pooled two-proportion z-test)."""
    import math

    from scipy import stats

    if n1 <= 0 or n2 <= 0:
        return 1.0
    pool = (x1 + x2) / (n1 + n2)
    se = math.sqrt(max(pool * (1 - pool) * (1 / n1 + 1 / n2), 0.0))
    if se == 0:
        return 1.0 if x1 / n1 <= x2 / n2 else 0.0
    return float(stats.norm.sf((x1 / n1 - x2 / n2) / se))
