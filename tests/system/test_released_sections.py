"""The released demo's card carries the privacy-evidence and utility-report sections (one real release, shared)."""

from __future__ import annotations

import json
from pathlib import Path

from sdgov.agreement.sections.privacy_risk import RiskPolicy, RiskSettings
from sdgov.audits.privacy.run import PrivacyAuditRun
from tests.fixtures.rare_category import INDEPENDENT, rare_category_data


def _evidence(released) -> tuple[Path, dict]:
    [run_dir] = (released["root"] / "runs").iterdir()
    return run_dir, json.loads((run_dir / "evidence" / "evidence.json").read_text())


def test_evidence_report_renders_the_privacy_risk_section(released):
    """The controller's evidence report takes the section; its HTML shows verdict, checks and the two plots. The
    public card shows only the section's verdict."""
    from sdgov.audits.privacy.audit import audit_checks
    from sdgov.audits.privacy.report import privacy_section
    from sdgov.reporting.card import Card, render
    from sdgov.reporting.evidence import EvidenceReport, render_evidence

    real, attrs, dom = rare_category_data()
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
    res = PrivacyAuditRun(
        real=real,
        attributes=attrs,
        domain=dom,
        cliques=[("A", "B"), ("C", "D")],
        generator=INDEPENDENT,
        params={"sigma": 5.0},
        settings=st,
        policy=RiskPolicy(),
        claimed_epsilon=1.0,
        claimed_delta=1e-4,
    ).run()
    section = privacy_section(res)
    _, evidence = _evidence(released)
    assert evidence["audit_sections"] == {}  # releases without the audits have no sections
    report = EvidenceReport.model_validate(evidence).model_copy(update={"audit_sections": {"privacy_risk": section}})
    html = render_evidence(report)["evidence.html"]
    assert "<h2>Privacy evidence</h2>" in html and html.count("<svg") >= 3
    assert section["summary"] and section["summary"] in html.replace("&#39;", "'")
    card = Card.model_validate_json(Path(released["result"].card_json).read_text())
    public = {"privacy_risk": {"title": "Privacy evidence", "verdict": res.verdict}}
    out = render(card.model_copy(update={"audit_sections": public}))
    assert f'Privacy evidence (overall)</td><td class="{res.verdict}">{res.verdict}' in out["card.html"]
    assert "<h2>Privacy evidence</h2>" not in out["card.html"] and section["summary"] not in out["card.html"]
    checks = audit_checks(res)
    assert [c.passed for c in checks] == [c.level == "pass" for c in res.checks]
    assert all(c.severity == "block" for c, r in zip(checks, res.checks) if r.level == "fail")


def test_the_utility_report_stays_with_the_controller_and_the_card_judges_only_from_public_facts(released):
    """The utility_report stage keeps its summary (utility.json) and the full report in the run directory (computed
    on the confidential data: never published). Its fitness verdicts compare with the real data, so they are the
    controller's evidence (issue 25); the card judges only from Φ: every pair Φ did not measure is not fit for
    association analysis, whatever the real data says."""
    d = Path(released["result"].path)
    run_dir, evidence = _evidence(released)
    assert (run_dir / "utility.json").is_file()  # the existing summary contract is unchanged
    full = json.loads((run_dir / "utility_report.json").read_text())
    assert full["datasets"]["synthetic"]["specks"]["seeds"] == 20
    assert "What this data is and is not fit for" in (run_dir / "utility_report.html").read_text()
    assert not list(d.rglob("utility*")), "the utility report is not published"
    assert evidence["utility_report"]["fitness"]["statement"] == full["fitness"]["statement"]
    card = json.loads((d / "card.json").read_text())
    agreement = json.loads((d / "artifacts" / "agreement.json").read_text())["agreement"]
    measured = [set(c) for c in agreement["cliques"]]
    unmeasured = [
        f"{a} × {b}"
        for i, a in enumerate(agreement["attributes"])
        for b in agreement["attributes"][i + 1 :]
        if not any({a, b} <= c for c in measured)
    ]
    assert unmeasured and card["fitness"]["not_fit_for"] == [
        f"analysing the association between {'; '.join(unmeasured)}: these pairs were not in Φ, so the synthetic "
        "data shows only what the measured tables imply"
    ]  # a function of Φ alone: the same sentence whichever of these pairs the real data would have flagged
    assert card["fitness"]["fit_for"] == card["fitness"]["partly_fit_for"] == []  # the real-data verdicts: not here
    assert "B = " not in json.dumps(card["fitness"]), "the association figures are the controller's"
    real_judged = [" × ".join(p) for p in full["fitness"]["not_fit_pairs"]]
    evidence_html = (run_dir / "evidence" / "evidence.html").read_text()
    assert all(p in evidence_html for p in real_judged)  # the controller reads the real-data judgements
    card_html = (d / "card.html").read_text()
    assert 'href="utility_report.html"' not in card_html and "What this data is and is not fit for" in card_html
    from sdgov.registry.log import Registry

    assert Registry(released["root"]).verify() == []
