"""The confidential CSV is read once per release (issue #10; it used to be parsed up to six times).

The CLI's pre-flight check and the agree stage share one encoding by the engine (same process, same file
content); the agree stage writes the encoded records as the run's ``codes.parquet``, which measure, the audits
and utility read instead. The engine's encoding is the in-memory encoder's, bit for bit.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pandas as pd

from sdgov.agreement.load import load_spec
from sdgov.data import encoding
from sdgov.flows.cli import main
from tests.conftest import init_registry, make_demo_inputs
from tests.system.conftest import counting_encodes


def test_the_confidential_csv_is_parsed_once_per_release(tmp_path):
    """Through the command line: its pre-flight check and the agree stage share one encoding."""
    spec = make_demo_inputs(tmp_path / "inputs", rows=1500)
    data = (tmp_path / "inputs" / "data.csv").resolve()
    root = init_registry(tmp_path / "registry")
    with counting_encodes() as parsed, contextlib.redirect_stdout(io.StringIO()):
        assert main(["release", "--spec", str(spec), "--root", str(root), "--json"]) == 0
    assert parsed == [data]
    assert_codes_are_the_encoded_records(root, data, spec)


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
