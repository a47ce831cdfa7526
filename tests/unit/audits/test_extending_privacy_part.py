"""docs/extending.md, "Adding a part to the privacy-risk audit": its module and its registration line, run as written
beside the membership game on a tiny population — so the page cannot rot, and "a part that asks for fits another
part makes costs nothing in fits" is checked on a real audit."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from sdgov.agreement.sections.privacy_risk import PARTS, RiskPolicy, RiskSettings
from sdgov.audits.privacy import base, registry
from sdgov.audits.privacy import run as privacy_run
from sdgov.audits.privacy.cost import planned_fits
from sdgov.audits.privacy.run import PrivacyAuditRun

DOC = Path(__file__).resolve().parents[3] / "docs" / "extending.md"
INDEPENDENT = "independent"
SETTINGS = RiskSettings(
    n_outliers=1, n_random=1, n_shadow=3, n_synth=2, train_rows=100, folds=2, rf_trees=5, ai_trees=5, n_jobs=1
)


def _blocks() -> list[str]:
    section = DOC.read_text().split("## Adding a part to the privacy-risk audit", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.fixture
def presence(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The doc's part, registered by the doc's line (and its name in PARTS) for this test only."""
    code, registration = _blocks()
    module = types.ModuleType("sdgov.audits.privacy.presence")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    namespace = {**vars(registry), "Presence": module.Presence}
    exec(compile(registration, str(DOC), "exec"), namespace)  # the registry as the page writes it
    parts = namespace["PRIVACY_PARTS"]
    assert [type(p) for p in parts[:-1]] == [type(p) for p in registry.PRIVACY_PARTS], "the page's registry is stale"
    monkeypatch.setattr(registry, "PRIVACY_PARTS", parts)
    monkeypatch.setattr(privacy_run, "PARTS", (*PARTS, "presence"))
    monkeypatch.setitem(registry.check_parts.__globals__, "PARTS", (*PARTS, "presence"))
    registry.check_parts(registry.PRIVACY_PARTS)  # fully registered: the import-time check accepts it
    return module


def test_the_documented_part_rides_on_the_membership_worlds_at_no_extra_fit(
    presence: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    fits: list[int] = []
    real_fit_sample = base.GeneratorRef.fit_sample

    def counting(self, rows, fit_seed, *args):  # type: ignore[no-untyped-def]
        fits.append(fit_seed)
        return real_fit_sample(self, rows, fit_seed, *args)

    monkeypatch.setattr(base.GeneratorRef, "fit_sample", counting)
    rng = np.random.default_rng(0)
    attrs, dom = ["A", "B", "C", "D"], {"A": 6, "B": 5, "C": 7, "D": 6}
    real = np.stack([rng.integers(0, dom[a], size=3000) for a in attrs], axis=1)
    results = {}
    for label, generator, params in [
        ("copier", "copier", {"base": INDEPENDENT}),
        ("honest", INDEPENDENT, {"sigma": 2.0}),
    ]:
        fits.clear()
        results[label] = PrivacyAuditRun(
            real=real,
            attributes=attrs,
            domain=dom,
            cliques=[("A", "B"), ("C", "D")],
            generator=generator,
            params=params,
            settings=SETTINGS,
            policy=RiskPolicy(),
            claimed_epsilon=1.0,
            claimed_delta=1e-6,
            parts=("mia", "presence"),
        ).run()
        assert len(fits) == 2 * SETTINGS.n_shadow == results[label].fits["mia"]  # the game's fits, made once
        assert results[label].fits["presence"] == 0
    assert planned_fits(SETTINGS, ("mia", "presence")) == {"mia": 6, "presence": 0}
    copier = results["copier"].other_parts["presence"].excess
    honest = results["honest"].other_parts["presence"].excess
    assert min(copier) > 0.3, copier  # a resample of the training rows holds a member's record ~ once a set
    assert max(abs(x) for x in honest) < min(copier), honest  # 1,260 cells: a record seldom appears by chance
    level = {k: [c.level for c in r.checks if c.name == "presence of the targets"] for k, r in results.items()}
    assert level == {"copier": ["warn"], "honest": ["pass"]}
