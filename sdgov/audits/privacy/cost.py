"""How many generator fits the privacy-risk audit makes: its cost, known before it runs.

Every part of the audit fits the audited generator on shadow datasets (:meth:`GeneratorRef.fit_sample
<sdgov.audits.privacy.base.GeneratorRef.fit_sample>`); sampling, features and classifiers come on top but are
small beside a fit whose junction tree is large (Application 3: one 1.56M-cell clique, about 100 CPU-seconds a fit
at the release's 1,000 iterations, whatever the shadow dataset's size). So the number of fits times the cost of one
fit is what a controller pays, and it is known from the settings alone: each part names the fits it will ask for
(:meth:`~sdgov.audits.privacy.part.PrivacyPart.fit_keys`), a fit two parts share counted once.
``benchmarks/bench_app3_fit_cost.py`` multiplies it out, and ``tests/unit/audits/test_privacy_cost.py`` counts the fits
a real (small) audit makes against it, part by part and all parts together.
"""

from __future__ import annotations

from sdgov.agreement.sections.privacy_risk import DEFAULT_PARTS, RiskSettings
from sdgov.audits.privacy.part import AuditShape


def planned_fits(
    settings: RiskSettings, parts: tuple[str, ...] = DEFAULT_PARTS, shape: AuditShape | None = None
) -> dict[str, int]:
    """Fits per part for ``settings``, in the registry's order: each part's own fits plus the shared ones it is the
    first to ask for (the sum is what the audit makes). At the defaults: membership and attribute inference
    2·``n_shadow`` (the shadow worlds every target shares), the one-run audit 1, the beyond-Φ check 1 (memorisation's
    first world when their training sizes agree, then counted there), memorisation ``memorisation_worlds``, the
    record checks 1 plus one per verbatim-copy round (``verbatim_rounds``), the canary audit ``canary_runs``.
    ``shape``: the targets, reference records, domain and Φ when known (default: ``n_outliers + n_random`` targets,
    every part at full size)."""
    from sdgov.audits.privacy.registry import parts_named

    shape = shape or AuditShape(settings.n_outliers + settings.n_random)
    seen: set[tuple] = set()
    out = {}
    for part in parts_named(parts):
        new = [k for k in dict.fromkeys(part.fit_keys(settings, shape)) if k not in seen]
        seen.update(new)
        out[part.name] = len(new) + part.own_fits(settings)
    return out


def records_needed(settings: RiskSettings) -> int:
    """Records the audit draws on: its targets, then, disjoint from them, a shadow training set (``train_rows``)
    and the record checks' three disjoint sets (``3 × disclosure_rows``; by default a third of what is left, so
    they always fit). The release's pre-flight refuses data below this before any draw
    (:func:`sdgov.intake.preflight.check_audit_records`), where the audit would stop in the part that runs short
    (:func:`~sdgov.audits.privacy.worlds.shadow_pairs`, the record checks'
    :func:`~sdgov.audits.privacy.disclosure.record_check_parts`)."""
    st = settings
    return st.n_outliers + st.n_random + max(st.train_rows, 3 * (st.disclosure_rows or 0))
