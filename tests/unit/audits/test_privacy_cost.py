"""The privacy-risk audit's planned fits (:mod:`sdgov.audits.privacy.cost`) are the fits a real audit makes: its
cost on a large Φ (one fit of Application 3's generator is ~100 CPU-seconds) is known from the settings alone —
part by part, and all parts together, where a fit two parts share is made once."""

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
            memorisation_worlds=3,
            memorisation_rows=200,
            beyond_phi_rows=300,
            beyond_phi_synth_rows=1000,
            beyond_phi_bootstrap=19,
            disclosure_rows=200,
            verbatim_rounds=3,  # the verbatim-copy test's fits: one per round
            verbatim_samples=2,
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
            memorisation_worlds=4,
            memorisation_rows=300,
            beyond_phi_rows=300,  # = memorisation_rows: the beyond-Φ check fits memorisation's first world
            beyond_phi_synth_rows=1000,
            beyond_phi_bootstrap=19,
            disclosure_rows=150,  # the verbatim-copy test at its defaults: 16 rounds of 25 sets
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
    fits: list[tuple[int, int]] = []
    real_fit_sample = base.GeneratorRef.fit_sample

    def counting(self, rows, fit_seed, *args):
        fits.append((len(rows), fit_seed))
        return real_fit_sample(self, rows, fit_seed, *args)

    monkeypatch.setattr(base.GeneratorRef, "fit_sample", counting)
    rng = np.random.default_rng(0)
    attrs, dom = ["A", "B", "C"], {"A": 3, "B": 4, "C": 5}
    real = np.stack([rng.integers(0, dom[a], size=2000) for a in attrs], axis=1)

    def audit(parts: tuple[str, ...]):
        fits.clear()
        return PrivacyAuditRun(
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
            parts=parts,
        ).run()

    alone = {}
    for part in PARTS:  # one part at a time: each part's own count, not just the total
        result = audit((part,))
        alone[part] = result
        assert len(fits) == planned_fits(settings, (part,))[part] == result.fits[part], part
    together = audit(PARTS)
    planned = planned_fits(settings, PARTS)
    assert len(fits) == sum(planned.values()) == sum(together.fits.values())
    assert len(set(fits)) == len(fits)  # no fit made twice
    shared = settings.memorisation_rows == settings.beyond_phi_rows
    assert sum(planned.values()) == sum(planned_fits(settings, (p,))[p] for p in PARTS) - shared
    # the membership game fits 2 worlds per pair whatever the number of targets: (T + 1)·n_shadow before
    assert planned["mia"] == 2 * settings.n_shadow
    # the record checks' one fit and one per verbatim-copy round, each round its own fit
    assert planned["disclosure"] == 1 + settings.verbatim_rounds
    assert together.disclosure.verbatim.rounds == settings.verbatim_rounds
    # sharing changes no part's result: each part alone gives what it gives beside the others (the two canary bounds
    # excepted: beside each other each takes half of β)
    for part, result in alone.items():
        field = {"mia": "targets"}.get(part, part)
        if part not in ("canary", "one_run"):
            assert getattr(result, field) == getattr(together, field), part
    assert together.one_run.beta == together.canary.beta == settings.beta / 2 == alone["one_run"].one_run.beta / 2


def test_the_defaults_plan_the_fits_the_docs_state():
    """docs/privacy_risk.md and benchmarks/README.md state the audit's cost at its defaults: 109 fits — 93 shared
    fits (membership worlds, memorisation worlds with the beyond-Φ check's, the record checks') and 16 verbatim-copy
    rounds; with the verbatim-copy test off, the record checks fit once."""
    planned = planned_fits(RiskSettings())
    assert planned == {"mia": 60, "one_run": 1, "beyond_phi": 1, "memorisation": 30, "disclosure": 17}
    assert sum(planned.values()) == 109
    assert planned_fits(RiskSettings(verbatim_rounds=0), ("disclosure",)) == {"disclosure": 1}
