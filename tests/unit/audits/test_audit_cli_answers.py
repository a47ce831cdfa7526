"""The audit commands answer like the rest (issue 37 item 6), through the real command: bad input is one line and
exit 2 — never a traceback with exit 1, which a script reading exit codes takes for a *fail* verdict — a split part
with nothing to test is "not testable" while the others get their verdicts, and ``--help`` states the defaults the
command really uses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sdgov.agreement.sections.decomposability import DecomposabilitySettings
from sdgov.agreement.sections.privacy_risk import RiskSettings
from sdgov.commands import main
from tests.conftest import make_demo_inputs

# the men's Φ is their whole Region × Age × Health table: no dataset with those marginals differs from their records
SPLIT = {
    "attribute": "Sex",
    "parts": [
        {"name": "men", "codes": [1], "phi": {"marginals": [["Region", "Age", "Health"]]}},
        {"name": "women", "codes": [2], "phi": {"marginals": [["Region", "Age"], ["Age", "Health"]]}},
    ],
}
SMALL = ["--K", "7", "--rows", "20000", "--seed", "1", "--control", "none"]


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> Path:
    return make_demo_inputs(tmp_path_factory.mktemp("one"), rows=1500)


def _run(capsys, *argv: str) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, [line for line in out.err.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["decomposability", "--generator", "honest_ipf", "--params", '{"iterations": {"nested": 1}}'], "--params"),
        (["privacy", "--params", '{"sigma": {"nested": 1}}'], "--params"),
        (["privacy", "--params", '{"leak": [["A"]]}'], "--params"),
        (["decomposability", "--generator", "honest_ipf", "--params", "[1, 2]"], "--params"),
        (["decomposability", "--generator", "honest_ipf", "--control", "os:system"], "--control"),
        (["decomposability", "--generator", "honest_ipf", "--K", "1"], "--K"),
        (["privacy", "--generator", "no_such_generator"], "--generator"),
        (["privacy", "--settings", '{"seed": {"nested": 1}}'], "privacy settings"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(spec, capsys, argv, where):
    code, out, err = _run(capsys, "audit", *argv[:1], "--spec", str(spec), *argv[1:], "--json")
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("sdgov: error:") and where in err[0], err
    assert json.loads(out)["ok"] is False


def test_a_split_part_with_nothing_to_test_is_not_testable_and_the_others_get_their_verdicts(tmp_path, capsys):
    split_spec = make_demo_inputs(
        tmp_path, rows=3000, phi=None, split=SPLIT, privacy={"rho": 0.5}, generator={"name": "ipf", "iterations": 200}
    )
    code, out, err = _run(capsys, "audit", "decomposability", "--spec", str(split_spec), "--generator",
                          "honest_ipf", *SMALL)  # fmt: skip
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("part 'men': NOT TESTABLE:") and "nothing to test" in lines[0]
    assert lines[1].startswith("part 'women': PASS") and lines[2].startswith("overall: PASS (1 of 2 parts tested")
    code, out, err = _run(capsys, "audit", "decomposability", "--spec", str(split_spec), "--generator",
                          "test_leaks_where_phi_has", "--params", json.dumps({"phi_has": ["Region", "Age"]}), *SMALL,
                          "--json")  # fmt: skip
    payload = json.loads(out)
    assert code == 1 and payload["verdict"] == "fail", err  # the women's part leaks (its Φ holds Region × Age)
    assert payload["parts"]["men"]["verdict"] == "not testable" and payload["parts"]["women"]["verdict"] == "fail"


def test_without_generator_it_runs_what_the_release_runs(tmp_path, capsys):
    """No ``--generator``: the honest audit variant of the spec's generator, as the release's audit stage and ``audit
    privacy`` take it — not a refusal (issue 37 item 6: the audit commands answer like the rest)."""
    ipf = make_demo_inputs(tmp_path, rows=1500, generator={"name": "ipf", "iterations": 50})
    code, out, err = _run(capsys, "audit", "decomposability", "--spec", str(ipf), *SMALL, "--json")
    assert code == 0 and json.loads(out)["generator"] == "honest_ipf", err
    with pytest.raises(SystemExit):
        main(["audit", "decomposability", "--help"])
    assert "the honest audit variant of the spec's generator" in _stated(capsys.readouterr().out, "--generator")


def test_one_model_with_nothing_to_test_is_one_line_and_exit_2(tmp_path, capsys):
    whole = make_demo_inputs(tmp_path, rows=1500, phi={"marginals": [["Region", "Age", "Health"]]})
    code, _, err = _run(capsys, "audit", "decomposability", "--spec", str(whole), "--generator", "honest_ipf", *SMALL)
    assert code == 2 and len(err) == 1 and "nothing to test" in err[0], err


def _stated(help_text: str, flag: str) -> str:
    """The help text of ``flag``, its wrapped lines joined (argparse starts every option's block with "  -")."""
    blocks = re.split(r"\n  (?=-)", help_text)
    block = next(b for b in blocks if b.startswith(f"{flag} "))
    return " ".join(block.split()[2:])


def test_help_states_the_defaults_the_commands_use(capsys):
    with pytest.raises(SystemExit):
        main(["audit", "privacy", "--help"])
    privacy = capsys.readouterr().out
    r = RiskSettings()
    for flag, value in [
        ("--synth-sets", r.n_synth),
        ("--shadows", r.n_shadow),
        ("--outliers", r.n_outliers),
        ("--random-targets", r.n_random),
        ("--train-rows", r.train_rows),
        ("--seed", r.seed),
        ("--jobs", r.n_jobs),
    ]:
        assert f"(default {value})" in _stated(privacy, flag), (flag, _stated(privacy, flag))
    assert r.synth_rows is None and f"--train-rows, i.e. {r.train_rows}" in _stated(privacy, "--rows")
    with pytest.raises(SystemExit):
        main(["audit", "decomposability", "--help"])
    dec = capsys.readouterr().out
    d = DecomposabilitySettings()
    assert f"else {d.K})" in _stated(dec, "--K") and f"else {d.seed})" in _stated(dec, "--seed")
    assert d.rows is None and "10 × the records" in _stated(dec, "--rows")


def test_in_a_release_a_test_with_nothing_to_test_is_a_warning_row_not_a_crash(tmp_path):
    """The release's audit stage runs the same test per part: a part (here one model) whose Φ fixes its whole table
    gives a warning row saying so — the other parts' rows and the release's verdict stand — instead of an error
    that would end the run after its noise was drawn."""
    from types import SimpleNamespace

    from sdgov.agreement.load import load_spec
    from sdgov.audits.decomposability.audit import TEST_ROW, DecomposabilityAudit
    from sdgov.base.executor import executor_for
    from sdgov.engines import load_encoded

    loaded = load_spec(make_demo_inputs(tmp_path, rows=1500, phi={"marginals": [["Region", "Age", "Health"]]}))
    codes = load_encoded(loaded.data_path, loaded.schema_)
    lines: list[str] = []
    context = SimpleNamespace(
        agreement=loaded.agreement,
        schema=loaded.schema_,
        confidential_sample=lambda rows, seed, columns=None: codes if columns is None else codes[columns],
        executor_for=executor_for,
        log=lines.append,
    )
    outcome = DecomposabilityAudit().run(context, DecomposabilitySettings(K=7, rows=5000))  # type: ignore[arg-type]
    [row] = outcome.checks
    assert row.name == TEST_ROW and not row.passed and row.severity == "warn" and "not testable" in row.detail
    assert outcome.section is None and any("not testable" in line for line in lines)
