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

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from sdgov.commands import main
from tests.fixtures.inputs import ROWS, Inputs, assert_refused, tree
from tests.fixtures.malformed import (
    APPROVAL_CASES,
    BY_ID,
    CASES,
    DATA_CASES,
    SCHEMA_CASES,
    SPEC_CASES,
    edit_approvals,
    edit_privacy,
)

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
    edit_privacy(weights={"Region,Planet": 2.0})(inputs)
    before = tree(tmp_path)
    rc = main(inputs.release_argv())
    _, err = capsys.readouterr()
    assert_refused(inputs, rc, err, ["spec.yaml", "Planet"], before, tmp_path)


def test_epsilon_beyond_accounting_range(
    inputs: Inputs, no_flow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_privacy(epsilon=1.0e6)(inputs)
    before = tree(tmp_path)
    rc = main(inputs.release_argv())
    _, err = capsys.readouterr()
    assert_refused(inputs, rc, err, ["spec.yaml", "epsilon"], before, tmp_path)


def test_self_approval_name_variant(
    inputs: Inputs, no_flow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_approvals(lambda a: a["agreement_approver"].update({"name": " ada  analyst "}))(inputs)
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
