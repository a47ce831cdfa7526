"""docs/extending.md, "Adding an audit check": its two code blocks, run as written on a small real context (the
demo schema and records; exact marginals), so the page cannot rot. No Prefect: the check is core code."""

from __future__ import annotations

import re
import tempfile
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdgov.audits.generator_protocol import weighted_marginal
from sdgov.audits.protocol import AuditContext
from sdgov.audits.run import run_audits
from sdgov.data.encoding import decode
from sdgov.data.schema import load_schema
from sdgov.measurement.marginals import Measurement, MeasurementSet

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


@pytest.fixture(scope="module", autouse=True)
def prefect_server():
    """Overrides the shared conftest's session Prefect test server: nothing here talks to Prefect."""
    yield


def _blocks() -> list[str]:
    section = DOC.read_text().split("## Adding an audit check", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.fixture(scope="module")
def check_module() -> types.ModuleType:
    module = types.ModuleType("phi_fidelity_from_docs")
    exec(compile(_blocks()[0], str(DOC), "exec"), module.__dict__)
    return module


def _parquet(frame: pd.DataFrame) -> Path:
    """The frame as a synthetic file (the context hands checks the file, read on request)."""
    path = Path(tempfile.mkdtemp(prefix="sdgov-audit-doc-")) / "synthetic.parquet"
    frame.to_parquet(path)
    return path


def _context(synthetic_codes: pd.DataFrame, codes: pd.DataFrame, schema) -> AuditContext:
    attributes = ["Age", "Sex", "Education"]
    cliques = [("Age", "Sex"), ("Sex", "Education")]
    domain = {a: schema.by_name[a].size for a in attributes}
    exact = [weighted_marginal(codes, None, c, domain) for c in cliques]
    mset = MeasurementSet(
        agreement_sha256="test",
        dataset_fingerprint="test",
        schema_sha256="test",
        attributes=attributes,
        domain=domain,
        noise="none",
        measurements=[
            Measurement(clique=c, shape=t.shape, sigma=0.0, noisy_counts=t.astype(np.int64).ravel().tolist())
            for c, t in zip(cliques, exact)
        ],
    )
    return AuditContext(
        agreement=types.SimpleNamespace(attributes=attributes, cliques=cliques),
        agreement_sha256="test",
        schema=schema,
        measurements=mset,
        measurements_ref=None,
        plan=None,
        generate_record=None,
        model_info={},
        synthetic_file=_parquet(decode(synthetic_codes, schema)[attributes]),
        requested_rows=len(synthetic_codes),
        read_confidential=lambda: codes,
    )


@pytest.fixture(scope="module")
def demo():
    from sdgov.demo import inputs
    from sdgov.demo.data import demo_records

    schema = load_schema(inputs() / "schema.yaml")
    codes = demo_records(schema, 3000)
    from sdgov.data.encoding import encode

    return schema, encode(codes, schema)


def test_the_documented_check_passes_a_faithful_release_and_warns_on_a_broken_one(check_module, demo):
    schema, codes = demo
    check = check_module.PhiFidelity()
    report, evidence = run_audits(_context(codes, codes, schema), audits=(check,))
    assert report.verdict == "pass" and report.checks[0].passed and evidence == {}
    broken = codes.copy()
    broken["Sex"] = np.random.default_rng(0).permutation(broken["Sex"].to_numpy())  # Age × Sex association gone
    strict = check_module.PhiFidelitySettings(max_tvd=0.001)
    outcome = check.run(_context(broken, codes, schema), strict)
    (row,) = outcome.checks
    assert not row.passed and row.severity == "warn" and "largest TVD" in row.detail
    report, _ = run_audits(_context(broken, codes, schema), audits=(check,))
    assert report.verdict == "pass"  # a warning never blocks


def test_the_documented_registration_line_registers_it(check_module):
    from sdgov.audits import registry

    namespace = {**vars(registry), "PhiFidelity": check_module.PhiFidelity}
    exec(compile(_blocks()[1], str(DOC), "exec"), namespace)
    audits = namespace["AUDITS"]
    assert [type(a) for a in audits] == [*map(type, registry.AUDITS), check_module.PhiFidelity]
    assert len({a.name for a in audits}) == len(audits)  # names are evidence file names: unique
