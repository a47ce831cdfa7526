"""Malformed inputs are refused up front: one error line, exit 2, nothing written to the registry.

Acceptance point of issue 2: "At least 15 distinct malformed inputs (schema, data, spec) covered by tests: each a
one-line error, non-zero exit, registry unchanged".

Every case starts from a valid copy of the demo inputs (schema, spec, standing approval, ~300 generated rows) in
``tmp_path`` and breaks exactly one thing, then runs the real CLI (``sdgov release``) in-process. The release
command validates its inputs before it starts the orchestrator, so none of these cases may reach the Prefect
flow: ``sdgov.flows.release`` is replaced by a stub that fails the test if it is ever called (this also keeps the
module fast and server-free).
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from sdgov.data.schema import load_schema
from sdgov.demo import inputs
from sdgov.demo.data import write_demo_data
from sdgov.flows.cli import main

REPO = Path(__file__).resolve().parents[2]
DEMO = inputs()
ROWS = 300


# ----------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def demo_csv(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The demo's generated data (~300 rows), as text, generated once for the module."""
    path = tmp_path_factory.mktemp("demo-data") / "data.csv"
    write_demo_data(load_schema(DEMO / "schema.yaml"), path, rows=ROWS)
    return path.read_text(encoding="utf-8")


@dataclass
class Inputs:
    """A valid, self-contained copy of the demo inputs that a case then breaks in exactly one place."""

    dir: Path
    root: Path  # the registry root passed with --root; must never be created

    @property
    def spec(self) -> Path:
        return self.dir / "spec.yaml"

    @property
    def schema(self) -> Path:
        return self.dir / "schema.yaml"

    @property
    def approvals(self) -> Path:
        return self.dir / "approvals.yaml"

    @property
    def data(self) -> Path:
        return self.dir / "data.csv"

    # helpers used by the cases
    def edit_yaml(self, name: str, fn: Callable[[dict[str, Any]], None]) -> None:
        path = self.dir / name
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        fn(doc)
        path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")

    def write(self, name: str, text: str | bytes) -> None:
        path = self.dir / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")

    def edit_csv(self, fn: Callable[[pd.DataFrame], pd.DataFrame | None]) -> None:
        df = pd.read_csv(self.data, dtype=str, keep_default_na=False)
        out = fn(df)
        (df if out is None else out).to_csv(self.data, index=False)

    def release_argv(self, *extra: str) -> list[str]:
        return ["release", "--spec", str(self.spec), "--root", str(self.root), *extra]


@pytest.fixture
def inputs(tmp_path: Path, demo_csv: str) -> Inputs:
    d = tmp_path / "inputs"
    d.mkdir()
    (d / "schema.yaml").write_text((DEMO / "schema.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (d / "approvals.yaml").write_text((DEMO / "approvals.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    spec = yaml.safe_load((DEMO / "spec.yaml").read_text(encoding="utf-8"))
    spec["dataset"]["path"] = "data.csv"
    spec["schema"] = "schema.yaml"
    spec["approvals"] = "approvals.yaml"
    spec["generator"]["iterations"] = 50
    spec["rows"] = ROWS - 30  # never the data's true count N = ROWS, which the controller's policy refuses
    # the privacy-risk audit draws on more records than these ROWS (the pre-flight would refuse every case for it)
    spec.pop("privacy_risk", None)
    (d / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (d / "data.csv").write_text(demo_csv, encoding="utf-8")
    return Inputs(dir=d, root=tmp_path / "registry")


@pytest.fixture
def no_flow(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fail loudly (instead of starting a Prefect server) if a bad input gets past pre-flight validation."""

    def release_flow(**kwargs: Any) -> None:
        raise AssertionError(f"malformed input reached the release flow (validation let it through): {kwargs}")

    fake = types.ModuleType("sdgov.flows.release")
    fake.release_flow = release_flow  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sdgov.flows.release", fake)
    monkeypatch.chdir(tmp_path)  # anything written relative to the cwd would show up in the tree snapshot
    monkeypatch.delenv("SDGOV_REGISTRY", raising=False)


def tree(path: Path) -> dict[str, str]:
    """Every file under ``path`` with its sha256 (directories as 'dir')."""
    out = {}
    for p in sorted(path.rglob("*")):
        out[str(p.relative_to(path))] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


# ----------------------------------------------------------------------------------------- the cases


def _categories(doc: dict[str, Any], column: str) -> list[dict[str, Any]]:
    return next(c for c in doc["columns"] if c["name"] == column)["categories"]


def _set_cell(column: str, row: int, value: str) -> Callable[[pd.DataFrame], None]:
    def fn(df: pd.DataFrame) -> None:
        df.loc[row, column] = value

    return fn


def _spec(fn: Callable[[dict[str, Any]], None]) -> Callable[[Inputs], None]:
    return lambda i: i.edit_yaml("spec.yaml", fn)


def _schema(fn: Callable[[dict[str, Any]], None]) -> Callable[[Inputs], None]:
    return lambda i: i.edit_yaml("schema.yaml", fn)


def _approvals(fn: Callable[[dict[str, Any]], None]) -> Callable[[Inputs], None]:
    return lambda i: i.edit_yaml("approvals.yaml", fn)


def _privacy(**kv: Any) -> Callable[[Inputs], None]:
    return _spec(lambda s: s["privacy"].update(kv))


def _csv_text(i: Inputs, fn: Callable[[list[str]], list[str]]) -> None:
    lines = i.data.read_text(encoding="utf-8").splitlines()
    i.write("data.csv", "\n".join(fn(lines)) + "\n")


# (id, mutation, substrings the one error line must contain)
Case = tuple[str, Callable[[Inputs], None], list[str]]

SCHEMA_CASES: list[Case] = [
    (
        "schema-duplicate-category-code",
        _schema(lambda d: _categories(d, "Region").append({"code": "N", "label": "Nord"})),
        ["schema.yaml", "'Region'", "['N']", "more than once"],
    ),
    (
        "schema-categorical-without-categories",
        _schema(lambda d: _categories(d, "Health").clear()),
        ["schema.yaml", "'Health'", "non-empty 'categories'"],
    ),
    (
        "schema-categorical-categories-omitted",
        _schema(lambda d: next(c for c in d["columns"] if c["name"] == "Education").pop("categories")),
        ["schema.yaml", "'Education'", "categories"],
    ),
    (
        "schema-mixed-int-and-text-codes",
        _schema(lambda d: _categories(d, "Region").append({"code": 5, "label": "Five"})),
        ["schema.yaml", "'Region'", "mixes integer and text codes"],
    ),
    (
        "schema-numeric-bins-not-increasing",
        _schema(lambda d: d["columns"].append({"name": "Income", "kind": "numeric", "bins": [0, 10, 5]})),
        ["schema.yaml", "'Income'", "strictly increasing"],
    ),
    (
        "schema-numeric-bin-labels-count",
        _schema(
            lambda d: d["columns"].append(
                {"name": "Income", "kind": "numeric", "bins": [0, 10, 20], "bin_labels": ["low"]}
            )
        ),
        ["schema.yaml", "'Income'", "one bin label per bin"],
    ),
    (
        "schema-duplicate-column-name",
        _schema(lambda d: d["columns"].append(copy.deepcopy(d["columns"][1]))),
        ["schema.yaml", "['Sex']", "more than once"],
    ),
    (
        "schema-identifier-also-a-column",
        _schema(lambda d: d["identifiers"].append("Region")),
        ["schema.yaml", "['Region']", "more than once"],
    ),
    (  # issue 25: an attribute name with a path separator was accepted
        "schema-attribute-name-path",
        _schema(lambda d: d["columns"][0].update({"name": "../../../tmp/x"})),
        ["schema.yaml", "'../../../tmp/x'", "path separator"],
    ),
    (
        "schema-attribute-name-control-character",
        _schema(lambda d: d["columns"][0].update({"name": "Re\ngion"})),
        ["schema.yaml", "'Re\\ngion'", "control character"],
    ),
    (
        "schema-unknown-key",
        _schema(lambda d: d["columns"][0].update({"colour": "red"})),
        ["schema.yaml", "colour", "Extra inputs are not permitted"],
    ),
    (
        "schema-unknown-kind",
        _schema(lambda d: d["columns"][0].update({"kind": "ordinal"})),
        ["schema.yaml", "columns.0.kind"],
    ),
    (
        "schema-not-yaml",
        lambda i: i.write("schema.yaml", "name: toyland\ncolumns: [ {name: Region\n  - oops: ]\n"),
        ["schema.yaml", "not valid YAML"],
    ),
    (
        "schema-not-a-mapping",
        lambda i: i.write("schema.yaml", "- Region\n- Sex\n"),
        ["schema.yaml", "must be a mapping", "list"],
    ),
    ("schema-empty-file", lambda i: i.write("schema.yaml", ""), ["schema.yaml", "must be a mapping", "NoneType"]),
    (
        "schema-file-missing",
        _spec(lambda s: s.update({"schema": "no-such-schema.yaml"})),
        ["no-such-schema.yaml", "schema file not found"],
    ),
]

DATA_CASES: list[Case] = [
    (
        "data-missing-column",
        lambda i: i.edit_csv(lambda df: df.drop(columns=["Health"])),
        ["data.csv", "missing column(s) ['Health']"],
    ),
    (
        "data-missing-identifier-column",
        lambda i: i.edit_csv(lambda df: df.drop(columns=["Person ID"])),
        ["data.csv", "missing column(s) ['Person ID']"],
    ),
    (
        "data-extra-column",
        lambda i: i.edit_csv(lambda df: df.assign(**{"Shoe Size": "42"})),
        ["data.csv", "['Shoe Size']", "not in schema"],
    ),
    (
        "data-duplicate-header",
        lambda i: _csv_text(i, lambda ls: [ls[0] + ",Sex"] + [row + ",1" for row in ls[1:]]),
        ["data.csv", "duplicate column header", "Sex"],
    ),
    (
        "data-unknown-category",
        lambda i: i.edit_csv(_set_cell("Region", 7, "Q")),
        ["data.csv", "'Region'", "'Q'", "not among the declared categories", "1 row(s)"],
    ),
    (
        "data-unknown-integer-code",
        lambda i: i.edit_csv(_set_cell("Health", 3, "7")),
        ["data.csv", "'Health'", "'7'", "not among the declared categories"],
    ),
    (
        "data-wrong-type-text-for-integer-codes",
        lambda i: i.edit_csv(_set_cell("Sex", 3, "abc")),
        ["data.csv", "'Sex'", "'abc'", "wrong type", "1 row(s)"],
    ),
    (
        "data-wrong-type-decimal-for-integer-codes",
        lambda i: i.edit_csv(_set_cell("Age", 11, "2.5")),
        ["data.csv", "'Age'", "'2.5'", "wrong type"],
    ),
    (
        "data-empty-value-not-nullable",
        lambda i: i.edit_csv(_set_cell("Education", 5, "")),
        ["data.csv", "'Education'", "1 empty/NaN value(s)"],
    ),
    (  # issue 25: a short row was padded with empty fields (refused only where the column allows no empty value)
        "data-short-row",
        lambda i: _csv_text(i, lambda ls: ls + [",".join(ls[1].split(",")[:-1])]),
        ["data.csv", f"row {ROWS + 1} (line {ROWS + 2}) has", "field(s), but the file has"],
    ),
    (
        "data-ragged-row",
        lambda i: _csv_text(i, lambda ls: ls[:10] + [ls[10] + ",1,2,3"] + ls[11:]),
        ["data.csv", "row 10 (line 11) has", "field(s), but the file has"],
    ),
    (  # issue 25: extra empty fields were dropped silently
        "data-row-with-extra-empty-fields",
        lambda i: _csv_text(i, lambda ls: ls[:5] + [ls[5] + "," * 100_000] + ls[6:]),
        ["data.csv", "row 5 (line 6) has", "field(s), but the file has"],
    ),
    ("data-header-only", lambda i: _csv_text(i, lambda ls: ls[:1]), ["data.csv", "no data rows"]),
    ("data-empty-file", lambda i: i.write("data.csv", ""), ["data.csv", "empty"]),
    (
        "data-not-utf8",
        lambda i: i.write("data.csv", i.data.read_bytes().replace(b",N,", b",\xe9,", 1)),
        ["data.csv", "not UTF-8", "line 2"],
    ),
    (
        "data-file-missing",
        _spec(lambda s: s["dataset"].update({"path": "no-such-data.csv"})),
        ["no-such-data.csv", "data file not found"],
    ),
]

SPEC_CASES: list[Case] = [
    (  # issue 14: a release states who answers for it and what it is for
        "spec-without-model-card",
        _spec(lambda s: s.pop("model_card")),
        ["spec.yaml", "model_card", "review_by"],
    ),
    (
        "spec-model-card-without-review-date",
        _spec(lambda s: s["model_card"].pop("review_by")),
        ["spec.yaml", "model_card.review_by"],
    ),
    (
        "spec-unknown-attribute-in-phi",
        _spec(lambda s: s["phi"]["marginals"].append(["Region", "Planet"])),
        ["spec.yaml", "phi.marginals[1]", "['Planet']"],
    ),
    (
        "spec-unknown-attribute-in-kway",
        _spec(lambda s: s["phi"]["all_kway"][0]["attributes"].append("Planet")),
        ["spec.yaml", "phi.all_kway[0]", "['Planet']"],
    ),
    (
        "spec-attribute-repeated-in-marginal",
        _spec(lambda s: s["phi"]["marginals"].append(["Region", "Region"])),
        ["spec.yaml", "repeats attribute(s) ['Region']"],
    ),
    (
        "spec-empty-marginal",
        _spec(lambda s: s["phi"]["marginals"].append([])),
        ["spec.yaml", "phi.marginals[1] is empty"],
    ),
    ("spec-empty-phi", _spec(lambda s: s.update({"phi": {}})), ["spec.yaml", "Φ is empty"]),
    (
        "spec-duplicate-marginal",
        _spec(lambda s: s["phi"]["marginals"].append(["Age", "Sex"])),
        ["spec.yaml", "marginal (Sex, Age) is listed twice"],
    ),
    (
        "spec-nested-marginal",
        _spec(lambda s: s["phi"]["marginals"].append(["Health", "Region"])),
        ["spec.yaml", "marginal (Region, Health) is nested in (Region, Age, Health)"],
    ),
    (
        "spec-marginal-over-cell-limit",
        _spec(lambda s: s.update({"limits": {"max_marginal_cells": 100}})),
        ["spec.yaml", "marginal (Region, Age, Health) has 120 cells, over the limit of 100"],
    ),
    (
        "spec-ipf-over-domain-limit",
        _spec(lambda s: s.update({"generator": {"name": "ipf"}, "limits": {"max_model_cells": 1000}})),
        ["spec.yaml", "ipf model needs 28,800 cells, over the model domain limit of 1,000"],
    ),
    (
        "spec-pgm-over-domain-limit",
        _spec(lambda s: s.update({"limits": {"max_model_cells": 10}})),
        ["spec.yaml", "pgm model needs", "over the model domain limit of 10"],
    ),
    ("spec-zero-budget", _privacy(epsilon=0), ["spec.yaml", "privacy.epsilon", "greater than 0"]),
    (
        "spec-negative-rho",
        _spec(lambda s: s.update({"privacy": {"rho": -0.5}})),
        ["spec.yaml", "privacy.rho", "greater than 0"],
    ),
    ("spec-two-budgets", _privacy(rho=0.5), ["spec.yaml", "exactly one of rho, epsilon, sigma", "'rho'", "'epsilon'"]),
    (
        "spec-no-budget",
        _spec(lambda s: s.update({"privacy": {"noise": "gaussian"}})),
        ["spec.yaml", "exactly one of rho, epsilon, sigma"],
    ),
    ("spec-noise-none-with-budget", _privacy(noise="none"), ["spec.yaml", "noise 'none' takes no budget", "epsilon"]),
    ("spec-delta-out-of-range", _privacy(delta=1.5), ["spec.yaml", "privacy.delta"]),
    (
        "spec-k-larger-than-attributes",
        _spec(lambda s: s["phi"]["all_kway"][0].update({"k": 6})),
        ["spec.yaml", "phi.all_kway[0]: k=6 exceeds its 5 attributes"],
    ),
    (
        "spec-unknown-generator",
        _spec(lambda s: s["generator"].update({"name": "gan"})),
        ["spec.yaml", "generator.name", "'pgm' or 'ipf'"],
    ),
    (
        "spec-weights-name-non-phi-marginal",
        _privacy(weights={"Region,Sex": 2.0}),
        ["spec.yaml", "privacy.weights names 'Region,Sex'", "not a marginal in Φ"],
    ),
    (
        "spec-weights-with-fixed-sigma",
        _spec(lambda s: s.update({"privacy": {"sigma": 10, "weights": {"Sex,Age": 2.0}}})),
        ["spec.yaml", "weights", "fixed 'sigma'"],
    ),
    (
        "spec-phi-outside-attributes",
        _spec(lambda s: s.update({"attributes": ["Age", "Sex"]})),
        ["spec.yaml", "not listed in 'attributes'", "Region"],
    ),
    ("spec-zero-rows", _spec(lambda s: s.update({"rows": 0})), ["spec.yaml", "rows", "greater than 0"]),
    (  # the decomposability screen's 16 sign patterns give no set a p-value below 0.25 (issue 26 item 2)
        "spec-audit-K-too-light",
        _spec(lambda s: s["audit"].update({"K": 4})),
        ["spec.yaml: audit.K", "K = 4 is too light", "smallest possible p-value is 0.25", "K ≥ 7"],
    ),
    (  # a stricter screen level needs a larger K: the refusal names the smallest that reaches it
        "spec-audit-beta-star-alpha-strict",
        _spec(lambda s: s["audit"].update({"beta_star_alpha": 0.002})),
        ["spec.yaml: audit.K", "K = 10 is too light", "0.0039", "K ≥ 12"],
    ),
    (  # B = 19 bootstrap samples: the beyond-Φ p-value never goes below 0.05, so it could never fail at 0.005
        "spec-privacy-bootstrap-too-light",
        _spec(
            lambda s: (
                s.update(
                    {
                        "privacy_risk": {
                            "settings": {"n_outliers": 1, "n_random": 1, "train_rows": 50, "disclosure_rows": 30},
                            "policy": {},
                        }
                    }
                )
                or s["privacy_risk"]["settings"].update({"beyond_phi_bootstrap": 19})
            )
        ),
        ["spec.yaml: privacy_risk.settings.beyond_phi_bootstrap", "too light", "1/20", "beyond_phi_bootstrap ≥ 199"],
    ),
    (
        "spec-negative-seed",
        _spec(lambda s: s.update({"seed": -1})),
        ["spec.yaml", "seed", "greater than or equal to 0"],
    ),
    ("spec-bad-name", _spec(lambda s: s.update({"name": "my release!"})), ["spec.yaml", "name", "pattern"]),
    (
        "spec-unknown-key",
        _spec(lambda s: s.update({"budget": 3})),
        ["spec.yaml", "budget", "Extra inputs are not permitted"],
    ),
    ("spec-missing-dataset", _spec(lambda s: s.pop("dataset")), ["spec.yaml", "dataset", "Field required"]),
    (
        "spec-not-yaml",
        lambda i: i.write("spec.yaml", "name: demo\nphi: {marginals: [[Age, Sex]\nseed: 1\n"),
        ["spec.yaml", "not valid YAML"],
    ),
    (
        "spec-not-a-mapping",
        lambda i: i.write("spec.yaml", "just a string\n"),
        ["spec.yaml", "must be a mapping", "str"],
    ),
]

APPROVAL_CASES: list[Case] = [
    (
        "approvals-self-approval",
        _approvals(lambda a: a["agreement_approver"].update({"name": "Ada Analyst"})),
        ["approvals.yaml", "'Ada Analyst' cannot approve what they proposed", "separation of duties"],
    ),
    (
        "approvals-self-release-approval",
        _approvals(lambda a: a["release_approver"].update({"name": "Ada Analyst"})),
        ["approvals.yaml", "'Ada Analyst'", "separation of duties", "release_approver"],
    ),
    (
        "approvals-proposer-wrong-role",
        _approvals(lambda a: a["proposer"].update({"role": "controller"})),
        ["approvals.yaml", "proposer must have role 'analyst'", "'controller'"],
    ),
    (
        "approvals-approver-wrong-role",
        _approvals(lambda a: a["agreement_approver"].update({"role": "compliance"})),
        ["approvals.yaml", "agreement_approver must have role 'controller'", "'compliance'"],
    ),
    (
        "approvals-unknown-role",
        _approvals(lambda a: a["proposer"].update({"role": "intern"})),
        ["approvals.yaml", "proposer.role"],
    ),
    (
        "approvals-missing-release-approver",
        _approvals(lambda a: a.pop("release_approver")),
        ["approvals.yaml", "release_approver", "Field required"],
    ),
    (
        "approvals-pinned-to-other-agreement",
        _approvals(lambda a: a.update({"agreement_sha256": "0" * 64})),
        ["approvals.yaml", "covers agreement 000000000000", "spec now hashes to"],
    ),
    ("approvals-none-given", _spec(lambda s: s.pop("approvals")), ["spec.yaml", "no sign-off"]),
    (
        "approvals-file-missing",
        _spec(lambda s: s.update({"approvals": "no-such-approvals.yaml"})),
        ["no-such-approvals.yaml", "standing approval file not found"],
    ),
]

CASES: list[Case] = SCHEMA_CASES + DATA_CASES + SPEC_CASES + APPROVAL_CASES
BY_ID = {c[0]: c for c in CASES}


def _ids_unique() -> None:
    assert len(BY_ID) == len(CASES)


_ids_unique()


def assert_refused(inputs: Inputs, rc: int, err: str, expect: list[str], before: dict[str, str], base: Path) -> str:
    assert rc == 2, f"exit code {rc}, stderr: {err!r}"
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].strip(), f"expected exactly one error line, got {err!r}"
    line = lines[0]
    assert line.startswith("sdgov: error: "), line
    for s in expect:
        assert s in line, f"{s!r} not in error line: {line}"
    assert not inputs.root.exists(), "the registry root was created for a refused release"
    assert tree(base) == before, "files were written or changed for a refused release"
    return line


# ----------------------------------------------------------------------------------------- tests


def test_valid_inputs_validate(inputs: Inputs, no_flow: None, capsys: pytest.CaptureFixture[str]) -> None:
    """The untouched fixture is valid (so every failure below is due to its one mutation)."""
    rc = main(["validate", "--spec", str(inputs.spec), "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    payload = json.loads(out)
    assert payload["ok"] is True and payload["rows"] == ROWS
    assert not inputs.root.exists()


def test_valid_inputs_reach_the_flow(inputs: Inputs, no_flow: None) -> None:
    """Control: with valid inputs, ``release`` does get past validation (to the stubbed flow)."""
    from tests.conftest import init_registry

    init_registry(inputs.root)  # the controller's policy: a registry without one refuses every release
    with pytest.raises(AssertionError, match="reached the release flow"):
        main(inputs.release_argv())


def test_at_least_twenty_distinct_cases() -> None:
    assert len(CASES) >= 20
    for group in (SCHEMA_CASES, DATA_CASES, SPEC_CASES, APPROVAL_CASES):
        assert len(group) >= 3


@pytest.mark.parametrize("case_id, mutate, expect", [pytest.param(*c, id=c[0]) for c in CASES])
def test_release_refuses_malformed_input(
    case_id: str,
    mutate: Callable[[Inputs], None],
    expect: list[str],
    inputs: Inputs,
    no_flow: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mutate(inputs)
    before = tree(tmp_path)
    capsys.readouterr()
    rc = main(inputs.release_argv())
    out, err = capsys.readouterr()
    assert_refused(inputs, rc, err, expect, before, tmp_path)
    assert out == ""


def test_weights_naming_unknown_attribute(
    inputs: Inputs, no_flow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _privacy(weights={"Region,Planet": 2.0})(inputs)
    before = tree(tmp_path)
    rc = main(inputs.release_argv())
    _, err = capsys.readouterr()
    assert_refused(inputs, rc, err, ["spec.yaml", "Planet"], before, tmp_path)


def test_epsilon_beyond_accounting_range(
    inputs: Inputs, no_flow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _privacy(epsilon=1.0e6)(inputs)
    before = tree(tmp_path)
    rc = main(inputs.release_argv())
    _, err = capsys.readouterr()
    assert_refused(inputs, rc, err, ["spec.yaml", "epsilon"], before, tmp_path)


def test_self_approval_name_variant(
    inputs: Inputs, no_flow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _approvals(lambda a: a["agreement_approver"].update({"name": " ada  analyst "}))(inputs)
    before = tree(tmp_path)
    try:
        rc = main(inputs.release_argv())
    except AssertionError as exc:  # got past validation to the (stubbed) flow
        pytest.fail(str(exc))
    _, err = capsys.readouterr()
    assert_refused(inputs, rc, err, ["approvals.yaml", "separation of duties"], before, tmp_path)


def test_json_error_on_stdout(
    inputs: Inputs, no_flow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    BY_ID["data-unknown-category"][1](inputs)
    before = tree(tmp_path)
    rc = main(inputs.release_argv("--json"))
    out, err = capsys.readouterr()
    line = assert_refused(inputs, rc, err, ["'Region'", "'Q'"], before, tmp_path)
    payload = json.loads(out)
    assert payload["ok"] is False
    assert payload["error"] and "'Q'" in payload["error"]
    assert line == f"sdgov: error: {payload['error']}"
    assert payload["type"] == "DataError"


def test_validate_refuses_too(
    inputs: Inputs, no_flow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    BY_ID["spec-duplicate-marginal"][1](inputs)
    before = tree(tmp_path)
    rc = main(["validate", "--spec", str(inputs.spec)])
    _, err = capsys.readouterr()
    assert_refused(inputs, rc, err, ["listed twice"], before, tmp_path)


def test_data_override_missing(
    inputs: Inputs, no_flow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree(tmp_path)
    rc = main(inputs.release_argv("--data", str(inputs.dir / "elsewhere.csv")))
    _, err = capsys.readouterr()
    assert_refused(inputs, rc, err, ["elsewhere.csv", "data file not found"], before, tmp_path)


def test_approvals_override_self_approval(
    inputs: Inputs, no_flow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = inputs.dir / "other-approvals.yaml"
    other.write_text(
        "proposer: {name: Ada, role: analyst}\nagreement_approver: {name: Ada, role: controller}\n"
        "release_approver: {name: Carl, role: controller}\n",
        encoding="utf-8",
    )
    before = tree(tmp_path)
    rc = main(inputs.release_argv("--approvals", str(other)))
    _, err = capsys.readouterr()
    assert_refused(inputs, rc, err, ["other-approvals.yaml", "separation of duties"], before, tmp_path)
