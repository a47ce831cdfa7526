"""Issue 26 item 3: a split synthesis's pre-registered audits run once per part — each on that part's agreement,
plan, ψ and records only — and compose into one verdict per part and one overall verdict that fails if any part
fails; the pre-flight covers every part, and the utility summary breaks down by part. The stages run as plain
functions (no Prefect server), the audit checks as stubs: the statistics are the audits' own tests'."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest

from sdgov.agreement.sections.decomposability import DecomposabilitySettings
from sdgov.audits.parts import combine_parts
from sdgov.audits.protocol import AuditContext, AuditOutcome, AuditReport, Check
from sdgov.audits.run import run_audits
from sdgov.base.errors import PreflightError
from sdgov.budget.accounting import part_plan
from sdgov.governance.site import Site
from sdgov.reporting.verdict import overall_verdict, part_verdicts
from tests.conftest import init_registry, make_demo_inputs

SPLIT = {
    "attribute": "Sex",
    "parts": [
        {"name": "men", "codes": [1], "share": 1, "phi": {"marginals": [["Region", "Age"], ["Age", "Health"]]}},
        {"name": "women", "codes": [2], "share": 3, "phi": {"marginals": [["Region", "Age"], ["Region", "Health"]]}},
    ],
}


@pytest.fixture(scope="module", autouse=True)
def prefect_server():
    """Overrides the shared conftest's session Prefect test server: nothing here talks to Prefect."""
    yield


def _outcome(verdict: str, *checks: Check) -> AuditOutcome:
    return AuditOutcome(checks=list(checks), result={"verdict": verdict}, section={"title": "Test", "verdict": verdict})


ROW = Check(name="decomposability test", passed=True, detail="p = 0.5")


def test_the_parts_rows_are_named_by_part_and_the_section_is_as_bad_as_its_worst_part():
    failing = ROW.model_copy(update={"passed": False, "detail": "p = 1e-6"})
    combined = combine_parts("Sex", {"men": _outcome("fail", failing), "women": _outcome("pass", ROW)})
    assert [(c.name, c.part, c.passed) for c in combined.checks] == [
        ("decomposability test (part 'men')", "men", False),
        ("decomposability test (part 'women')", "women", True),
    ]
    assert combined.section is not None and combined.section["verdict"] == "fail"
    assert combined.section["title"] == "Test" and combined.section["split"] == "Sex"
    assert {n: s["verdict"] for n, s in combined.section["parts"].items()} == {"men": "fail", "women": "pass"}
    assert combined.result == {"split": "Sex", "parts": {"men": {"verdict": "fail"}, "women": {"verdict": "pass"}}}
    warned = combine_parts("Sex", {"men": _outcome("warn"), "women": _outcome("pass")})
    assert warned.section is not None and warned.section["verdict"] == "warn"


def test_one_verdict_per_part_and_the_release_fails_if_any_part_fails():
    structural = Check(name="row count as agreed", passed=True, detail="")  # the released file as a whole
    warning = Check(name="privacy: small cells", passed=False, detail="", severity="warn")
    dec = combine_parts(
        "Sex", {"men": _outcome("fail", ROW.model_copy(update={"passed": False})), "women": _outcome("pass", ROW)}
    )
    risk = combine_parts("Sex", {"men": _outcome("pass"), "women": _outcome("warn", warning)})
    report = AuditReport(verdict="fail", checks=[structural, *dec.checks, *risk.checks], not_run=[])
    sections = {"decomposability": dec.section, "privacy_risk": risk.section}
    parts = part_verdicts(report, sections)
    assert list(parts) == ["men", "women"]
    assert parts["men"].result == "fail" and parts["men"].failures[0] == "decomposability test (part 'men')"
    # the warning row counts once (the privacy section's own verdict is made of its rows)
    assert parts["women"].label == "pass with 1 warning"
    assert parts["women"].warnings == ["privacy: small cells (part 'women')"]
    whole = overall_verdict(report, sections)
    assert whole.result == "fail" and "decomposability test (part 'men')" in whole.failures
    # every part passing: the release passes; an unsplit release has no part verdicts
    honest = combine_parts("Sex", {"men": _outcome("pass", ROW), "women": _outcome("pass", ROW)})
    report = AuditReport(verdict="pass", checks=[structural, *honest.checks], not_run=[])
    assert {p: v.label for p, v in part_verdicts(report, {"d": honest.section}).items()} == dict.fromkeys(
        ("men", "women"), "pass"
    )
    assert overall_verdict(report, {"d": honest.section}).label == "pass"
    assert part_verdicts(AuditReport(verdict="pass", checks=[structural, ROW], not_run=[])) == {}


@dataclass
class Recorder:
    """A pre-registered check (the ``audit:`` section) that records what each run of it was given."""

    name: ClassVar[str] = "decomposability"
    section: ClassVar[str | None] = "audit"
    settings_model: ClassVar[type] = DecomposabilitySettings
    not_run: ClassVar[str] = "not run"
    title: ClassVar[str] = "recorder"
    row_prefix: ClassVar[str | None] = None
    seen: list[dict[str, Any]] = field(default_factory=list)

    def generators(self, settings: Any, agreement: Any) -> list:
        return []

    def run(self, context: AuditContext, settings: Any) -> AuditOutcome:
        records = context.confidential_sample(10**6, 0)
        self.seen.append(
            {
                "spec": context.agreement.spec_name,
                "cliques": [tuple(c) for c in context.agreement.cliques],
                "plan": context.plan,
                "psi": sorted({m.part for m in context.measurements.measurements}),
                "sex": sorted(set(records["Sex"])),
                "records": len(records),
                "synthetic": sorted(set(pd.read_parquet(context.synthetic_file)["Sex"].astype(str))),
            }
        )
        fails = context.agreement.spec_name.endswith(".men")  # the check finds a problem in one part
        return AuditOutcome(
            checks=[Check(name="recorded", passed=not fails, detail="")],
            result={},
            section={"verdict": "fail" if fails else "pass"},
        )


@pytest.fixture(scope="module")
def split_release(tmp_path_factory):
    """A split release's agree, measure and generate stages on 1,500 demo records (a tiny Φ per part)."""
    from sdgov.artifacts import load_agreement
    from sdgov.contracts import GenerateInput
    from sdgov.tasks.generate import generate
    from sdgov.tasks.measure import measure
    from tests.conftest import agree

    tmp = tmp_path_factory.mktemp("split")
    spec = make_demo_inputs(
        tmp / "in", rows=1500, phi=None, split=SPLIT, privacy={"rho": 1.0}, generator={"name": "ipf", "iterations": 20}
    )
    raw = spec.read_text() + "audit: {K: 7}\n"  # the lightest K the pre-flight accepts (never run here)
    spec.write_text(raw)
    root = init_registry(tmp / "registry", sigma_floor=1, max_epsilon_per_release=10)  # σ by ρ's share
    agreed = agree(spec, Site.resolve(str(root)), "t0")
    measured = measure.fn(agreed, Site.resolve(str(root)))
    agreement = load_agreement(agreed.agreement)
    generated = generate.fn(
        GenerateInput(
            measurements=measured.measurements,
            schema_file=agreed.schema_file,
            generator=agreement.generator,
            rows=1500,
            seed=agreement.seed,
            out_dir=str(Path(agreed.run_dir) / "generate"),
        )
    )
    return agreed, measured, generated


def test_each_part_is_audited_on_its_own_agreement_plan_psi_and_records_only(split_release):
    from sdgov.audits.context import audit_context
    from sdgov.base.executor import executor_for

    agreed, measured, generated = split_release
    context = audit_context(agreed, measured, generated, executor_for, lambda _: None)
    recorder = Recorder()
    report, evidence = run_audits(context, audits=(recorder,))
    men, women = recorder.seen
    codes = pd.read_parquet(agreed.codes.path)
    assert men["spec"].endswith(".men") and women["spec"].endswith(".women")
    assert men["cliques"] == [("Region", "Age"), ("Age", "Health")]
    assert women["cliques"] == [("Region", "Age"), ("Region", "Health")]
    assert (men["psi"], women["psi"]) == (["men"], ["women"])  # only the part's own noisy tables
    # only the part's records (Sex: cell 0 is code 1, cell 1 code 2), all of them
    assert (men["sex"], women["sex"]) == ([0], [1])
    assert men["records"] == int((codes["Sex"] == 0).sum()) and women["records"] == int((codes["Sex"] == 1).sum())
    assert (men["synthetic"], women["synthetic"]) == (["1"], ["2"])  # the part's synthetic records only
    assert context.confidential_was_read  # recorded as read: the stage lists the data among its inputs
    assert not list(Path(context.synthetic_file).parent.glob(".parts-*"))  # the parts' scratch files are gone
    # each part's own budget: its share of ρ (1 : 3 of ρ = 1), the σ of its marginals, the ε of its ρ alone
    whole = context.plan
    assert men["plan"].rho == pytest.approx(0.25) and women["plan"].rho == pytest.approx(0.75)
    assert men["plan"].rho + women["plan"].rho == pytest.approx(whole.rho)
    assert men["plan"].epsilon < women["plan"].epsilon < whole.epsilon
    assert {m.part for m in men["plan"].marginals} == {"men"} and len(men["plan"].marginals) == 2
    # one failing part fails the release; the structural checks ran once, on the whole file
    assert report.verdict == "fail"
    assert [(c.name, c.passed) for c in report.checks if c.part] == [
        ("recorded (part 'men')", False),
        ("recorded (part 'women')", True),
    ]
    assert evidence["decomposability"]["section"]["verdict"] == "fail"
    assert part_plan(whole, "women") == women["plan"]


def test_the_pre_flight_checks_every_part_before_the_draw(tmp_path):
    """A part too small for the privacy-risk audit's settings, and an audit generator that fails on one part's Φ
    only: both refused before anything is measured, each naming the part."""
    from sdgov.intake.inputs import check_spec_and_data

    risk = {"settings": {"n_outliers": 2, "n_random": 1, "train_rows": 1500, "n_shadow": 2}}  # needs 1,503
    by_region = {
        "attribute": "Region",
        "parts": [
            {"name": "north", "codes": ["N"], "phi": {"marginals": [["Age", "Health"]]}},
            {"name": "rest", "codes": ["S", "E", "W"], "phi": {"marginals": [["Region", "Age"], ["Age", "Health"]]}},
        ],
    }
    spec = make_demo_inputs(
        tmp_path / "a", rows=3000, phi=None, split=by_region, privacy={"rho": 1.0}, privacy_risk=risk
    )
    region = pd.read_csv(spec.parent / "data.csv")["Region"]
    assert (region == "N").sum() < 1503 <= (region != "N").sum()  # the whole data and one part would do
    with pytest.raises(PreflightError) as caught:
        check_spec_and_data(spec)
    (line,) = [p.one_line() for p in caught.value.problems]
    assert "split part(s) 'north' hold(s) fewer records" in line and "privacy_risk.settings" in line
    assert str((region == "N").sum()) not in line  # the count itself is not said
    risk["settings"]["train_rows"] = 2000  # more than either part of a split by sex holds
    spec = make_demo_inputs(tmp_path / "b", rows=3000, phi=None, split=SPLIT, privacy={"rho": 1.0}, privacy_risk=risk)
    with pytest.raises(PreflightError, match="split part\\(s\\) 'men', 'women' hold"):
        check_spec_and_data(spec)
    audit = {"generator": "test_crash_in_fit"}
    spec = make_demo_inputs(tmp_path / "c", rows=300, phi=None, split=SPLIT, privacy={"rho": 1.0}, audit=audit)
    with pytest.raises(PreflightError) as caught:
        check_spec_and_data(spec)
    lines = [p.one_line() for p in caught.value.problems]
    assert any("audit.generator (part 'men')" in line for line in lines), lines
    assert any("audit.generator (part 'women')" in line for line in lines), lines


def test_the_utility_summary_breaks_down_by_part():
    """A synthetic file right overall but wrong in one part: the part's own errors show it."""
    from sdgov.agreement.spec import AgreedPart, AgreedSplit, PrivacySpec
    from sdgov.data.schema import Schema
    from sdgov.engines.recordset import FrameRecords
    from sdgov.generators.settings import GeneratorSpec
    from sdgov.utility.summary import part_summaries

    schema = Schema.model_validate(
        {
            "name": "t",
            "columns": [
                {
                    "name": "Kind",
                    "kind": "categorical",
                    "categories": [{"code": 1, "label": "x"}, {"code": 2, "label": "y"}],
                },
                {
                    "name": "A",
                    "kind": "categorical",
                    "categories": [{"code": 1, "label": "x"}, {"code": 2, "label": "y"}],
                },
            ],
        }
    )
    rng = np.random.default_rng(0)
    kind = np.repeat([0, 1], 500)
    real = pd.DataFrame({"Kind": kind, "A": np.where(kind == 0, 0, 1)})  # A follows Kind exactly
    synth = pd.DataFrame({"Kind": kind, "A": np.where(kind == 0, 0, rng.integers(0, 2, 1000))})  # part 2 random
    part = lambda name, cell: AgreedPart(
        name=name,
        codes=[str(cell + 1)],
        cells=[cell],
        attributes=["A"],
        cliques=[("A",)],
        privacy=PrivacySpec(rho=1),
        generator=GeneratorSpec(name="ipf"),
    )
    split = AgreedSplit(attribute="Kind", parts=[part("one", 0), part("two", 1)])
    parts = part_summaries(FrameRecords(real, schema), FrameRecords(synth, schema), split)
    assert (parts["one"].real_rows, parts["two"].synthetic_rows) == (500, 500)
    assert parts["one"].max_phi_tvd == 0 and parts["two"].max_phi_tvd > 0.4
    assert json.loads(parts["two"].model_dump_json())["phi"][0]["clique"] == ["A"]


# ------------------------------------------------------------------------------------ the standalone audit commands

LEAK_IN_MEN = ["--generator", "test_leaks_where_phi_has"]  # men's Φ holds Age × Health
FAST_RISK = ["--outliers", "1", "--random-targets", "1", "--shadows", "2", "--synth-sets", "2", "--parts", "disclosure"]


@pytest.fixture(scope="module")
def split_spec(tmp_path_factory) -> Path:
    """3,000 demo records split by sex (men: a quarter of ρ), a two-table Φ per part: no registry, no release."""
    split = {**SPLIT, "parts": [{k: v for k, v in p.items() if k != "share"} | {"share": s} for p, s in zip(
        SPLIT["parts"], (1, 3))]}  # fmt: skip
    return make_demo_inputs(
        tmp_path_factory.mktemp("standalone"),
        rows=3000,
        phi=None,
        split=split,
        privacy={"rho": 0.5},
        generator={"name": "ipf", "iterations": 200},
    )


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from sdgov.commands import main

    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_standalone_decomposability_audit_runs_once_per_part_and_fails_the_leaking_part(split_spec, capsys):
    """``sdgov audit decomposability`` on a split spec: each part tested on its own Φ and records; a generator that
    leaks a table outside Φ in the men's part only fails that part and the whole (exit 1), in one verdict per part
    and one overall, printed and with ``--json``."""
    params = ["--params", json.dumps({"phi_has": ["Age", "Health"], "iterations": 200})]
    small = ["--K", "7", "--rows", "20000", "--seed", "1", "--control", "none"]
    code, out, err = _cli(capsys, "audit", "decomposability", "--spec", str(split_spec), *LEAK_IN_MEN, *params, *small)
    assert code == 1, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("part 'men': FAIL") and lines[1].startswith("part 'women': PASS")
    assert lines[2].startswith("overall: FAIL")
    code, out, _ = _cli(capsys, "audit", "decomposability", "--spec", str(split_spec), *LEAK_IN_MEN, *params, *small,
                        "--json")  # fmt: skip
    payload = json.loads(out)
    assert code == 1 and payload["verdict"] == "fail" and payload["test"] == "decomposability"
    assert {p: r["verdict"] for p, r in payload["parts"].items()} == {"men": "fail", "women": "pass"}
    assert all(r["K"] == 7 and r["p_value"] is not None for r in payload["parts"].values())


def test_the_standalone_privacy_audit_runs_once_per_part_claiming_each_parts_share(split_spec, capsys, tmp_path):
    """``sdgov audit privacy`` on a split spec: each part audited on its records, claiming the ε of its own share of
    ρ (a quarter and three quarters of it, not the whole); one verdict per part and the overall (the worst)."""
    from sdgov.budget.accounting import epsilon_of_rho

    out_file = tmp_path / "evidence.json"
    code, out, err = _cli(capsys, "audit", "privacy", "--spec", str(split_spec), *FAST_RISK, "--train-rows", "100",
                          "--json", "--out", str(out_file))  # fmt: skip
    payload = json.loads(out)
    assert list(payload["parts"]) == ["men", "women"] and payload["test"] == "privacy"
    verdicts = [r["verdict"] for r in payload["parts"].values()]
    assert payload["verdict"] == max(verdicts, key=["pass", "warn", "fail"].index)
    assert code == (1 if payload["verdict"] == "fail" else 0), err
    claimed = {p: r["claimed_epsilon"] for p, r in payload["parts"].items()}
    delta = payload["parts"]["men"]["claimed_delta"]
    assert claimed == pytest.approx({"men": epsilon_of_rho(0.125, delta), "women": epsilon_of_rho(0.375, delta)})
    assert set(json.loads(out_file.read_text())["parts"]) == {"men", "women"}


def test_a_standalone_audit_a_part_cannot_hold_is_one_line_naming_the_part(split_spec, capsys):
    """Bad input on a split spec: settings that draw more records than a part holds are one line naming the part,
    exit 2, no traceback; a bad option is refused as for one model."""
    code, out, err = _cli(capsys, "audit", "privacy", "--spec", str(split_spec), *FAST_RISK[:-2], "--parts", "mia",
                          "--train-rows", "5000")  # fmt: skip
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert "split part 'men'" in err and "train_rows" in err
    code, _, err = _cli(capsys, "audit", "decomposability", "--spec", str(split_spec), *LEAK_IN_MEN, "--K", "1")
    assert code == 2 and err.count("\n") == 1 and "--K" in err
