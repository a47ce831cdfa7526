"""Every check of ``sdgov release`` runs once (issue 41: the command's and the flow's used to be two of each, two
process-wide caches hiding it); the confidential CSV is read once per release (issue #10; it used to be parsed up
to six times), the input check runs once (issue 27: the CLI's and the agree stage's used to be two, each with a
generator dry-run fit) and the synthetic file is validated and encoded once (issue 26: the audit, utility and card
stages used to do it each).

The command checks the inputs into one record (:class:`sdgov.contracts.InputsChecked`) and the agree stage
re-verifies it by hash; the agree stage writes the encoded records as the run's ``codes.parquet``, which measure,
the audits and utility read instead. The engine's encoding is the in-memory encoder's, bit for bit. The audit stage
keeps the synthetic file's cells (``synthetic_codes.parquet``), which the utility and card stages read hash-verified.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pandas as pd
import pytest

from sdgov.agreement.load import load_spec
from sdgov.commands import main
from sdgov.data import encoding
from tests.conftest import init_registry, make_demo_inputs
from tests.system.conftest import counting_encodes


def test_the_confidential_csv_is_parsed_once_per_release(tmp_path, monkeypatch):
    """Through the command line: its pre-flight check and the agree stage share one encoding and one pre-flight
    (one generator dry-run fit); the synthetic file is validated and encoded once, by the audit stage."""
    from sdgov.engines.duckdb_engine import DuckDBEngine
    from sdgov.intake import preflight

    spec = make_demo_inputs(tmp_path / "inputs", rows=1500)
    data = (tmp_path / "inputs" / "data.csv").resolve()
    root = init_registry(tmp_path / "registry")
    dry_runs = counted(monkeypatch, preflight, "dry_run_generator")
    synthetic = counted(monkeypatch, DuckDBEngine, "encode_columns", arg=1)
    with pytest.MonkeyPatch.context() as patch, counting_encodes() as parsed, contextlib.redirect_stdout(io.StringIO()):
        checks = {name: counted_everywhere(patch, name) for name in CHECKS}
        assert main(["release", "--spec", str(spec), "--root", str(root), "--json"]) == 0
    assert parsed == [data]
    assert_codes_are_the_encoded_records(root, data, spec)
    assert len(dry_runs) == 1, "the input check (with its dry-run fit) runs once per release (it was twice)"
    before_the_flow = {name: calls.count("") for name, calls in checks.items()}
    assert before_the_flow == dict.fromkeys(CHECKS, 1), "each check once, by the command, before its flow starts"
    in_the_flow = {name: [c for c in calls if c] for name, calls in checks.items()}
    assert in_the_flow == {**dict.fromkeys(CHECKS, []), **RECHECKED}, "the agree stage re-verifies, checks nothing"
    [run_dir] = (root / "runs").iterdir()
    assert synthetic == [run_dir.resolve() / "generate" / "synthetic.parquet"], (
        "validated and encoded once (it was 3 times)"
    )
    assert not list((root / "releases").rglob("synthetic_codes.parquet")), "the cells are the run's, not published"


def test_data_changed_after_the_command_checked_it_is_refused_by_the_flow_in_one_line(tmp_path, monkeypatch, capsys):
    """The record of the check is re-verified by hash in the flow: data rewritten between the command's check and
    the agree stage (here: as the record is handed over) ends the release with one line, exit 2, nothing drawn."""
    from sdgov.flows import handover

    spec = make_demo_inputs(tmp_path / "inputs", rows=600)
    data = spec.parent / "data.csv"
    root = init_registry(tmp_path / "registry")
    real = handover.hand_over

    def then_rewritten(checked):
        data.write_bytes(data.read_bytes().replace(b"\n", b"\r\n", 1))  # the same records, other bytes
        return real(checked)

    monkeypatch.setattr(handover, "hand_over", then_rewritten)
    assert main(["release", "--spec", str(spec), "--root", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert "the data file changed after the release checked it" in err and str(data.resolve()) in err, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert not list((root / "runs").glob("*/codes.parquet")) and not list(root.glob("measurements/*.json"))


CHECKS = (  # each check a release makes before the first draw, by where it is defined
    "sdgov.governance.controller.check_controller_files",  # the controller's files as last signed
    "sdgov.agreement.load.load_spec",  # the spec, its schema and its agreement
    "sdgov.intake.preflight.run_preflight",  # names, paths, privacy plan, generator and audit dry runs, disk space
    "sdgov.governance.standing.check_pinned_data",  # the data is the file the approval pins
    "sdgov.governance.standing.agreement_signoffs",  # its sign-offs on this agreement
    "sdgov.governance.policy.check_plan_allowed",  # the controller's policy
)
RECHECKED = {  # later moments, other subjects: the ledger's spend re-reads the verified log under its lock
    "sdgov.governance.controller.check_controller_files": ["measure", "flow"],  # and the release's sign-off
}


def counted_everywhere(monkeypatch, qualified: str) -> list[object]:
    """The calls of the function ``qualified`` names, wherever it is called from: replaced in its module and in
    every loaded module that imported it by name."""
    import importlib
    import sys

    module, name = qualified.rsplit(".", 1)
    real = getattr(importlib.import_module(module), name)
    calls: list[object] = []

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(_where_called())
        return real(*args, **kwargs)

    for loaded in list(sys.modules.values()):
        if getattr(loaded, name, None) is real:
            monkeypatch.setattr(loaded, name, counting)
    return calls


def _where_called() -> str:
    """The Prefect task this call runs in, "flow" in the flow outside its tasks, "" in neither: the command, before
    its flow starts."""
    from prefect.context import FlowRunContext, TaskRunContext

    task = TaskRunContext.get()
    return task.task.name if task is not None else "flow" if FlowRunContext.get() is not None else ""


def counted(monkeypatch, owner: object, name: str, arg: int = 0) -> list[object]:
    """The calls of ``owner.name`` while the test runs, each recorded by its argument ``arg`` (a path: resolved)."""
    calls: list[object] = []
    real = getattr(owner, name)

    def counting(*args: object) -> object:
        calls.append(Path(args[arg]).resolve() if isinstance(args[arg], (str, Path)) else args[arg])
        return real(*args)

    monkeypatch.setattr(owner, name, counting)
    return calls


def test_the_audits_read_the_encoded_copy_not_the_csv(released_with_audits):
    """The shared release with both pre-registered audits: they read the confidential records from
    codes.parquet, so the CSV is still parsed once (the flow's agree stage)."""
    root, spec = released_with_audits["root"], released_with_audits["spec"]
    data = (spec.parent / "data.csv").resolve()
    assert released_with_audits["parsed"] == [data]
    evidence = {p.name for p in (root / "runs").glob("*/*.json")}  # the controller's, in the run directory
    assert {"decomposability.json", "privacy_risk.json"} <= evidence
    assert_codes_are_the_encoded_records(root, data, spec)


def assert_codes_are_the_encoded_records(root: Path, data: Path, spec: Path) -> None:
    [codes] = (root / "runs").glob("*/codes.parquet")
    expected = encoding.encode(encoding.read_csv_strict(data), load_spec(spec).schema_)
    pd.testing.assert_frame_equal(pd.read_parquet(codes), expected)
    assert not list((root / "releases").rglob("codes.parquet")), "the encoded confidential data is never published"
