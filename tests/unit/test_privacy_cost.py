"""The privacy-risk audit's planned fits (:mod:`sdgov.audits.privacy.cost`) are the fits a real audit makes: its
cost on a large Φ (one fit of Application 3's generator is ~100 CPU-seconds) is known from the settings alone."""

from __future__ import annotations

import numpy as np
import pytest

from sdgov.agreement.sections.privacy_risk import PARTS, RiskPolicy, RiskSettings
from sdgov.audits.privacy import base
from sdgov.audits.privacy.cost import planned_fits
from sdgov.audits.privacy.run import PrivacyAuditRun

INDEPENDENT = "independent"


@pytest.mark.parametrize(
    "settings",
    [
        RiskSettings(
            n_outliers=1,
            n_random=1,
            n_shadow=3,
            n_synth=2,
            train_rows=100,
            memorisation_pairs=2,
            memorisation_rows=200,
            beyond_phi_rows=300,
            beyond_phi_synth_rows=1000,
            beyond_phi_bootstrap=19,
            disclosure_rows=200,
            canaries=20,
            one_run_canaries=10,
            folds=2,
            rf_trees=3,
            ai_trees=3,
            n_jobs=1,
        ),
        RiskSettings(
            n_outliers=2,
            n_random=0,
            n_shadow=2,
            n_synth=1,
            train_rows=80,
            memorisation_pairs=3,
            memorisation_rows=150,
            beyond_phi_rows=300,
            beyond_phi_synth_rows=1000,
            beyond_phi_bootstrap=19,
            disclosure_rows=150,
            canaries=10,
            canary_runs=2,
            one_run_canaries=10,
            folds=2,
            rf_trees=3,
            ai_trees=3,
            n_jobs=1,
        ),
    ],
)
def test_planned_fits_are_the_fits_a_real_audit_makes(settings, monkeypatch):
    fits: list[int] = []
    real_fit_sample = base.GeneratorRef.fit_sample

    def counting(self, rows, fit_seed, n, sample_seeds):
        fits.append(len(rows))
        return real_fit_sample(self, rows, fit_seed, n, sample_seeds)

    monkeypatch.setattr(base.GeneratorRef, "fit_sample", counting)
    rng = np.random.default_rng(0)
    attrs, dom = ["A", "B", "C"], {"A": 3, "B": 4, "C": 5}
    real = np.stack([rng.integers(0, dom[a], size=2000) for a in attrs], axis=1)
    for part in PARTS:  # one part at a time: each part's own count, not just the total
        fits.clear()
        PrivacyAuditRun(
            real=real,
            attributes=attrs,
            domain=dom,
            cliques=[("A", "B"), ("B", "C")],
            generator=INDEPENDENT,
            params={},
            settings=settings,
            policy=RiskPolicy(),
            claimed_epsilon=1.0,
            claimed_delta=1e-6,
            parts=(part,),
        ).run()
        assert len(fits) == planned_fits(settings, (part,))[part], part
