"""docs/extending.md, "Adding an audit check": its four code blocks (the section, its registration line, the check,
its registration line), run as written on a small real context (the demo schema and records; exact marginals) and
inside the stages of a real release whose spec pre-registers the check, so the page cannot rot. No Prefect server:
the stages run as plain functions, as ``tests.conftest.draw_measurement`` runs them."""

from __future__ import annotations

import json
import re
import sys
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sdgov.agreement import sections
from sdgov.agreement.load import load_spec
from sdgov.audits import registry
from sdgov.audits.generator_protocol import weighted_marginal
from sdgov.audits.protocol import AuditContext
from sdgov.audits.run import run_audits
from sdgov.base.errors import InternalError, SpecError
from sdgov.data.encoding import decode
from sdgov.data.psi import Measurement, MeasurementSet
from sdgov.data.schema import load_schema
from sdgov.governance.site import Site
from tests.conftest import init_registry, make_demo_inputs

DOC = Path(__file__).resolve().parents[3] / "docs" / "extending.md"


@pytest.fixture(scope="module", autouse=True)
def prefect_server():
    """Overrides the shared conftest's session Prefect test server: nothing here talks to Prefect."""
    yield


def _blocks() -> list[str]:
    section = DOC.read_text().split("## Adding an audit check", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def _module(name: str, code: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A documented module, importable under the name the doc gives it (for this test only)."""
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    return module


@pytest.fixture
def check_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """The doc's section and check, registered by the doc's two registration lines; unregistered afterwards."""
    settings_code, section_line, check_code, audit_line = _blocks()
    settings = _module("sdgov.agreement.sections.phi_fidelity", settings_code, monkeypatch)
    namespace = {**vars(sections), "PhiFidelitySettings": settings.PhiFidelitySettings}
    exec(compile(section_line, str(DOC), "exec"), namespace)
    for name, model in namespace["SECTIONS"].items():
        monkeypatch.setitem(sections.SECTIONS, name, model)
    module = _module("sdgov.audits.phi_fidelity", check_code, monkeypatch)
    namespace = {**vars(registry), "PhiFidelity": module.PhiFidelity}
    exec(compile(audit_line, str(DOC), "exec"), namespace)
    monkeypatch.setattr(registry, "AUDITS", namespace["AUDITS"])
    module.PhiFidelitySettings = settings.PhiFidelitySettings
    yield module


def _parquet(frame: pd.DataFrame) -> Path:
    """The frame as a synthetic file (the context hands checks the file, read on request)."""
    path = Path(tempfile.mkdtemp(prefix="sdgov-audit-doc-")) / "synthetic.parquet"
    frame.to_parquet(path)
    return path


def _context(synthetic_codes: pd.DataFrame, codes: pd.DataFrame, schema, settings) -> AuditContext:
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
        agreement=types.SimpleNamespace(
            attributes=attributes, cliques=cliques, sections={"phi_fidelity": settings}, split=None
        ),
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
    check, settings = check_module.PhiFidelity(), check_module.PhiFidelitySettings()
    report, evidence = run_audits(_context(codes, codes, schema, settings), audits=(check,))
    assert report.verdict == "pass" and report.checks[0].passed and evidence == {}
    broken = codes.copy()
    broken["Sex"] = np.random.default_rng(0).permutation(broken["Sex"].to_numpy())  # Age × Sex association gone
    strict = check_module.PhiFidelitySettings(max_tvd=0.001)
    outcome = check.run(_context(broken, codes, schema, strict), strict)
    (row,) = outcome.checks
    assert not row.passed and row.severity == "warn" and "largest TVD" in row.detail
    report, _ = run_audits(_context(broken, codes, schema, strict), audits=(check,))
    assert report.verdict == "pass"  # a warning never blocks
    report, _ = run_audits(_context(codes, codes, schema, None), audits=(check,))  # not pre-registered: not run
    assert report.checks == [] and report.not_run == [check.not_run]


def test_the_documented_registration_lines_register_it_and_half_a_registration_is_refused(check_module):
    audits = registry.AUDITS
    assert [type(a) for a in audits][-1] is check_module.PhiFidelity and len(audits) == 4
    assert sections.SECTIONS["phi_fidelity"] is check_module.PhiFidelitySettings
    registry.check_sections(audits)  # both halves: accepted
    with pytest.raises(InternalError, match=r"\['phi_fidelity'\] are registered but no audit check"):
        registry.check_sections(audits[:-1])  # the section without its check: a spec could pre-register it in vain
    del sections.SECTIONS["phi_fidelity"]
    with pytest.raises(InternalError, match="'phi_fidelity' is pre-registered by spec section 'phi_fidelity'"):
        registry.check_sections(audits)  # the check without its section: no spec could pre-register it


def test_a_spec_cannot_name_a_section_that_is_not_registered(tmp_path):
    with pytest.raises(SpecError, match="phi_fidelity"):
        load_spec(make_demo_inputs(tmp_path, rows=300, phi_fidelity={"max_tvd": 0.5}))


def test_the_documented_check_runs_inside_a_release_that_pre_registers_it(check_module, tmp_path):
    """The release's own stages — agree (pre-flight included), measure, generate, audit — with the section in the
    spec: the agreement carries it, and the audit report has the check's row, run with the spec's settings."""
    from sdgov.artifacts import load_agreement
    from sdgov.contracts import GenerateInput
    from sdgov.tasks.audit import audit
    from sdgov.tasks.generate import generate
    from sdgov.tasks.measure import measure
    from tests.conftest import agree

    spec = make_demo_inputs(tmp_path / "inputs", rows=1500, phi_fidelity={"max_tvd": 0.5})
    root = init_registry(tmp_path / "registry")
    agreed = agree(spec, Site.resolve(str(root)), "t0")
    agreement = load_agreement(agreed.agreement)
    assert agreement.model_dump()["phi_fidelity"] == {"enabled": True, "max_tvd": 0.5}  # signed with Φ
    measured = measure.fn(agreed, Site.resolve(str(root)))
    generated = generate.fn(
        GenerateInput(
            measurements=measured.measurements,
            schema_file=agreed.schema_file,
            generator=agreement.generator.model_copy(update={"iterations": 50}),
            rows=1500,
            seed=agreement.seed,
            out_dir=str(Path(agreed.run_dir) / "generate"),
        )
    )
    audited = audit.fn(agreed, measured, generated)
    report = json.loads(Path(audited.report.path).read_text())
    (row,) = [c for c in report["checks"] if c["name"] == "synthetic data reproduces the noisy Φ marginals"]
    assert row["severity"] == "warn" and row["detail"].endswith("at most 0.5 allowed")  # the spec's max_tvd
    assert check_module.PhiFidelity.not_run not in report["not_run"]


def test_a_split_spec_pre_registers_every_section_for_its_parts(check_module):
    from sdgov.agreement.resolve import resolve
    from sdgov.agreement.spec import ReleaseSpec
    from sdgov.demo import inputs

    raw = yaml.safe_load((inputs() / "spec.yaml").read_text())
    split = {
        "attribute": "Sex",
        "parts": [{"name": p, "codes": [c], "phi": {"marginals": [["Age", "Sex"]]}} for p, c in (("m", 1), ("f", 2))],
    }
    base = {k: v for k, v in raw.items() if k not in ("phi", "audit", "privacy_risk")}
    base |= {"split": split, "privacy": {"rho": 1}}
    schema = load_schema(inputs() / "schema.yaml")
    assert resolve(ReleaseSpec.model_validate(base), schema).split is not None
    # the documented one included: run once per part (tests/unit/audits/test_split_audits.py)
    for name in sections.SECTIONS:
        agreement = resolve(ReleaseSpec.model_validate(base | {name: {}}), schema)
        assert agreement.split is not None and name in agreement.model_dump(mode="json")  # signed with the parts
