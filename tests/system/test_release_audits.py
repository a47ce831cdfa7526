"""The pre-registered audits inside the real release flow (issues 3 and 4): a spec's ``audit:`` and
``privacy_risk:`` sections run in the audit stage, their evidence is hashed into the candidate, published in the
registry and shown in the card; a failed audit blocks the release and the log says so."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sdgov.base.errors import SdgovError
from sdgov.commands import main
from sdgov.registry.log import Registry
from tests.conftest import init_registry, make_demo_inputs, tree_bytes
from tests.fixtures.audit_settings import AUDIT


def test_release_runs_both_preregistered_audits_and_publishes_their_evidence(released_with_audits):
    r, root = released_with_audits["result"], released_with_audits["root"]
    # the session's server also holds other tests' trials: count only this release's
    window = released_with_audits["started"], released_with_audits["finished"]
    d = Path(r.path)
    assert Registry(root).verify() == []
    [run_dir] = (root / "runs").iterdir()
    for name in ("decomposability", "privacy_risk"):  # the controller's evidence, bound to sign-off, unpublished
        assert (run_dir / f"{name}.json").is_file() and not (d / "artifacts" / f"{name}.json").exists()
        assert f"artifacts/{name}.json" not in json.loads((d / "manifest.json").read_text())["files"]
    evidence = json.loads((run_dir / "evidence" / "evidence.json").read_text())
    card = json.loads((d / "card.json").read_text())
    # issue 25: a pre-registered audit's result is a figure of the confidential data: the public card says only that
    # it ran and did not block the release; pass or warn stays in the evidence report
    sections = {n: s["verdict"] for n, s in card["audit_sections"].items()}
    assert sections == dict.fromkeys(evidence["audit_sections"], "controller-side")
    confidential = [
        c for c in card["audit"]["checks"] if c["name"].startswith(("privacy: ", "decomposability", "positive"))
    ]
    assert confidential and {c["result"] for c in confidential} == {"controller-side"}
    assert {c["result"] for c in card["audit"]["checks"] if c not in confidential} == {"pass"}
    dec, pe = evidence["audit_sections"]["decomposability"], evidence["audit_sections"]["privacy_risk"]
    assert dec["verdict"] == "pass" and dec["K"] == 7 and dec["p_value"] >= 0.05
    assert pe["verdict"] in ("pass", "warn") and pe["key_figures"]["claimed_epsilon"] == pytest.approx(1.0)
    assert len(pe["targets"]) == 3
    names = [c["name"] for c in card["audit"]["checks"]]
    assert "decomposability test (black-box, Houssiau et al. 2022)" in names
    assert any(n.startswith("privacy: ") for n in names)
    assert card["audit"]["not_run"] == []  # both ran, so neither is reported as missing
    html = (run_dir / "evidence" / "evidence.html").read_text()
    assert "Black-box decomposability test" in html and "<h2>Privacy evidence</h2>" in html
    assert "contributing most to β*" in html and len(dec["top_cells"]) >= 1  # the Φ⊥ cells behind β*
    assert html.count("<svg") >= 4  # TVD plot, Figure-1 histograms, per-record PG bars, DCR histogram
    md = (d / "card.md").read_text()
    assert "**Black-box decomposability test (Houssiau et al. 2022) (overall)** — controller-side" in md
    assert "contributing most to β*" not in (d / "card.html").read_text()  # the cells' counts are confidential
    stage = next(s for s in card["provenance"]["stages"] if s["stage"] == "audit")
    assert {a["name"] for a in stage["outputs"]} == {"audit", "decomposability", "privacy_risk", "synthetic_codes"}
    assert "data" in {a["name"] for a in stage["inputs"]}  # the controller-side audit read the confidential data
    # every attack trial ran as its own Prefect task run (process pool): visible, by name, in the UI
    fits, classifiers = task_runs("shadow-fit-", *window), task_runs("attack-classifier-", *window)
    decomposability = {phase: task_runs(f"decomposability-{phase}-", *window) for phase in PHASES}
    # every fit the audit's parts share, each exactly once: 2 membership worlds per pair (every target shares them),
    # the one-run game's fit, 4 memorisation worlds (the beyond-Φ check fits the first: both train on 500 records),
    # the record checks' one and the verbatim-copy test's 16 rounds (its default), one fit each
    assert trials(fits) == list(range(2 * 3 + 1 + 4 + 1 + 16))
    assert trials(classifiers) == list(range(3))  # one attack classifier per target
    assert all(r.state.is_completed() for r in fits + classifiers)
    # and so did every decomposability fit (process pool: no memo): K = 7 per extremal dataset, each exactly once
    assert {phase: trials(r) for phase, r in decomposability.items()} == {phase: list(range(7)) for phase in PHASES}
    assert all(r.state.is_completed() for rs in decomposability.values() for r in rs)


PHASES = ("phase1-plus", "phase1-minus", "phase2-plus", "phase2-minus")  # the fits' labels, one per extremal dataset


def trials(runs: list) -> list[int]:
    """The trial indices that task runs named "<label>-<first>-<last>" covered."""
    return sorted(i for r in runs for a, b in [map(int, r.name.rsplit("-", 2)[1:])] for i in range(a, b + 1))


def task_runs(prefix: str, after: datetime, before: datetime | None = None) -> list:
    """Task runs of the session's server whose name contains ``prefix``, started after ``after`` (and before
    ``before``, when given)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName, TaskRunFilterStartTime

    with get_client(sync_client=True) as client:
        return client.read_task_runs(
            task_run_filter=TaskRunFilter(
                name=TaskRunFilterName(like_=prefix), start_time=TaskRunFilterStartTime(after_=after, before_=before)
            )
        )


def test_a_dishonest_generator_blocks_the_release(tmp_path, prefect_server):
    from sdgov.flows.release import release_flow

    # memo: the fits stay in the stage's process (where the memo is), still as task runs
    audit = {**AUDIT, "generator": "dishonest_ipf", "generator_params": {"memo": True}}
    spec = make_demo_inputs(tmp_path / "in", audit=audit)
    root = init_registry(tmp_path / "registry")
    started = datetime.now(UTC)
    with pytest.raises(SdgovError, match="the audit failed"):
        release_flow(spec_path=str(spec), registry_root=str(root))
    fits = {phase: trials(task_runs(f"decomposability-{phase}-", started)) for phase in PHASES}
    assert fits == {phase: list(range(7)) for phase in PHASES}
    reg = Registry(root)
    assert [e.event for e in reg.events()][-1] == "release_blocked"
    assert not (root / "releases").exists() or not any((root / "releases").iterdir())
    report = json.loads(next(root.rglob("audit.json")).read_text())
    check = next(c for c in report["checks"] if c["name"].startswith("decomposability"))
    assert not check["passed"] and report["verdict"] == "fail"
    assert reg.verify() == []


def test_an_audit_generator_named_by_import_path_is_refused_before_anything_is_written(tmp_path, capsys):
    spec = make_demo_inputs(tmp_path / "in", audit={"generator": "no_such_module:factory"})
    root = init_registry(tmp_path / "registry")
    before = tree_bytes(root)
    assert main(["release", "--spec", str(spec), "--root", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "audit.generator" in err[0] and "import path 'no_such_module:factory' refused" in err[0]
    assert tree_bytes(root) == before, "nothing written"
