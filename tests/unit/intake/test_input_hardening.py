"""Input hardening and pre-flight (issue 12 items 3–4): what is *accepted* correctly, and what the pre-flight finds.

The refusals themselves are in ``test_fuzz_inputs.py`` (183 hostile cases); here are the behaviours that must
keep working: YAML 1.2 codes, Unicode NFC across schema and data, open-ended bins, left-closed bins, linear
validation of a schema with 10^5 categories, one bounded error line, and a pre-flight that reports every problem
at once and dry-runs the generator before the first draw.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sdgov.base.errors import MAX_LINE, DataError, PreflightError, SchemaError, SpecError
from sdgov.base.loading import parse_yaml
from sdgov.commands import main
from sdgov.data.encoding import encode
from sdgov.data.schema import Schema, load_schema
from sdgov.engines import load_encoded
from sdgov.generators.registry import GENERATORS
from sdgov.intake.inputs import check_spec_and_data
from tests.fixtures.inputs import Inputs


def _schema(tmp_path: Path, text: str) -> Schema:
    path = tmp_path / "schema.yaml"
    path.write_text(text, encoding="utf-8")
    return load_schema(path)


# ----------------------------------------------------------------------------------------- YAML 1.2


def test_norway_and_yes_stay_codes_not_booleans(tmp_path: Path) -> None:
    """YAML 1.1 reads NO (Norway), yes, on, off, y, n as booleans; codes are text here."""
    schema = _schema(
        tmp_path,
        "name: countries\ncolumns:\n  - name: Country\n    categories:\n"
        + "".join(f"      - {{code: {c}, label: {c}}}\n" for c in ["NO", "SE", "yes", "on", "off", "y", "n"]),
    )
    codes = [c.code for c in schema.by_name["Country"].categories or []]
    assert codes == ["NO", "SE", "yes", "on", "off", "y", "n"]
    df = pd.DataFrame({"Country": ["NO", "yes", "SE"]})
    assert encode(df, schema)["Country"].tolist() == [0, 2, 1]


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    """PyYAML keeps the last of two equal keys silently; a spec with two 'privacy' sections is a mistake."""
    with pytest.raises(SchemaError, match="the key 'name' appears twice"):
        _schema(tmp_path, "name: a\nname: b\ncolumns: []\n")


def test_yaml_12_numbers() -> None:
    doc = parse_yaml("a: [012, 0o17, 0x1F, 1:20, 1e3, .inf, true, False, ~]")
    assert doc == {"a": [12, 15, 31, "1:20", 1000.0, float("inf"), True, False, None]}


# ----------------------------------------------------------------------------------------- Unicode


def test_nfd_header_and_values_match_an_nfc_schema(tmp_path: Path) -> None:
    """A file exported on macOS (NFD: 'e' + combining accent) matches the schema's NFC 'Région' and 'Élevé'."""
    schema = _schema(
        tmp_path,
        "name: t\ncolumns:\n  - name: Région\n    categories:\n"
        "      - {code: Élevé, label: high}\n      - {code: Bas, label: low}\n",
    )
    nfd_header, nfd_value = "Re\u0301gion", "E\u0301leve\u0301"
    (tmp_path / "data.csv").write_text(f"{nfd_header}\n{nfd_value}\nBas\n", encoding="utf-8")
    codes = load_encoded(tmp_path / "data.csv", schema)
    assert list(codes.columns) == ["Région"] and codes["Région"].tolist() == [0, 1]


def test_codes_that_differ_only_by_normalisation_or_spaces_are_refused(tmp_path: Path) -> None:
    for a, b in (("Ré", "Re\u0301"), ("N", "N "), ("N", " N")):
        doc = {
            "name": "t",
            "columns": [{"name": "C", "categories": [{"code": a, "label": "x"}, {"code": b, "label": "y"}]}],
        }
        with pytest.raises(Exception, match="more than once|surrounding spaces"):
            _schema(tmp_path, json.dumps(doc, ensure_ascii=False))


# ----------------------------------------------------------------------------------------- bins


def test_open_ended_top_bin_is_valid_and_hashes(tmp_path: Path) -> None:
    schema = _schema(tmp_path, "name: t\ncolumns:\n  - {name: Income, kind: numeric, bins: [0, 1000, .inf]}\n")
    assert schema.by_name["Income"].labels() == ["[0, 1000)", "[1000, ∞)"]
    assert len(schema.sha256()) == 64  # JSON has no infinity: the edge hashes as "inf"
    codes = encode(pd.DataFrame({"Income": ["0", "999.5", "1000", "1e12"]}), schema)
    assert codes["Income"].tolist() == [0, 0, 1, 1]


def test_bins_are_left_closed_and_the_top_edge_is_outside(tmp_path: Path) -> None:
    """Documented rule: bins are [lo, hi); a value equal to the top edge is refused (declare .inf to keep it)."""
    schema = _schema(tmp_path, "name: t\ncolumns:\n  - {name: Age, kind: numeric, bins: [0, 18, 65]}\n")
    assert encode(pd.DataFrame({"Age": ["0", "17.9", "18", "64.99"]}), schema)["Age"].tolist() == [0, 0, 1, 1]
    with pytest.raises(DataError, match=r"\[0, 65\) — bins are left-closed.*'65'"):
        encode(pd.DataFrame({"Age": ["65"]}), schema)


def test_label_rule_reads_its_own_labels_back(tmp_path: Path) -> None:
    """A numeric column released as labels: the synthetic file's labels encode to their bins (utility, audits)."""
    schema = _schema(tmp_path, "name: t\ncolumns:\n  - {name: Age, kind: numeric, bins: [0, 18, 65]}\n")
    assert encode(pd.DataFrame({"Age": ["[18, 65)", "[0, 18)", "3"]}), schema)["Age"].tolist() == [1, 0, 0]


# ----------------------------------------------------------------------------------------- size


def test_a_schema_with_100k_categories_and_a_50k_row_file_validate(tmp_path: Path) -> None:
    """Duplicate checks are linear (sets, not list.count): 10^5 categories validate (the benchmark times it)."""
    n = 100_000
    doc = {
        "name": "big",
        "columns": [{"name": "C", "categories": [{"code": f"c{i}", "label": f"L{i}"} for i in range(n)]}],
    }
    schema = _schema(tmp_path, json.dumps(doc))
    values = np.random.default_rng(0).integers(0, n, 50_000)
    pd.DataFrame({"C": [f"c{v}" for v in values]}).to_csv(tmp_path / "data.csv", index=False)
    assert (load_encoded(tmp_path / "data.csv", schema)["C"].to_numpy() == values).all()


def test_every_error_line_fits_300_characters() -> None:
    err = SpecError("value " + "x" * 189_114, "/" + "d/" * 500 + "spec.yaml", "fix " * 200)
    line = "sdgov: error: " + err.one_line()
    assert len(line) <= MAX_LINE and "\n" not in line
    assert line.endswith("fix fix") and "spec.yaml" in line and "…" in line


# ----------------------------------------------------------------------------------------- pre-flight


def test_preflight_lists_every_problem_at_once(
    inputs: Inputs,
    no_flow: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def spoil(s: dict) -> None:
        s["name"] = "n" * 240  # File name too long at publish, before
        s["privacy"] = {"epsilon": 1.0, "delta": 0.5}  # δ ≥ 1/N
        s["audit"] = {"generator": "test_crash_in_fit", "K": 7}  # a registered plug-in that fails at the audit stage

    inputs.edit_yaml("spec.yaml", spoil)
    rc = main(inputs.release_argv())
    lines = capsys.readouterr().err.splitlines()
    assert rc == 2 and len(lines) == 3, lines
    assert all(ln.startswith("sdgov: error: ") and len(ln) <= MAX_LINE for ln in lines)
    assert "240 characters" in lines[0] and "δ = 0.5" in lines[1]
    assert "audit.generator" in lines[2] and "crashed in fit()" in lines[2]
    assert not inputs.root.exists()


def test_preflight_dry_runs_the_generator_before_any_draw(
    inputs: Inputs,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A generator that fails on made-up data in the declared domain is refused by the checks every stage runs."""

    def broken_fit(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a plug-in bug")

    monkeypatch.setitem(GENERATORS, "pgm", dataclasses.replace(GENERATORS["pgm"], fit=broken_fit))
    with pytest.raises(PreflightError, match="failed a dry run on made-up data: ZeroDivisionError: a plug-in bug"):
        check_spec_and_data(inputs.spec)


def test_preflight_reads_numeric_columns_back_as_the_utility_stage_does(inputs: Inputs) -> None:
    """The dry run samples to Parquet and reads it back through the schema: every release rule passes."""
    text = inputs.schema.read_text(encoding="utf-8")
    for i, rule in enumerate(["uniform", "midpoint", "label"]):
        text += f"  - {{name: N{i}, kind: numeric, bins: [0, 10, .inf], release_as: {rule}}}\n"
    inputs.write("schema.yaml", text)
    lines = inputs.data.read_text(encoding="utf-8").splitlines()
    inputs.write("data.csv", "\n".join([lines[0] + ",N0,N1,N2"] + [ln + ",5,50,5" for ln in lines[1:]]) + "\n")
    inputs.edit_yaml("spec.yaml", lambda s: s["phi"]["marginals"].append(["N0", "N1", "N2"]))
    loaded, data, _ = check_spec_and_data(inputs.spec)
    assert data.rows > 0 and {"N0", "N1", "N2"} <= set(loaded.agreement.attributes)


def test_validate_refuses_what_a_release_would(
    inputs: Inputs,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's σ = 0.1 passed `validate` with "ok … ε=230.7"."""
    inputs.edit_yaml("spec.yaml", lambda s: s.update({"privacy": {"sigma": 0.1}}))
    assert main(["validate", "--spec", str(inputs.spec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "over the sanity limit" in err


def test_spec_file_is_yaml_12(inputs: Inputs) -> None:
    """A spec is read by the same bounded loader (checked here through the whole check path)."""
    doc = yaml.safe_load(inputs.spec.read_text(encoding="utf-8"))
    doc.pop("description", None)
    inputs.write("spec.yaml", yaml.safe_dump(doc, sort_keys=False) + "description: NO\n")
    loaded, _, _ = check_spec_and_data(inputs.spec)
    assert loaded.spec.description == "NO"


def test_validate_with_root_applies_the_controller_policy_as_the_release_does(
    inputs: Inputs,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 27: ``validate --root`` was refused as an unrecognised argument, so a spec the controller's policy
    refuses (ε 1 over a 0.5 limit) passed validate and failed only at ``sdgov release``."""
    from tests.conftest import init_registry

    root = init_registry(tmp_path / "strict", max_epsilon_per_release=0.5)
    assert main(["validate", "--spec", str(inputs.spec), "--root", str(root), "--json"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "policy.yaml" in err and json.loads(out)["ok"] is False


def test_data_too_small_for_the_privacy_audit_is_refused_before_the_draw(
    inputs: Inputs,
    no_flow: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Found after measuring, it would spend budget on a release whose audit can never run; the line does not say
    how many records the data holds (the analyst may not learn N here)."""
    inputs.edit_yaml("spec.yaml", lambda s: s.update(privacy_risk={}))  # every default: 1,000 shadow-training rows
    rc = main(inputs.release_argv())
    err = capsys.readouterr().err
    assert rc == 2 and "the data hold(s) fewer records than the pre-registered privacy-risk audit" in err, err
    assert "privacy_risk.settings" in err and "300" not in err.split("spec.yaml", 1)[-1]  # after the path
    assert not inputs.root.exists()
