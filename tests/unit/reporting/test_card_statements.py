"""Issue 14: the card's statements are honest — one verdict, calibrated fitness, exact ε, a readable trail."""

from __future__ import annotations

import json

import pytest

from sdgov.agreement.spec import PrivacySpec
from sdgov.audits.protocol import AuditReport, Check
from sdgov.budget.accounting import epsilon_pld, plan_privacy
from sdgov.reporting.verdict import overall_verdict
from sdgov.utility.fitness import statement, task_verdicts


def _report(*checks: Check) -> AuditReport:
    blocked = any(not c.passed and c.severity == "block" for c in checks)
    return AuditReport(verdict="fail" if blocked else "pass", checks=list(checks), not_run=[])


OK = Check(name="measurements are exactly Φ", passed=True, detail="")
WARN = Check(name="privacy: small synthetic cells", passed=False, detail="", severity="warn")
FAIL = Check(name="decomposability test", passed=False, detail="")


def test_one_verdict_from_every_check():
    assert overall_verdict(_report(OK)).label == "pass"
    v = overall_verdict(_report(OK, WARN, WARN.model_copy(update={"name": "privacy: exact matches"})))
    assert v.result == "pass" and v.label == "pass with 2 warnings"
    assert v.warnings == ["privacy: small synthetic cells", "privacy: exact matches"]
    v = overall_verdict(_report(OK, WARN, FAIL))
    assert v.label == "fail" and v.failures == ["decomposability test"] and v.warnings == [WARN.name]


def test_a_section_verdict_never_contradicts_the_overall_one():
    """A section that says WARN (or FAIL) without a failed row of its own still counts; its own rows count once."""
    sections = {"privacy_risk": {"verdict": "warn", "title": "Privacy evidence"}}
    assert overall_verdict(_report(OK), sections).label == "pass with 1 warning"
    assert overall_verdict(_report(OK, WARN), sections).warnings == [WARN.name]  # not counted twice
    failing = {"decomposability": {"verdict": "fail", "title": "Decomposability"}}
    assert overall_verdict(_report(OK), failing).failures == ["Decomposability"]
    assert overall_verdict(_report(OK), {"decomposability": {"verdict": "pass"}}).label == "pass"


def _table(rmse: float, boot: float, ind: float) -> dict[str, list[dict]]:
    def t(r: float) -> dict:
        return {"name": "3way", "kind": "table", "attributes": ["A", "B", "C"], "where": {}, "rmse": r, "tvd": 0.1}

    return {"synthetic": [t(rmse)], "bootstrap": [t(boot)], "independent": [t(ind)]}


def test_a_table_is_fit_only_within_125_percent_of_a_real_resample():
    """App 1's 3-way table: RMSE 35.9 vs 20.4 for a real resample (1.76 ×) was called "fit"."""
    [v] = task_verdicts(_table(35.9, 20.4, 60.0))
    assert v["verdict"] == "partly fit" and "1.76 ×" in v["detail"] and "≤ 1.25 ×" in v["detail"]
    assert task_verdicts(_table(25.4, 20.4, 60.0))[0]["verdict"] == "fit"  # 1.245 ×
    assert task_verdicts(_table(25.6, 20.4, 60.0))[0]["verdict"] == "partly fit"  # 1.255 ×


def _gap(rmse: float, sign: float, boot_sign: float = 1.0) -> dict[str, list[dict]]:
    def g(r: float, s: float) -> dict:
        return {
            "name": "gap",
            "kind": "gap",
            "groups": [1, 2],
            "by": ["Occupation"],
            "rmse_pp": r,
            "sign_agreement": s,
            "cells": [{"real": 10.0}, {"real": -5.0}],
        }

    return {"synthetic": [g(rmse, sign)], "bootstrap": [g(2.0, boot_sign)], "independent": [g(10.0, 0.5)]}


def test_a_gap_with_the_sign_wrong_in_a_fifth_of_cells_is_not_fit():
    [v] = task_verdicts(_gap(2.1, 0.8))
    assert v["verdict"] == "partly fit" and "80.0% of cells (fit needs ≥ 95.0%)" in v["detail"]
    assert task_verdicts(_gap(2.1, 1.0))[0]["verdict"] == "fit"
    assert task_verdicts(_gap(2.1, 0.8, boot_sign=0.8))[0]["verdict"] == "fit"  # as good as a real resample


def test_association_figures_have_the_digits_the_rule_needs():
    """B = 0.948941 was printed "0.95" beside the rule "B < 0.95"."""
    generic = {
        "bivariate": {"B": [[1.0, 0.948941], [0.948941, 1.0]]},
        "in_phi": [[True, False], [False, True]],
        "specks": {"median_ks": 0.1},
    }
    st = statement([], generic, ["Economic Activity", "Health"])
    assert "B = 0.9489 < 0.95" in st["statement"] and st["not_fit_pairs"] == [["Economic Activity", "Health"]]


@pytest.mark.parametrize(
    "privacy, cliques, delta, zcdp, pld",
    [
        ({"sigma": 10}, [("A", "B"), ("A", "C"), ("B", "C")], 1e-5, 0.680, 0.620),  # App 1 of the paper
        ({"epsilon": 1.0}, [(f"A{i}", "B") for i in range(11)], 1e-5, 1.000, 0.915),  # the demo: 11 tables
    ],
)
def test_epsilon_of_the_exact_composition_beside_the_zcdp_bound(privacy, cliques, delta, zcdp, pld):
    plan = plan_privacy(PrivacySpec(**privacy), cliques, delta=delta)
    assert plan.epsilon == pytest.approx(zcdp, abs=5e-4)
    assert epsilon_pld(plan) == pytest.approx(pld, abs=1e-3)
    assert epsilon_pld(plan) < plan.epsilon


def test_the_trail_says_sdgov_published_and_tags_only_decisions():
    from sdgov.registry.trail import render_text, render_trail_html

    def row(seq: int, event: str, who: str, role: str, decision: str, comment: str = "") -> dict:
        return {
            "seq": seq,
            "time": "2026-11-23T11:38:23Z",
            "who": who,
            "role": role,
            "event": event,
            "what": {"released": "published the release", "release_approved": "approved the release candidate"}.get(
                event, event
            ),
            "dataset": "toyland",
            "agreement_sha256": "a" * 64,
            "release_id": "",
            "run_id": "",
            "decision": decision,
            "comment": comment,
            "artifacts": {"agreement": "b" * 64},
            "hash": "c" * 64,
            "prev": "",
        }

    ledger = json.dumps({"dataset": "toyland", "rho": 0.03})
    t = {
        "root": "/r",
        "verified": True,
        "problems": [],
        "dataset": None,
        "total_events": 3,
        "events": [
            row(0, "budget_spent", "sdgov", "system", "approve", ledger),
            row(1, "release_approved", "Carl Controller", "controller", "approve"),
            row(2, "released", "Carl Controller", "controller", "approve"),
        ],
    }
    text = render_text(t).splitlines()
    spent, approved, released = (next(line for line in text if line.startswith(f"#{i} ")) for i in range(3))
    assert "[approve]" not in spent and "[approve]" in approved and "[approve]" not in released
    assert "sdgov (system) published the release, approved by Carl Controller (controller)" in released
    assert "agreement hash aaaaaaaaaaaa…" in released and "      agreement hash: " + "b" * 64 in text
    assert "file sha256" not in "\n".join(text)  # only the agree stages name agreement.json's bytes (issue 39)
    html = render_trail_html(t)
    assert "<dt>rho</dt><dd>0.03</dd>" in html and "{&#34;dataset&#34;" not in html and '{"dataset"' not in html
    assert "table-layout:fixed" in html and "overflow-wrap:anywhere" in html


def test_the_card_names_package_versions_not_the_machine():
    """Issue 38 item 8: card.json carried the worker's kernel version, libc and Python build (platform.platform())."""
    import platform

    from sdgov.reporting.card import PACKAGES, environment

    env = environment()
    assert set(env) == {"python", "packages", "sdgov", "git_commit"} and set(env["packages"]) == set(PACKAGES)
    assert env["python"] == platform.python_version()  # a version, not a build
    text = json.dumps(env)
    for machine in {platform.platform(), platform.release(), platform.python_build()[1]} - {""}:
        assert machine not in text, machine
