"""The released demo's card carries the privacy-evidence and utility-report sections (one real release, shared)."""

from __future__ import annotations

import json
from pathlib import Path

from sdgov.audits.privacy.base import RiskSettings
from sdgov.audits.privacy.policy import Policy
from sdgov.audits.privacy.run import audit_privacy
from tests.unit.test_privacy_risk import INDEPENDENT, _rare_category_data


def test_card_renders_the_privacy_evidence_section(released):
    """The card model takes the section; HTML and Markdown show verdict, checks and the two plots."""
    from sdgov.audits.privacy.audit import audit_checks
    from sdgov.audits.privacy.report import privacy_section
    from sdgov.card import Card, render

    real, attrs, dom = _rare_category_data()
    st = RiskSettings(
        n_outliers=1,
        n_random=1,
        n_shadow=2,
        n_synth=2,
        train_rows=100,
        folds=2,
        rf_trees=10,
        canaries=50,
        disclosure_rows=300,
        n_jobs=1,
    )
    res = audit_privacy(
        real, attrs, dom, [("A", "B"), ("C", "D")], INDEPENDENT, {"sigma": 5.0}, st, Policy(), 1.0, 1e-4
    )
    card = Card.model_validate_json(Path(released["result"].card_json).read_text())
    assert card.audit_sections == {}  # releases without the audits are unchanged
    out = render(card.model_copy(update={"audit_sections": {"privacy_evidence": privacy_section(res)}}))
    assert "<h2>Privacy evidence</h2>" in out["card.html"] and out["card.html"].count("<svg") >= 3
    assert "## Privacy evidence — " + res.verdict.upper() in out["card.md"]
    assert json.loads(out["card.json"])["audit_sections"]["privacy_evidence"]["verdict"] == res.verdict
    checks = audit_checks(res)
    assert [c.passed for c in checks] == [c.level == "pass" for c in res.checks]
    assert all(c.severity == "block" for c, r in zip(checks, res.checks) if r.level == "fail")


def test_release_publishes_the_full_report_and_the_card_links_it(released):
    """The utility_report stage keeps its summary (utility.json) and adds the full report; the card shows it."""
    d = Path(released["result"].path)
    assert (d / "artifacts" / "utility.json").is_file()  # the existing summary contract is unchanged
    full = json.loads((d / "artifacts" / "utility_report.json").read_text())
    assert full["datasets"]["synthetic"]["specks"]["seeds"] == 20
    html = (d / "utility_report.html").read_text()
    assert "What this data is and is not fit for" in html
    card = json.loads((d / "card.json").read_text())
    assert card["utility_report"]["fitness"]["statement"] == full["fitness"]["statement"]
    card_html = (d / "card.html").read_text()
    assert 'href="utility_report.html"' in card_html and "What this data is and is not fit for" in card_html
    assert "utility_report.html" in (d / "card.md").read_text()
    from sdgov.registry import Registry

    assert Registry(released["root"]).verify() == []
