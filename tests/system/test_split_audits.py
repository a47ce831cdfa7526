"""Issue 26 item 3, acceptance: a split release with both audits pre-registered, through the real release flow
(Prefect server, registry, ledger). An honest generator passes in both parts; a generator that leaks a table
outside Φ in one part fails that part — and with it the release — while the other part passes. 3,000 demo records
split by sex, a two-table Φ per part and the small but real audit settings of ``test_release_audits``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdgov.audits.protocol import AuditReport
from sdgov.base.errors import SdgovError
from sdgov.registry.log import Registry
from sdgov.reporting.verdict import part_verdicts
from tests.conftest import init_registry, make_demo_inputs, own_authority
from tests.fixtures.audit_settings import AUDIT, RISK

SPLIT = {
    "attribute": "Sex",
    "parts": [
        {"name": "men", "codes": [1], "phi": {"marginals": [["Region", "Age"], ["Age", "Health"]]}},
        {"name": "women", "codes": [2], "phi": {"marginals": [["Region", "Age"], ["Region", "Health"]]}},
    ],
}
SMALL = {"disclosure_rows": 300}  # three disjoint sets of it fit in a part's reference records (~1,500)
LEAKS_IN_MEN = {  # IPF on Φ, plus a table outside Φ where Φ holds Age × Health: the men's part only
    "generator": "test_leaks_where_phi_has",
    "generator_params": {"phi_has": ["Age", "Health"], "memo": True},
}


def _split_release(tmp_path: Path, audit: dict, risk: dict) -> tuple[Path, Path]:
    spec = make_demo_inputs(
        tmp_path / "in",
        rows=3000,
        phi=None,
        split=SPLIT,
        privacy={"rho": 0.5},
        generator={"name": "ipf", "iterations": 200},
        audit=audit,
        privacy_risk=risk,
    )
    return spec, init_registry(tmp_path / "registry", sigma_floor=1, max_epsilon_per_release=10)


def _part_verdicts(run_dir: Path) -> dict[str, str]:
    report = AuditReport.model_validate_json((run_dir / "audit.json").read_text())
    sections = {
        n: json.loads((run_dir / f"{n}.json").read_text())["section"] for n in ("decomposability", "privacy_risk")
    }
    return {part: v.result for part, v in part_verdicts(report, sections).items()}


def test_an_honest_split_release_passes_both_audits_in_every_part(tmp_path, prefect_server):
    from sdgov.flows.release import release_flow

    risk = {**RISK, "settings": {**RISK["settings"], **SMALL}}
    spec, root = _split_release(tmp_path, {**AUDIT, "generator_params": {"iterations": 200, "memo": True}}, risk)
    with own_authority(tmp_path):
        result = release_flow(spec_path=str(spec), registry_root=str(root))
    [run_dir] = (root / "runs").iterdir()
    assert _part_verdicts(run_dir) == {"men": "pass", "women": "pass"}
    evidence = json.loads((run_dir / "evidence" / "evidence.json").read_text())
    assert {p: v["result"] for p, v in evidence["part_verdicts"].items()} == {"men": "pass", "women": "pass"}
    dec = evidence["audit_sections"]["decomposability"]
    assert set(dec["parts"]) == {"men", "women"} and dec["split"] == "Sex"
    assert all(s["K"] == AUDIT["K"] for s in dec["parts"].values())  # each part tested at the pre-registered K
    html = (run_dir / "evidence" / "evidence.html").read_text()
    assert "one verdict per part" in html and html.count("<h2>Privacy evidence</h2>") == 2
    # the public card: every audit row names its part (controller-side), each section says it ran per part, and
    # each part's ρ — composed into the release's — with the ε of its ρ alone
    card = json.loads((Path(result.path) / "card.json").read_text())
    parts = {c["name"].rsplit("(part ", 1)[1] for c in card["audit"]["checks"] if "(part " in c["name"]}
    assert parts == {"'men')", "'women')"}
    assert {c["result"] for c in card["audit"]["checks"] if "(part " in c["name"]} == {"controller-side"}
    assert {n: s["parts"] for n, s in card["audit_sections"].items()} == dict.fromkeys(
        ("decomposability", "privacy_risk"), ["men", "women"]
    )
    split = {p["name"]: p for p in card["split"]["parts"]}
    assert split["men"]["rho"] + split["women"]["rho"] == pytest.approx(card["privacy"]["rho"])
    assert 0 < split["men"]["epsilon"] < card["privacy"]["epsilon"]
    md = (Path(result.path) / "card.md").read_text().splitlines()
    assert len([line for line in md if "(overall)** — controller-side (run once per part — men, women" in line]) == 2
    # the utility report per part: each part's synthetic records against its own real records
    utility = json.loads((run_dir / "utility_report.json").read_text())
    assert set(utility["parts"]) == {"men", "women"}
    assert sum(u["synthetic_rows"] for u in utility["parts"].values()) == utility["rows"]["synthetic"]
    assert Registry(root).verify() == []


def test_a_generator_leaking_outside_phi_in_one_part_fails_that_part(tmp_path, prefect_server):
    from sdgov.flows.release import release_flow

    risk = {**RISK, **LEAKS_IN_MEN, "settings": {**RISK["settings"], **SMALL}}
    risk["generator_params"] = {**LEAKS_IN_MEN["generator_params"], "iterations": 200, "sigma": 2.0}
    spec, root = _split_release(tmp_path, {**AUDIT, **LEAKS_IN_MEN}, risk)
    with own_authority(tmp_path), pytest.raises(SdgovError, match="the audit failed"):
        release_flow(spec_path=str(spec), registry_root=str(root))
    [run_dir] = (root / "runs").iterdir()
    assert _part_verdicts(run_dir) == {"men": "fail", "women": "pass"}
    report = json.loads((run_dir / "audit.json").read_text())
    dec = {c["part"]: c["passed"] for c in report["checks"] if c["name"].startswith("decomposability")}
    assert dec == {"men": False, "women": True} and report["verdict"] == "fail"
    reg = Registry(root)
    assert [e.event for e in reg.events()][-1] == "release_blocked"
    assert not (root / "releases").exists() or not any((root / "releases").iterdir())
    assert reg.verify() == []
