"""How many generator fits the privacy-risk audit makes: its cost, known before it runs.

Every part of the audit fits the audited generator on shadow datasets (:meth:`GeneratorRef.fit_sample
<sdgov.audits.privacy.base.GeneratorRef.fit_sample>`); sampling, features and classifiers come on top but are
small beside a fit whose junction tree is large (Application 3: one 1.56M-cell clique, about 100 CPU-seconds a fit
at the release's 1,000 iterations, whatever the shadow dataset's size). So the number of fits times the cost of one
fit is what a controller pays, and it is known from the settings alone: ``benchmarks/bench_app3_fit_cost.py``
multiplies it out, and ``tests/unit/test_privacy_cost.py`` counts the fits a real (small) audit makes against it.
"""

from __future__ import annotations

from sdgov.agreement.sections.privacy_risk import DEFAULT_PARTS, RiskSettings


def planned_fits(
    settings: RiskSettings, parts: tuple[str, ...] = DEFAULT_PARTS, targets: int | None = None
) -> dict[str, int]:
    """Fits per part for ``settings``: membership and attribute inference (:mod:`~sdgov.audits.privacy.mia`) one
    per shadow world and target plus the worlds' shared out-datasets, (T + 1)·``n_shadow``; the canary audit one per
    run; the one-run audit and the beyond-Φ check one each; the record checks one, plus one per verbatim-copy round;
    memorisation two per pair.
    ``targets``: T when the data holds fewer records than the settings ask (default ``n_outliers + n_random``)."""
    T = settings.n_outliers + settings.n_random if targets is None else targets
    per_part = {
        "mia": (T + 1) * settings.n_shadow if T else 0,
        "canary": settings.canary_runs,
        "one_run": 1,
        "memorisation": 2 * settings.memorisation_pairs,
        "beyond_phi": 1,
        "disclosure": 1 + settings.verbatim_rounds,  # its one fit, and the verbatim-copy test's rounds
    }
    return {part: per_part[part] for part in parts}


def records_needed(settings: RiskSettings) -> int:
    """Records the audit draws on: its targets, then, disjoint from them, a shadow training set (``train_rows``)
    and the record checks' three disjoint sets (``3 × disclosure_rows``; by default a third of what is left, so
    they always fit). The release's pre-flight refuses data below this before any draw
    (:func:`sdgov.intake.preflight.check_audit_records`), where the audit would stop in the part that runs short
    (:func:`~sdgov.audits.privacy.mia.run_worlds`, the record checks in :mod:`~sdgov.audits.privacy.run`)."""
    st = settings
    return st.n_outliers + st.n_random + max(st.train_rows, 3 * (st.disclosure_rows or 0))
