"""End to end through the real Prefect flow: release, card consistency, log, verify, immutability."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from sdgov.budget.accounting import epsilon_of_rho
from sdgov.commands import main
from sdgov.data.encoding import encode
from sdgov.data.schema import load_schema
from sdgov.registry.log import Registry
from tests.conftest import init_registry, synthetic_rows


def test_release_has_every_artifact_and_verifies(released):
    r = released["result"]
    d = Path(r.path)
    names = {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()}
    assert {
        "synthetic.parquet",
        "card.html",
        "card.md",
        "card.json",
        "manifest.json",
        "artifacts/measurements.json",
        "artifacts/agreement.json",
        "artifacts/privacy_plan.json",
    } <= names
    # computed on the confidential data: the controller's evidence (run dir), never published (issue 14)
    assert not any(n.startswith(("artifacts/audit", "artifacts/utility", "utility_report")) for n in names)
    assert Registry(released["root"]).verify() == []
    assert all(not (p.stat().st_mode & 0o222) for p in d.rglob("*") if p.is_file()), "released files are read-only"


def test_log_records_each_decision_in_order(released):
    events = Registry(released["root"]).events()
    assert [e.event for e in events] == [
        "registry_created",  # the genesis: registry id and public key (sdgov/registry/log.py)
        "policy_changed",  # the controller's policy, adopted by `sdgov init` (sdgov/governance/controller.py)
        "agreement_signed",
        "agreement_signed",
        "commitment_secret",  # the id of the secret its commitments are made under (sdgov/registry/commitment.py)
        "budget_spent",
        "measured",
        "release_approved",
        "released",
    ]  # budget_spent: the ledger (sdgov/governance/ledger.py)
    assert [e.role for e in events[2:4]] == ["analyst", "controller"]
    assert events[2].actor != events[3].actor
    assert len({e.agreement_sha256 for e in events[2:] if e.event != "commitment_secret"}) == 1  # the registry's
    assert events[-1].release_id == released["result"].release_id


def test_card_privacy_numbers_are_consistent(released):
    card = json.loads(Path(released["result"].card_json).read_text())
    p = card["privacy"]
    rho = math.fsum(1 / (2 * m["sigma"] ** 2) for m in p["marginals"])
    assert p["rho"] == pytest.approx(rho, rel=1e-12)
    assert p["rho"] <= p["rho_budget"] * (1 + 1e-9)
    assert p["epsilon"] == pytest.approx(epsilon_of_rho(p["rho"], p["delta"]), rel=1e-9)
    assert p["epsilon"] == pytest.approx(1.0, rel=1e-6)  # the demo asked for ε = 1
    assert p["delta"] == 1e-9  # the policy's fixed default: never 10^-ceil(log10 N), which gave N's magnitude
    html = Path(released["result"].card_html).read_text()
    assert "Where δ comes from" in html and "fixed default δ = 1e-09" in html
    for m in p["marginals"]:
        assert " × ".join(m["clique"]) in html
    assert f"{p['epsilon']:.4g}" in html and "<svg" in html


def test_synthetic_data_fits_schema_and_row_count(released):
    schema = load_schema(released["spec"].parent / "schema.yaml")
    df = pd.read_parquet(Path(released["result"].path) / "synthetic.parquet")
    assert len(df) == yaml.safe_load(released["spec"].read_text())["rows"] == synthetic_rows(3000)
    codes = encode(df, schema, columns=list(df.columns))
    assert len(codes) == len(df)


def _flip_one_byte(path: Path, offset: int | None = None) -> None:
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if offset is None else offset
    data[i] ^= 0x01
    path.write_bytes(bytes(data))


def test_flipping_any_byte_of_any_released_file_is_detected(released, tmp_path):
    d0 = Path(released["result"].path)
    files = sorted(str(p.relative_to(d0)) for p in d0.rglob("*") if p.is_file())
    for name in files:
        root = tmp_path / name.replace("/", "_")
        shutil.copytree(released["root"], root)
        _flip_one_byte(root / "releases" / d0.name / name)
        problems = Registry(root).verify()
        assert problems and any(name in p for p in problems), (name, problems)


def test_flipping_any_log_line_is_detected_and_cli_exits_nonzero(released, tmp_path, capsys):
    lines = (released["root"] / "log.jsonl").read_bytes().split(b"\n")
    offset = 0
    for i, line in enumerate(lines[:-1], start=1):
        root = tmp_path / f"line{i}"
        shutil.copytree(released["root"], root)
        _flip_one_byte(root / "log.jsonl", offset + len(line) // 2)
        capsys.readouterr()
        assert main(["registry", "verify", "--root", str(root), "--json"]) == 1
        out = json.loads(capsys.readouterr().out)
        assert out["ok"] is False and any(f"line {i}" in p for p in out["problems"]), (i, out)
        offset += len(line) + 1


def test_extra_file_and_truncated_log_are_detected(released, tmp_path):
    root = tmp_path / "r"
    shutil.copytree(released["root"], root)
    rel = root / "releases" / Path(released["result"].path).name
    rel.chmod(0o755)
    (rel / "smuggled.csv").write_text("x\n")
    lines = (root / "log.jsonl").read_text().splitlines(keepends=True)
    (root / "log.jsonl").write_text("".join(lines[:1] + lines[2:]))
    problems = Registry(root).verify()
    assert any("smuggled.csv" in p for p in problems)
    assert any("chain broken" in p or "out of order" in p for p in problems)


def test_release_is_immutable(released):
    from sdgov.base.errors import RegistryError

    reg = Registry(released["root"])
    with pytest.raises(RegistryError, match="immutable"):
        reg.publish(released["result"].release_id, {}, {}, actor="x", role="controller")


def test_rerun_reuses_the_noise_and_never_redraws(tmp_path, prefect_server):
    from sdgov.flows.release import release_flow

    spec = _spec(tmp_path)
    root = init_registry(tmp_path / "registry")
    first = release_flow(spec_path=str(spec), registry_root=str(root))
    second = release_flow(spec_path=str(spec), registry_root=str(root))
    m1 = (Path(first.path) / "artifacts" / "measurements.json").read_bytes()
    m2 = (Path(second.path) / "artifacts" / "measurements.json").read_bytes()
    assert m1 == m2
    events = Registry(root).events()
    assert [e.event for e in events].count("measured") == 1
    assert [e.event for e in events].count("released") == 2
    assert Registry(root).verify() == []


def _noisy(result) -> dict[tuple[str, ...], list[int]]:
    mset = json.loads((Path(result.path) / "artifacts" / "measurements.json").read_text())
    return {tuple(m["clique"]): m["noisy_counts"] for m in mset["measurements"]}


def _spent(root: Path) -> list[str]:
    return [e.comment for e in Registry(root).events() if e.event == "budget_spent"]


def test_seed_only_change_rereleases_without_new_noise_or_spend(tmp_path, prefect_server):
    """Issue 12: a new public sampling seed is a new agreement, but not a new measurement: nothing is drawn or
    spent, and the card says every table was reused from the first release."""
    from sdgov.flows.release import release_flow
    from tests.conftest import make_demo_inputs

    root = init_registry(tmp_path / "registry")
    first = release_flow(spec_path=str(make_demo_inputs(tmp_path / "a", rows=2000, seed=2011)), registry_root=str(root))
    spent, stats = _spent(root), {p.name: p.read_bytes() for p in (root / "measurements").iterdir()}
    second = release_flow(
        spec_path=str(make_demo_inputs(tmp_path / "b", rows=2000, seed=2012)), registry_root=str(root)
    )
    assert first.agreement_sha256 != second.agreement_sha256
    assert _noisy(first) == _noisy(second), "the noisy bytes are identical"
    assert _spent(root) == spent and len(spent) == 1, "the ledger is unchanged"
    assert {p.name: p.read_bytes() for p in (root / "measurements").iterdir()} == stats
    card = json.loads(Path(second.card_json).read_text())
    ledger = card["statement"]
    assert ledger["spent_rho"] == 0 and ledger["spent_before_rho"] == ledger["spent_after_rho"] > 0
    assert {s["how"] for s in ledger["statistics"]} == {"reused"} and len(ledger["statistics"]) == len(card["phi"])
    assert ledger["earlier_releases_sharing"] == [first.release_id]
    md = Path(second.card_md).read_text()
    assert f"this release spent ρ = 0, leaving {ledger['remaining_rho']:.6g}" in md and first.release_id in md
    assert Registry(root).verify() == []


def _cks20_epsilon(rho: float, delta: float) -> float:
    """The tight zCDP → (ε, δ) conversion of Canonne–Kamath–Steinke 2020 (Prop. 12), minimised over α here."""
    from scipy.optimize import minimize_scalar

    def eps(a: float) -> float:
        return a * rho + (math.log(1 / delta) + (a - 1) * math.log(1 - 1 / a) - math.log(a)) / (a - 1)

    return float(minimize_scalar(eps, bounds=(1 + 1e-9, 1e4), method="bounded", options={"xatol": 1e-10}).fun)


def _pld_epsilon(sigmas: list[float], delta: float) -> float:
    """PLD accounting of discrete Gaussians (sensitivity 1), composed here from the σs alone."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    composed = None
    for s in sorted(sigmas):
        one = pld.from_discrete_gaussian_mechanism(s, sensitivity=1)
        composed = one if composed is None else composed.compose(one)
    assert composed is not None
    return float(composed.get_epsilon_for_delta(delta))


def _assert_epsilons(card: dict, release: dict[frozenset[str], float], dataset: set[tuple[frozenset[str], float]]):
    """The card's ε for this release and for the dataset agree with ρ = Σ 1/(2σ²) (sensitivity 1) converted here:
    equal to the tight CKS20 conversion, within the standard ε = ρ + 2√(ρ ln(1/δ)), and PLD recomputed here."""
    s, delta = card["statement"], card["statement"]["delta"]
    assert delta == card["privacy"]["delta"] == 1e-9
    for e, sigmas in (
        (s["release"], list(release.values())),
        (s["cumulative"], [s for _, s in dataset]),  # shared: counted once
    ):
        rho = math.fsum(1 / (2 * s**2) for s in sigmas)
        assert e["rho"] == pytest.approx(rho, rel=1e-12) and not e["unbounded"]
        assert e["zcdp"] == pytest.approx(_cks20_epsilon(rho, delta), rel=1e-6)
        assert e["zcdp"] <= rho + 2 * math.sqrt(rho * math.log(1 / delta))
        assert e["pld"] == pytest.approx(_pld_epsilon(sigmas, delta), rel=1e-9) and e["pld"] < e["zcdp"]
    assert s["cumulative"]["rho"] == pytest.approx(s["spent_after_rho"], rel=1e-12)
    md = Path(card["_md"]).read_text()
    r, c = s["release"], s["cumulative"]
    headline = (
        f"This release: (ε = {r['zcdp']:.4g}, δ = 1e-09)-DP by the zCDP bound (ρ = {r['rho']:.6g}); "
        f"ε ≤ {r['pld']:.4g} by privacy-loss-distribution accounting (an upper bound). The dataset "
        "over every release so far, in every registry of this controller (its account with the controller's budget "
        f"authority): ε = {c['zcdp']:.4g} by the zCDP bound "
        f"(ρ = {c['rho']:.6g}); ε ≤ {c['pld']:.4g} by privacy-loss-distribution accounting"
    )
    assert headline in md
    privacy = md.split("## Privacy")[1].split("### Lifetime")[0]
    assert "spent" not in re.split(r"spent (?:now|by this release) \(new draws", privacy)[0], (
        "one meaning of 'spent' (the ledger's new charge): this release's ρ is not called spent"
    )


def test_two_agreements_sharing_a_marginal_charge_it_once_and_both_cards_agree(tmp_path, prefect_server):
    """Three releases on one dataset, the first two sharing Age × Sex: each card states this release's ε and the
    dataset's cumulative ε (zCDP bound and PLD), as computed here from the σs; the shared table counts once."""
    from sdgov.flows.release import release_flow
    from tests.conftest import make_demo_inputs

    def spec(d: str, marginals: list[list[str]], sigma: float = 12) -> str:
        p = make_demo_inputs(tmp_path / d, rows=2000, phi={"marginals": marginals}, privacy={"sigma": sigma})
        return str(p)

    def card_of(result) -> dict:
        return {**json.loads(Path(result.card_json).read_text()), "_md": result.card_md}

    age_sex, region_health, education_health = (
        frozenset(c) for c in (("Age", "Sex"), ("Region", "Health"), ("Education", "Health"))
    )

    root = init_registry(tmp_path / "registry")
    first = release_flow(spec_path=spec("a", [["Age", "Sex"], ["Region", "Health"]]), registry_root=str(root))
    second = release_flow(spec_path=spec("b", [["Sex", "Age"], ["Education", "Health"]]), registry_root=str(root))
    assert _noisy(first)[("Sex", "Age")] == _noisy(second)[("Sex", "Age")], "the second drew nothing for it"
    c1, c2 = (json.loads(Path(r.card_json).read_text())["statement"] for r in (first, second))
    rho = 1 / (2 * 12**2)
    spends = [json.loads(c)["rho"] for c in _spent(root)]
    assert spends == pytest.approx([2 * rho, rho]), "ρ of the shared marginal charged once"
    assert c1["spent_rho"] == pytest.approx(2 * rho) and c1["spent_before_rho"] == 0
    assert c2["spent_before_rho"] == pytest.approx(c1["spent_after_rho"])
    assert c2["spent_rho"] == pytest.approx(rho) and c2["spent_after_rho"] == pytest.approx(sum(spends))
    reused = [s for s in c2["statistics"] if s["how"] == "reused"]
    assert [r["attributes"] for r in reused] == [["Sex", "Age"]] and reused[0]["earlier_releases"] == [first.release_id]
    assert c2["earlier_releases_sharing"] == [first.release_id]
    r1 = {age_sex: 12.0, region_health: 12.0}
    r2 = {age_sex: 12.0, education_health: 12.0}
    _assert_epsilons(card_of(first), r1, set(r1.items()))
    _assert_epsilons(card_of(second), r2, set(r1.items()) | set(r2.items()))

    # the same marginal at another σ: a new statistic, drawn and charged, and the card shows both measurements;
    # rows left out: the synthetic file has ψ's noisy total of rows, never N
    c = yaml.safe_load(Path(spec("c", [["Age", "Sex"]], sigma=15)).read_text())
    del c["rows"]
    (tmp_path / "c" / "spec.yaml").write_text(yaml.safe_dump(c, sort_keys=False))
    third = release_flow(spec_path=str(tmp_path / "c" / "spec.yaml"), registry_root=str(root))
    r3 = {age_sex: 15.0}
    _assert_epsilons(card_of(third), r3, set(r1.items()) | set(r2.items()) | set(r3.items()))
    assert card_of(third)["synthetic"]["rows"] == card_of(third)["dataset"]["noisy_rows"]
    c3 = json.loads(Path(third.card_json).read_text())["statement"]
    assert c3["spent_rho"] == pytest.approx(1 / (2 * 15**2)) and c3["earlier_releases_sharing"] == []
    assert [o["sigma"] for o in c3["statistics"][0]["other_sigmas"]] == [12]
    md = Path(third.card_md).read_text()
    assert "Sex × Age (σ = 15 now; before: σ = 12 on" in md and "lifetime ρ" in md


def _spec(tmp_path: Path) -> Path:
    from tests.conftest import make_demo_inputs

    return make_demo_inputs(tmp_path / "in", rows=2000)


FINITE_EPSILON = re.compile(r"ε\s*(?:=|≤|<)\s*[0-9]")
"""A finite ε stated anywhere in a text (ε = 0.9, ε ≤ 1, ε < 2)."""


def test_an_exact_release_and_the_next_card_of_its_data_make_no_finite_epsilon_or_dp_claim(tmp_path, prefect_server):
    """Issue 39: ``privacy: {noise: none}`` needs the policy's allowance; its card, and the card of the next release of
    the same data (noisy, its own tables), state ε = ∞ and make no finite-ε or DP claim — in the statement, the
    card's JSON, HTML and Markdown — and the trail says the marginals were exact. Issue 25: it releases at all."""
    from sdgov.flows.release import release_flow
    from sdgov.registry.trail import build_trail, render_text
    from tests.conftest import make_demo_inputs

    root = init_registry(tmp_path / "registry", datasets={"toyland_census": {"allow_exact_releases": True}})
    said = {"description": "Toyland tables"}  # the demo's own says "at ε = 1": the analyst's words, not the card's
    phi = {"marginals": [["Age", "Sex"], ["Sex", "Health"]]}
    exact = make_demo_inputs(tmp_path / "in", rows=300, privacy={"noise": "none"}, phi=phi, **said)
    first = release_flow(spec_path=str(exact), registry_root=str(root))
    noisy = make_demo_inputs(tmp_path / "in2", rows=300, phi={"marginals": [["Region", "Health"], ["Age"]]}, **said)
    second = release_flow(spec_path=str(noisy), registry_root=str(root))  # the same 300 records, other tables
    for result in (first, second):
        card = json.loads(Path(result.card_json).read_text())
        s = card["statement"]
        assert s["release"]["unbounded"] and s["cumulative"]["unbounded"] and s["exact_measurements"]
        assert all(s[k][e] is None for k in ("release", "cumulative") for e in ("zcdp", "pld"))
        assert card["privacy"]["epsilon"] is None and (s["floor"] or {}).get("max_epsilon") is None
        for name in ("card.md", "card.html"):
            text = (Path(result.path) / name).read_text()
            assert "ε = ∞" in text and "no differential-privacy guarantee" in text, name
            assert not FINITE_EPSILON.search(text), (name, FINITE_EPSILON.search(text))
            assert "-DP" not in text and "differentially private figure" not in text, name
    first_md, second_md = (Path(r.card_md).read_text() for r in (first, second))
    assert "NO NOISE WAS ADDED" in first_md and "No count carries noise" in first_md
    assert "Every count carries noise" not in first_md and "NO NOISE WAS ADDED" not in second_md
    assert "THE DATASET'S PRIVACY IS SPENT" in second_md and "measured exactly in run" in second_md
    trail = render_text(build_trail(Registry(root)))
    assert "measured and persisted the marginals exactly (no noise, no privacy)" in trail
    assert Registry(root).verify() == []


def test_a_run_that_breaks_after_its_agreement_is_recorded_as_failed(tmp_path, prefect_server, monkeypatch):
    """Issue 25: a run that raised after its agreement left the log at 'measured'/'agreement_signed' with no word of
    the failure; the log now ends with a 'run_failed' event naming the error."""
    import sdgov.flows.release as flow_module
    from tests.conftest import make_demo_inputs

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(flow_module, "measure", broken)
    root = init_registry(tmp_path / "registry")
    with pytest.raises(RuntimeError, match="disk on fire"):
        flow_module.release_flow(spec_path=str(make_demo_inputs(tmp_path / "in", rows=300)), registry_root=str(root))
    last = Registry(root).events()[-1]
    assert (last.event, last.actor, last.role) == ("run_failed", "sdgov", "system")
    assert last.comment == "RuntimeError: disk on fire" and last.run_id and last.agreement_sha256
    assert Registry(root).verify() == []
