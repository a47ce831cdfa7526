"""Privacy-budget ledger and the controller's policy: one account per dataset *content*, one draw per statistic
(dataset × marginal × σ), refusal before any noise, crash safety."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from sdgov.base.errors import BudgetError, PolicyError
from sdgov.governance import ledger
from sdgov.governance.site import Site
from sdgov.registry.log import Registry
from tests.conftest import init_registry, make_demo_inputs, tree_bytes
from tests.fixtures.ledger import (
    RHO,
    check_a_second_registry_copies_psi,
    event_names,
    measure_only,
    privacy_statement,
    psi_of,
    registry_with_lifetime,
    spec_at,
)


def test_three_releases_against_two_and_a_half_rho(tmp_path):
    root = tmp_path / "registry"
    registry_with_lifetime(root, 2.5 * RHO)
    # same data each time (make_demo_inputs is deterministic), three budgets → three noise scales
    specs = [spec_at(tmp_path, 1, rho=RHO), spec_at(tmp_path, 1, rho=RHO * 0.99), spec_at(tmp_path, 1, rho=RHO * 0.98)]
    agreed, _ = measure_only(specs[0], root)
    measure_only(specs[1], root)
    n_measured = len(list((root / "measurements").glob("*.json")))
    with pytest.raises(BudgetError, match=r"budget exceeded.*Refused before any noise was drawn"):
        measure_only(specs[2], root)
    reg = Registry(root)
    events = reg.events()
    assert [e.event for e in events].count("measured") == 2
    assert len(list((root / "measurements").glob("*.json"))) == n_measured == 22, "no noise drawn for the third"
    assert events[-1].event == ledger.REFUSED
    acct = ledger.account(Site.resolve(reg.root), "toyland_census", agreed.data.fingerprint)
    assert acct.spent_rho == pytest.approx(RHO * 1.99, rel=1e-9) and len(acct.spends) == 2
    assert acct.remaining_rho == pytest.approx(RHO * 0.51, rel=1e-6)
    assert reg.verify() == []
    # a reused measurement spends nothing: re-running the first agreement is still allowed
    measure_only(specs[0], root)
    assert ledger.account(Site.resolve(reg.root), "toyland_census", agreed.data.fingerprint).spent_rho == pytest.approx(
        RHO * 1.99
    )


def test_seed_only_change_draws_nothing_and_spends_nothing(tmp_path):
    """Issue 12: changing only the public sampling seed released new noise on the same tables."""
    root = init_registry(tmp_path / "registry")
    _, first = measure_only(spec_at(tmp_path, 2011), root)
    log_before = (root / "log.jsonl").read_bytes()
    files_before = {p.name: p.read_bytes() for p in (root / "measurements").glob("*.json")}
    _, second = measure_only(spec_at(tmp_path, 2012), root)
    assert psi_of(first) == psi_of(second), "the noisy counts are the same bytes"
    assert {p.name: p.read_bytes() for p in (root / "measurements").glob("*.json")} == files_before
    new_events = (root / "log.jsonl").read_bytes()[len(log_before) :].decode().splitlines()
    assert [json.loads(line)["event"] for line in new_events] == ["agreement_signed", "agreement_signed"]
    budget = privacy_statement(second)
    assert budget.spent_rho == 0 and budget.reused == len(budget.statistics) == 11
    assert second.reused and not first.reused


def test_two_agreements_sharing_a_marginal_draw_it_once(tmp_path):
    """A second agreement reuses the marginal the first drew at the same σ, draws only its new one, and the
    ledger charges the shared ρ once; the same marginal at another σ is a new, charged statistic."""
    root = init_registry(tmp_path / "registry")
    a = spec_at(tmp_path, 1, phi={"marginals": [["Age", "Sex"], ["Region", "Health"]]}, privacy={"sigma": 12})
    b = spec_at(tmp_path, 2, phi={"marginals": [["Sex", "Age"], ["Education", "Occupation"]]}, privacy={"sigma": 12})
    c = spec_at(tmp_path, 3, phi={"marginals": [["Age", "Sex"]]}, privacy={"sigma": 15})
    agreed, first = measure_only(a, root)
    _, second = measure_only(b, root)
    assert psi_of(first)[("Sex", "Age")] == psi_of(second)[("Sex", "Age")], (
        "the shared marginal is the same noisy table"
    )
    rho12 = 1 / (2 * 12**2)
    reg = Registry(root)
    spends = ledger.account(Site.resolve(reg.root), "toyland_census", agreed.data.fingerprint).spends
    assert [s.rho for s in spends] == pytest.approx([2 * rho12, rho12]), "the shared marginal is charged once"
    b1, b2 = (privacy_statement(m) for m in (first, second))
    assert b2.spent_before_rho == pytest.approx(b1.spent_after_rho) == pytest.approx(2 * rho12)
    assert b2.spent_rho == pytest.approx(rho12)
    how = {tuple(s.attributes): s.how for s in b2.statistics}
    assert how == {("Sex", "Age"): "reused", ("Education", "Occupation"): "drawn"}
    shared = next(s for s in b2.statistics if s.how == "reused")
    assert shared.measured_in_run == Path(agreed.run_dir).name and shared.measured_at
    _, third = measure_only(c, root)  # another σ: a new statistic, drawn and charged
    b3 = privacy_statement(third)
    assert b3.spent_rho == pytest.approx(1 / (2 * 15**2)) and b3.statistics[0].how == "drawn"
    [earlier] = b3.statistics[0].other_sigmas  # both measurements of Sex × Age are on the record
    assert earlier.sigma == 12 and earlier.measured_in_run == Path(agreed.run_dir).name
    assert event_names(root).count("measured") == 3 and reg.verify() == []


def test_renaming_and_crlf_open_no_new_account(tmp_path):
    """Issue 11: renaming toyland_census → Toyland_Census and converting the file to CRLF reset the budget."""
    root = tmp_path / "registry"
    init_registry(root, lifetime_rho=1.5 * RHO)
    first, _ = measure_only(spec_at(tmp_path, 1), root)
    spec2 = spec_at(tmp_path, 2, rho=RHO * 0.9)
    s = yaml.safe_load(spec2.read_text())
    s["dataset"]["name"] = "Toyland_Census"
    spec2.write_text(yaml.safe_dump(s))
    data = spec2.parent / "data.csv"
    data.write_bytes(b"\xef\xbb\xbf" + data.read_bytes().replace(b"\n", b"\r\n"))
    with pytest.raises(BudgetError, match="budget exceeded for dataset 'Toyland_Census'"):
        measure_only(spec2, root)
    [refused] = [e for e in Registry(root).events() if e.event == ledger.REFUSED]
    assert refused.artifacts["dataset"] == first.data.fingerprint


def test_fingerprint_ignores_encoding_column_and_row_order(tmp_path):
    from sdgov.data.fingerprint import fingerprint
    from sdgov.data.schema import load_schema
    from sdgov.engines import load_encoded

    spec = make_demo_inputs(tmp_path / "in", rows=2000)
    schema = load_schema(spec.parent / "schema.yaml")
    data = spec.parent / "data.csv"
    base = fingerprint(load_encoded(data, schema), schema)
    df = pd.read_csv(data, dtype=str, keep_default_na=False)
    variants = {
        "crlf+bom": b"\xef\xbb\xbf" + data.read_bytes().replace(b"\n", b"\r\n"),
        "columns reversed": df[df.columns[::-1]].to_csv(index=False).encode(),
        "rows shuffled": df.sample(frac=1, random_state=3).to_csv(index=False).encode(),
    }
    for name, payload in variants.items():
        path = tmp_path / f"{name}.csv"
        path.write_bytes(payload)
        assert fingerprint(load_encoded(path, schema), schema) == base, name
    # and it does see content: one record changed, or one record dropped
    changed = df.copy()
    changed.loc[0, "Sex"] = "2" if changed.loc[0, "Sex"] == "1" else "1"
    for name, frame in {"one value changed": changed, "one record dropped": df.iloc[1:]}.items():
        path = tmp_path / f"{name}.csv"
        frame.to_csv(path, index=False)
        assert fingerprint(load_encoded(path, schema), schema) != base, name


def test_a_registry_without_policy_refuses_every_release(tmp_path):
    root = tmp_path / "registry"
    with pytest.raises(PolicyError, match="no controller policy") as exc:
        measure_only(spec_at(tmp_path, 1), root)
    assert "sdgov init --root" in exc.value.one_line()
    assert not root.exists(), "refused before anything was written"


def test_release_command_without_policy_prints_one_line_and_writes_nothing(tmp_path, capsys):
    from sdgov.commands import main

    spec, root = spec_at(tmp_path, 1), tmp_path / "registry"
    assert main(["release", "--spec", str(spec), "--root", str(root)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("sdgov: error: ") and "no controller policy" in line and "sdgov init --root" in line
    assert not root.exists()


@pytest.mark.parametrize(
    ("defaults", "over", "match"),
    [
        ({"max_epsilon_per_release": 0.5}, {}, "exceeds the policy's max_epsilon_per_release of 0.5"),
        ({"generators": ["ipf"]}, {}, "generator 'pgm' is not allowed"),
        ({"max_rows": 1000}, {}, "1,350 synthetic rows would exceed the policy's max_rows of 1,000"),
        ({"max_delta": 1e-5}, {"privacy": {"rho": RHO, "delta": 1e-4}}, "δ = 0.0001 exceeds the policy.s δ = 1e-05"),
    ],
)
def test_policy_violations_are_refused_before_anything_is_written(tmp_path, defaults, over, match):
    root = init_registry(tmp_path / "registry", **defaults)
    spec = make_demo_inputs(tmp_path / "in", rows=1500, **{"privacy": {"rho": RHO}, **over})
    before = tree_bytes(root)
    with pytest.raises(PolicyError, match=match):
        measure_only(spec, root)
    assert tree_bytes(root) == before and not (root / "measurements").exists()


def test_default_rows_over_max_rows_are_refused_without_saying_n(tmp_path):
    """The default rows is ψ's noisy total (about N): a refusal must not print the true count to the analyst."""
    root = init_registry(tmp_path / "registry", max_rows=1000)
    spec = make_demo_inputs(tmp_path / "in", rows=1500, privacy={"rho": RHO})
    s = yaml.safe_load(spec.read_text())
    del s["rows"]
    spec.write_text(yaml.safe_dump(s, sort_keys=False))
    with pytest.raises(PolicyError, match=r"the noisy total \(the default rows\) would exceed") as exc:
        measure_only(spec, root)
    assert "1,500" not in exc.value.one_line() and "1500" not in exc.value.one_line()


def test_the_controllers_sigma_floor_raises_sigma(tmp_path):
    root = init_registry(tmp_path / "registry", sigma_floor=20)
    _, measured = measure_only(spec_at(tmp_path, 1), root)
    plan = json.loads(Path(measured.privacy_plan.path).read_text())
    assert plan["floor_binding"] and all(m["sigma"] == 20 for m in plan["marginals"])
    assert plan["rho"] == pytest.approx(11 / (2 * 20**2))


def test_init_writes_a_loadable_default_policy_once(tmp_path, capsys):
    from sdgov.commands import main
    from sdgov.governance.policy import load_policy

    root = tmp_path / "reg"
    assert main(["init", "--root", str(root), "--controller", "Carl Controller"]) == 0
    policy, _ = load_policy(root)
    assert policy.defaults.sigma_floor == 10 and policy.defaults.lifetime_rho == 1.0
    assert policy.set_by.name == "Carl Controller"
    (root / "policy.yaml").write_text(
        (root / "policy.yaml").read_text().replace("lifetime_rho: 1.0", "lifetime_rho: 0.2")
    )
    assert main(["init", "--root", str(root)]) == 0 and "kept the existing" in capsys.readouterr().out
    assert load_policy(root)[0].defaults.lifetime_rho == 0.2


def test_a_planted_unlogged_measurement_is_never_adopted(tmp_path):
    """Only a file persisted by a run that had reserved budget (and died) is adopted; anything else is refused."""
    from sdgov.agreement.load import load_spec
    from sdgov.base.errors import RegistryError
    from sdgov.governance.policy import planned
    from sdgov.measurement.store import Statistic, statistic_key
    from sdgov.tasks.measure import measure
    from tests.conftest import agree

    root = init_registry(tmp_path / "registry")
    spec = spec_at(tmp_path, 5)
    agreed = agree(spec, Site.resolve(str(root)))
    loaded = load_spec(spec)
    from sdgov.governance.policy import load_policy

    limits, _ = load_policy(root)[0].limits(agreed.data.fingerprint, "toyland_census")
    m = planned(limits, loaded.agreement).marginals[0]
    path = Registry(root).measurement_path(statistic_key(agreed.data.fingerprint, m.clique, m.sigma))
    path.parent.mkdir(parents=True)
    shape = loaded.schema_.shape(m.clique)
    path.write_text(  # e.g. exact counts dressed up as noisy ones
        Statistic(
            fingerprint=agreed.data.fingerprint,
            attributes=list(m.clique),
            shape=list(shape),
            sigma=m.sigma,
            noisy_counts=[0] * (shape[0] * shape[1]),
        ).model_dump_json()
    )
    with pytest.raises(RegistryError, match="no run ever reserved budget for it"):
        measure.fn(agreed, Site.resolve(str(root)))
    assert event_names(root).count("measured") == 0 and event_names(root).count(ledger.SPENT) == 0, (
        "refused before spending"
    )


def test_policy_overrides_by_fingerprint_win_over_the_name_label(tmp_path):
    from sdgov.governance.policy import load_policy

    root = init_registry(tmp_path / "registry")
    policy = yaml.safe_load((root / "policy.yaml").read_text())
    fp = "ab" * 32
    policy["datasets"] = {"toyland_census": {"lifetime_rho": 0.3}, fp: {"lifetime_rho": 0.2, "max_rows": 500}}
    (root / "policy.yaml").write_text(yaml.safe_dump(policy))
    p, _ = load_policy(root)
    by_fp, entry = p.limits(fp, "toyland_census")
    assert (by_fp.lifetime_rho, by_fp.max_rows, entry) == (0.2, 500, f"datasets.{fp}")
    by_name, entry = p.limits("cd" * 32, "toyland_census")
    assert (by_name.lifetime_rho, by_name.sigma_floor, entry) == (0.3, 10, "datasets.toyland_census")
    assert p.limits("cd" * 32, "other") == (p.defaults, "defaults")


def test_a_policy_allowing_an_unknown_generator_is_refused(tmp_path):
    from sdgov.governance.policy import load_policy

    root = init_registry(tmp_path / "registry", generators=["pgm", "gan"])
    with pytest.raises(PolicyError, match=r"unknown generator\(s\) \['gan'\]"):
        load_policy(root)


def test_legacy_spends_keyed_by_agreement_still_count(tmp_path):
    """A registry written before per-statistic keys: its spends (file hash, measurement key) stay on the ledger."""
    root = init_registry(tmp_path / "registry", lifetime_rho=1.5 * RHO)
    agreed, _ = measure_only(spec_at(tmp_path, 1), root)
    legacy = {"dataset": "toyland_census", "dataset_sha256": "f" * 64, "rho": RHO, "measurement_key": "k" * 64}
    Registry(root).append(ledger.SPENT, "sdgov", "system", comment=json.dumps(legacy))
    acct = ledger.account(Site.resolve(root), "toyland_census", agreed.data.fingerprint)
    assert acct.spent_rho == pytest.approx(2 * RHO) and len(acct.spends) == 2  # counted by its name label


def test_public_statistics_spend_nothing_and_are_reused(tmp_path):
    root = init_registry(tmp_path / "registry", allow_exact_releases=True)
    spec = spec_at(tmp_path, 1, privacy={"noise": "none"})
    _, first = measure_only(spec, root)
    _, second = measure_only(spec, root)
    assert psi_of(first) == psi_of(second)
    assert event_names(root).count(ledger.SPENT) == 0 and event_names(root).count("measured") == 1
    assert privacy_statement(first).spent_rho == 0


def test_a_second_registry_copies_psi_and_charges_the_same_account(tmp_path):
    """Issue 24: a new registry was a new budget. A second registry on the same data copies the noisy marginals the
    first drew (same bytes, no spend, logged as copied); a new statistic there is charged to the same account and
    refused once the dataset's lifetime is spent, though that registry has spent nothing."""
    check_a_second_registry_copies_psi(tmp_path)


def test_an_authority_swapped_or_reset_under_a_registry_refuses_every_spend(tmp_path, monkeypatch):
    """Issue 38 item 5: the registry's log mirrors the authority it charged (its id and the chain's head); pointed at
    another authority (a new file, an empty one), or at one whose rows were deleted, the registry refuses to spend
    or draw, logs the refusal, and the account is never given back."""
    import sqlite3

    from sdgov.governance.authority_model import AuthorityBroken

    a = tmp_path / "a"
    registry_with_lifetime(a, 2.5 * RHO)
    monkeypatch.setenv("SDGOV_AUTHORITY", str(tmp_path / "old" / "authority.sqlite"))
    measure_only(spec_at(tmp_path, 1), a)  # charged in the old authority
    before = sorted(p.name for p in (a / "measurements").glob("*.json"))
    monkeypatch.setenv("SDGOV_AUTHORITY", str(tmp_path / "new" / "authority.sqlite"))  # a swap: a new, empty file
    with pytest.raises(AuthorityBroken, match="swapped or reset: this registry charged authority"):
        measure_only(spec_at(tmp_path, 2, rho=0.9 * RHO), a)
    assert sorted(p.name for p in (a / "measurements").glob("*.json")) == before, "nothing drawn"
    assert event_names(a).count(ledger.SPENT) == 1 and event_names(a)[-1] == ledger.REFUSED  # logged

    monkeypatch.setenv("SDGOV_AUTHORITY", str(tmp_path / "old" / "authority.sqlite"))  # rows deleted in the right one
    con = sqlite3.connect(tmp_path / "old" / "authority.sqlite")
    con.execute("DELETE FROM reserved")
    con.execute("DELETE FROM charges")
    con.commit()
    con.close()
    with pytest.raises(AuthorityBroken, match="deleted"):
        measure_only(spec_at(tmp_path, 2, rho=0.9 * RHO), a)
    assert sorted(p.name for p in (a / "measurements").glob("*.json")) == before, "nothing drawn"


def test_the_authority_is_found_in_the_environment_only(tmp_path, monkeypatch):
    from sdgov.base.errors import RegistryError
    from sdgov.governance.authority import location, open_authority

    monkeypatch.delenv("SDGOV_AUTHORITY")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert location() == str(tmp_path / "data" / "sdgov" / "authority.sqlite")
    monkeypatch.setenv("SDGOV_AUTHORITY", "postgresql://controller:s3cret@127.0.0.1:1/sdgov")  # nothing listens
    with pytest.raises(RegistryError, match="database failed") as exc:
        open_authority().charges("f" * 64, "x")
    assert "\n" not in exc.value.one_line() and "s3cret" not in exc.value.one_line()
    assert "postgresql://controller:***@127.0.0.1:1/sdgov" in exc.value.one_line()
    (tmp_path / "junk.sqlite").write_text("not a database")
    with pytest.raises(RegistryError, match="budget authority is unreadable"):
        open_authority(str(tmp_path / "junk.sqlite")).charges("f" * 64, "x")


def test_an_authority_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    from sdgov.base.errors import RegistryError

    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("SDGOV_AUTHORITY", str(tmp_path / "a-file" / "authority.sqlite"))
    root = init_registry(tmp_path / "registry")
    with pytest.raises(RegistryError, match="budget authority cannot be used") as exc:
        measure_only(spec_at(tmp_path, 1), root)
    assert "SDGOV_AUTHORITY" in exc.value.one_line()
    assert event_names(root).count("measured") == 0 and event_names(root).count(ledger.SPENT) == 0
