"""Code is named, not imported by path (issue 38 item 4), attacked through the real interfaces.

A signed proposal once named ``sdgov.reporting.card:subprocess.getoutput``,
``sdgov.audits.generator_protocol:importlib.import_module`` and ``sdgov.commands.__main__:main`` as audit generators:
the worker imported and *called* them, and ``sdgov validate`` did too. Now a spec names generators and controls by
registered name, looked up exactly: each of those strings is refused in one line (exit 2) before anything is
imported or called — by ``sdgov validate`` and ``sdgov release`` (run as programs, watched by an audit hook and a
profiler in their own process) and by the controller's worker, which logs the refusal in its registry.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, init_registry, make_demo_inputs

ATTACKS = (
    "sdgov.reporting.card:subprocess.getoutput",
    "sdgov.audits.generator_protocol:importlib.import_module",
    "sdgov.commands.__main__:main",
)
WHERE = ("audit.generator", "audit.positive_control", "privacy_risk.generator")

# Runs sdgov's CLI in this process for each argv, watching what the attack would have done: an import of the named
# modules (audit hook), a process started (subprocess.getoutput), a call of getoutput or of import_module with
# something other than a module name (the attack calls a factory with (cliques, domain)). One JSON line per argv.
WATCH = r"""
import json, sys
argvs = json.loads(sys.argv[1])
seen = {"imports": [], "popen": 0, "calls": []}
def hook(event, args):
    if event == "import" and args[0] in ("sdgov.commands.__main__",):
        seen["imports"].append(args[0])
    if event == "subprocess.Popen":
        seen["popen"] += 1
sys.addaudithook(hook)
def profile(frame, what, arg):
    if what == "call":
        code = frame.f_code
        if code.co_name == "getoutput" and code.co_filename.endswith("subprocess.py"):
            seen["calls"].append("getoutput")
        if code.co_name == "import_module" and not isinstance(frame.f_locals.get("name"), str):
            seen["calls"].append("import_module")
from sdgov.commands import main
for argv in argvs:
    before = dict(seen, imports=list(seen["imports"]), calls=list(seen["calls"]))
    sys.setprofile(profile)
    try:
        rc = main(argv)
    finally:
        sys.setprofile(None)
    print(json.dumps({"rc": rc, "imports": seen["imports"][len(before["imports"]):],
                      "popen": seen["popen"] - before["popen"], "calls": seen["calls"][len(before["calls"]):]}),
          file=sys.__stdout__, flush=True)
"""


def _spec_naming(dest: Path, where: str, name: str) -> Path:
    """A demo spec whose ``where`` (section.field) names ``name``."""
    section, field = where.split(".")
    extra = {"K": 7} if section == "audit" else {}
    return make_demo_inputs(dest, rows=600, **{section: {**extra, field: name}})


def _watched(argvs: list[list[str]]) -> tuple[list[dict], str]:
    out = subprocess.run(
        [sys.executable, "-c", WATCH, json.dumps(argvs)], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == len(argvs), out.stderr[-3000:]
    return rows, out.stderr


@pytest.mark.parametrize("command", ["validate", "release"])
def test_each_attack_name_is_refused_before_anything_is_imported_or_called(tmp_path, command):
    root = init_registry(tmp_path / "registry") if command == "release" else None
    cases, argvs = [], []
    for i, name in enumerate(ATTACKS):
        where = WHERE[i]  # each name in another field: every field a spec names code in is checked
        spec = _spec_naming(tmp_path / f"in{i}", where, name)
        cases.append((where, name))
        argvs.append([command, "--spec", str(spec), *(["--root", str(root)] if root else [])])
    rows, stderr = _watched(argvs)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == len(ATTACKS), stderr[-3000:]  # one line each, no traceback
    for (where, name), row, line in zip(cases, rows, lines):
        assert row == {"rc": 2, "imports": [], "popen": 0, "calls": []}, (name, row)
        assert line.startswith("sdgov: error:") and where in line and "import path" in line, line
    if root is not None:  # nothing measured, spent or written for a run
        assert not (root / "runs").exists() or not any((root / "runs").iterdir())
        log = (root / "log.jsonl").read_text() if (root / "log.jsonl").exists() else ""
        assert "budget_spent" not in log and "released" not in log


def test_a_wrapped_controls_base_is_code_too(tmp_path, capsys):
    """A leaky control's ``base`` generator (its params) is looked up like the generator itself."""
    from sdgov.commands import main

    spec = make_demo_inputs(
        tmp_path, rows=600, privacy_risk={"generator": "copier", "generator_params": {"base": ATTACKS[0]}}
    )
    assert main(["validate", "--spec", str(spec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "privacy_risk.generator_params" in err[0] and "import path" in err[0]
    code = main(["audit", "privacy", "--spec", str(spec), "--generator", "copier", "--params",
                 json.dumps({"base": ATTACKS[1]}), "--parts", "disclosure"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "import path" in err[0], err


def test_the_worker_refuses_each_attack_name_before_writing_the_proposal_and_logs_it(tmp_path, monkeypatch):
    """The controller's worker, given a signed proposal whose spec names one of the attack strings: refused by the
    one check (:func:`sdgov.agreement.code_names.check_named_code`) before the proposal is written, the run ended
    "Refused" and ``run_refused`` logged in the worker's registry."""
    from prefect.logging import disable_run_logger

    from sdgov.base.settings import WORKER_CONFIG
    from sdgov.flows.worker import controller_release_flow
    from sdgov.registry.log import Registry
    from tests.governance import controller_registry, signed_proposal

    spec = make_demo_inputs(tmp_path / "analyst", rows=600)
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    cfg = {
        "registry": str(root),
        "datasets": {"demo": {"data": str(spec.parent / "data.csv"), "schema": str(spec.parent / "schema.yaml")}},
    }
    (tmp_path / "worker.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv(WORKER_CONFIG, str(tmp_path / "worker.yaml"))
    proposal = signed_proposal(root, spec, keys)
    before = len(Registry(root).events())
    for i, name in enumerate(ATTACKS):
        text = yaml.safe_load(spec.read_text())
        section, field = WHERE[i].split(".")
        text[section] = {**({"K": 7} if section == "audit" else {}), field: name}
        with disable_run_logger():
            state = controller_release_flow.fn(proposal=proposal, spec_yaml=yaml.safe_dump(text))
        assert state.name == "Refused", state
    assert not (root / "proposals").exists()  # nothing written for any of them
    refused = [e.comment for e in Registry(root).events()[before:] if e.event == "run_refused"]
    assert len(refused) == len(ATTACKS)
    for where, name, comment in zip(WHERE, ATTACKS, refused):
        assert where in comment and "import path" in comment and name[:30] in comment, comment


def test_audit_generator_names_resolve_and_a_plugin_registers_by_entry_point():
    """The shipped names, the pipeline generators' variants and the test plug-in's entry points (tests/plugins, on
    the path as an installed distribution would be) resolve; nothing else does."""
    from sdgov.agreement.code_names import ENTRY_POINT_GROUP, audit_generator_names
    from sdgov.audits.generator_protocol import AuditError, load_generator

    names = audit_generator_names()
    assert {"honest_pgm", "dishonest_ipf", "qi_copier", "thin_copier", "camo2u_ipf", "test_crash_in_fit"} <= set(names)
    assert callable(load_generator("honest_pgm")) and callable(load_generator("test_crash_in_fit"))
    for bad in ATTACKS + ("os:system", "honest_pgm ", "Honest_PGM", "", "tests.crashing_generators:in_fit"):
        with pytest.raises(AuditError):
            load_generator(bad)
    assert ENTRY_POINT_GROUP == "sdgov.audit_generators"


def test_the_shipped_generators_old_spellings_are_exact_aliases_so_old_agreements_still_load():
    """Agreements pre-registered before issue 38 wrote ``sdgov.audits.generators:dishonest_pgm``: that exact string
    still names the shipped generator (kept as is, so the agreement's hash is unchanged); a string of the same form
    naming anything else is refused."""
    from sdgov.agreement.code_names import check_code_name
    from sdgov.agreement.sections.decomposability import DecomposabilitySettings
    from sdgov.audits.generator_protocol import load_generator
    from sdgov.audits.generators import dishonest_pgm
    from sdgov.base.errors import SpecError

    old = DecomposabilitySettings(positive_control="sdgov.audits.generators:dishonest_pgm")
    assert old.positive_control == "sdgov.audits.generators:dishonest_pgm"  # the value (and the hash) as written
    assert load_generator(old.positive_control) is dishonest_pgm
    assert check_code_name("sdgov.audits.privacy.leaky:qi_copier", "x") == "qi_copier"
    for bad in ("sdgov.audits.generators:SHIPPED", "sdgov.audits.privacy.leaky:load_generator", ATTACKS[1]):
        with pytest.raises(SpecError):
            check_code_name(bad, "x")
