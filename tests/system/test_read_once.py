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
import pytest
import yaml

from sdgov import schema
from sdgov.demo import inputs
from sdgov.engines.duckdb_engine import DuckDBEngine
from sdgov.flows.cli import main
from sdgov.spec import load_spec
from tests.conftest import init_registry, make_demo_inputs


@pytest.mark.parametrize("audits", [False, True], ids=["no-audits", "demo-audits"])
def test_the_confidential_csv_is_parsed_once_per_release(tmp_path, monkeypatch, audits):
    demo = yaml.safe_load((inputs() / "spec.yaml").read_text())
    sections = {k: demo[k] for k in ("audit", "privacy_risk")} if audits else {}
    spec = make_demo_inputs(tmp_path / "inputs", rows=1500, **sections)
    data = (tmp_path / "inputs" / "data.csv").resolve()
    read, encode = schema.read_csv_strict, DuckDBEngine.encode
    parsed: list[Path] = []

    def counting_encode(self, path, *args):
        parsed.append(Path(path).resolve())
        return encode(self, path, *args)

    monkeypatch.setattr(DuckDBEngine, "encode", counting_encode)
    root = init_registry(tmp_path / "registry")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["release", "--spec", str(spec), "--root", str(root), "--json"]) == 0
    assert parsed == [data]
    if audits:  # the pre-registered audits ran and read the confidential records (from codes.parquet)
        evidence = {p.name for p in (root / "runs").glob("*/*.json")}  # the controller's, in the run directory
        assert {"decomposability.json", "privacy_evidence.json"} <= evidence

    [codes] = (root / "runs").glob("*/codes.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(codes), schema.encode(read(data), load_spec(spec).schema_))
    assert not list((root / "releases").rglob("codes.parquet")), "the encoded confidential data is never published"
