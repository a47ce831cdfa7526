"""One budget authority per controller (issue 24 item 4): a new registry is not a new budget.

Before, the same file released in three registries drew three independent noisy copies of every marginal, and each
card stated one release's ε. Here three registries release one spec on one data file through the real flow: each
marginal is drawn once (the second and third copy ψ from the controller's authority: same bytes, no spend), every
card states the dataset's cumulative ε, and a fourth registry that has spent nothing is refused a new statistic
that the dataset's lifetime budget no longer allows — before any draw, with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sdgov.governance import ledger
from sdgov.governance.authority import open_authority
from sdgov.registry.log import Registry
from tests.conftest import init_registry, make_demo_inputs

RHO = 0.03
ROWS = 500
LIFETIME = 1.5 * RHO  # one release fits; a second set of statistics does not


def _events(root: Path) -> list[str]:
    return [e.event for e in Registry(root).events()]


def _spec(dest: Path, rho: float) -> Path:
    """The demo on a small file (the same records each time), a short fit, and rows not equal to N."""
    spec = make_demo_inputs(dest, rows=ROWS, privacy={"rho": rho}, generator={"name": "pgm", "iterations": 50})
    s = yaml.safe_load(spec.read_text())
    s["rows"] = ROWS // 2
    spec.write_text(yaml.safe_dump(s, sort_keys=False))
    return spec


def _stored(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (root / "measurements").glob("*.json")}


def test_three_registries_on_one_file_draw_each_marginal_once_and_a_fourth_cannot_overspend(
    tmp_path, prefect_server, monkeypatch, capsys
):
    import sdgov.tasks.measure as measure_stage
    from sdgov.commands import main
    from sdgov.flows.release import release_flow

    drawn: list[int] = []  # tables given fresh noise, per draw
    real = measure_stage.noisy_measurements
    monkeypatch.setattr(
        measure_stage, "noisy_measurements", lambda exact, sigmas: drawn.append(len(exact)) or real(exact, sigmas)
    )
    policy = {"toyland_census": {"lifetime_rho": LIFETIME}}
    spec = _spec(tmp_path / "in", RHO)
    roots = [init_registry(tmp_path / f"registry{i}", datasets=policy) for i in (1, 2, 3)]
    cards = []
    for root in roots:
        result = release_flow(spec_path=str(spec), registry_root=str(root))
        cards.append(json.loads(Path(result.card_json).read_text()))

    assert drawn == [11], "the demo's 11 marginals drawn once, by the first registry only"
    first = _stored(roots[0])
    assert len(first) == 11 and all(_stored(r) == first for r in roots[1:]), "the same noisy bytes in every registry"
    assert [_events(r).count(ledger.SPENT) for r in roots] == [1, 0, 0]
    assert [_events(r).count("measured") for r in roots] == [1, 1, 1]
    rid = Registry(roots[0]).registry_id()
    for root in roots[1:]:
        [copied] = [e for e in Registry(root).events() if e.event == "measured"]
        assert "reused from budget authority" in copied.comment and rid in copied.comment
        assert Registry(root).verify() == []
    fp = json.loads(next(e.comment for e in Registry(roots[0]).events() if e.event == ledger.SPENT))["fingerprint"]
    [charge] = open_authority().charges(fp, "toyland_census")
    assert charge.rho == pytest.approx(RHO) and charge.registry_id == rid

    eps = cards[0]["statement"]
    assert eps["cumulative"]["zcdp"] == pytest.approx(eps["release"]["zcdp"]), "one release's draws, nothing else"
    for card in cards:  # every card states the dataset's cumulative ε, the same figure
        assert card["statement"]["cumulative"]["zcdp"] == pytest.approx(eps["cumulative"]["zcdp"])
        assert card["statement"]["cumulative"]["pld"] == pytest.approx(eps["cumulative"]["pld"])
        assert card["statement"]["spent_after_rho"] == pytest.approx(RHO)
    for card in cards[1:]:
        stats = card["statement"]["statistics"]
        assert card["statement"]["spent_rho"] == 0 and [s["how"] for s in stats] == ["reused"] * 11
        assert {s["measured_in_registry"] for s in stats} == {rid}

    # a fourth registry, nothing spent in it: a new statistic (another σ) would take the dataset past its lifetime
    fourth = init_registry(tmp_path / "registry4", datasets=policy)
    spec4 = _spec(tmp_path / "in4", 0.9 * RHO)
    capsys.readouterr()
    assert main(["release", "--spec", str(spec4), "--root", str(fourth)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("sdgov: error: ") and "privacy budget exceeded" in line, line
    assert "before any noise was drawn" in line and len(line) <= 300
    [refused] = [json.loads(e.comment) for e in Registry(fourth).events() if e.event == ledger.REFUSED]
    assert refused["registries"] == 1 and refused["spent_before"] == pytest.approx(RHO)
    assert drawn == [11] and not (fourth / "measurements").exists(), "nothing drawn"
    assert _events(fourth).count(ledger.REFUSED) == 1 and _events(fourth).count(ledger.SPENT) == 0
    assert len(open_authority().charges(fp, "toyland_census")) == 1
    print(
        f"cumulative ε on the three cards: {[round(c['statement']['cumulative']['zcdp'], 4) for c in cards]} (zCDP), "
        f"{[round(c['statement']['cumulative']['pld'], 4) for c in cards]} (PLD); one release's ε "
        f"{eps['release']['zcdp']:.4g}; tables drawn per registry {drawn} + [0, 0]; refused: {line}"
    )
