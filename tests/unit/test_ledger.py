"""Privacy-budget ledger: lifetime ρ per dataset, refusal before any noise, one spend per draw, crash safety."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml

from sdgov import ledger
from sdgov.errors import BudgetError
from sdgov.registry import Registry
from tests.conftest import make_demo_inputs

RHO = 0.1


def _policy(root: Path, rho: float, **extra) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "budgets.yaml").write_text(
        yaml.safe_dump(
            {
                "set_by": {"name": "Carl Controller", "role": "controller"},
                "datasets": {"toyland_census": {"rho": rho, **extra}},
            }
        )
    )


def _spec(tmp: Path, seed: int, rows: int = 1500) -> Path:
    return make_demo_inputs(tmp / f"in{seed}", rows=rows, privacy={"rho": RHO}, seed=seed)


def _measure_only(spec: Path, root: Path):
    """The agree and measure stages of one release (the undecorated task code, no orchestrator)."""
    from sdgov.tasks.agree_phi import agree_phi
    from sdgov.tasks.measure import measure

    agreed = agree_phi.fn(str(spec), str(root), uuid.uuid4().hex, None, None)
    return agreed, measure.fn(agreed, str(root))


def test_three_releases_against_two_and_a_half_rho(tmp_path):
    root = tmp_path / "registry"
    _policy(root, 2.5 * RHO)
    # same data each time (make_demo_inputs is deterministic), three different agreements (seed differs)
    specs = [_spec(tmp_path, s) for s in (1, 2, 3)]
    _measure_only(specs[0], root)
    _measure_only(specs[1], root)
    reg = Registry(root)
    n_measured = len(list((root / "measurements").glob("*.json")))
    with pytest.raises(BudgetError, match=r"budget exceeded.*Refused before any noise was drawn"):
        _measure_only(specs[2], root)
    events = reg.events()
    assert [e.event for e in events].count("measured") == 2
    assert len(list((root / "measurements").glob("*.json"))) == n_measured == 2, "no noise drawn for the third"
    assert events[-1].event == ledger.REFUSED
    name, sha = "toyland_census", events[-1].artifacts["dataset"]
    acct = ledger.account(reg, name, sha)
    assert acct.spent_rho == pytest.approx(2 * RHO, rel=1e-12) and len(acct.spends) == 2
    assert acct.remaining_rho == pytest.approx(0.5 * RHO, rel=1e-9)
    assert reg.verify() == []
    # a reused measurement spends nothing: re-running the first agreement is still allowed
    _measure_only(specs[0], root)
    assert ledger.account(reg, name, sha).spent_rho == pytest.approx(2 * RHO, rel=1e-12)


def test_renaming_the_dataset_does_not_reset_its_budget(tmp_path):
    root = tmp_path / "registry"
    _policy(root, 1.5 * RHO)
    (root / "budgets.yaml").write_text(
        yaml.safe_dump({"datasets": {"toyland_census": {"rho": 1.5 * RHO}, "alias": {"rho": 1.5 * RHO}}})
    )
    _measure_only(_spec(tmp_path, 1), root)
    spec2 = _spec(tmp_path, 2)
    s = yaml.safe_load(spec2.read_text())
    s["dataset"]["name"] = "alias"
    spec2.write_text(yaml.safe_dump(s))
    with pytest.raises(BudgetError, match="budget exceeded"):
        _measure_only(spec2, root)


def test_unlisted_dataset_is_refused_when_a_policy_exists(tmp_path):
    root = tmp_path / "registry"
    root.mkdir()
    (root / "budgets.yaml").write_text(yaml.safe_dump({"datasets": {"other": {"rho": 1.0}}}))
    with pytest.raises(BudgetError, match="no lifetime privacy budget is set for dataset 'toyland_census'"):
        _measure_only(_spec(tmp_path, 1), root)
    assert not (root / "measurements").exists()


def test_no_policy_records_spends_without_a_limit(tmp_path):
    root = tmp_path / "registry"
    _measure_only(_spec(tmp_path, 1), root)
    [acct] = ledger.ledger_summary(Registry(root))
    assert acct["lifetime_rho"] is None and acct["spent_rho"] == pytest.approx(RHO)


def test_a_planted_unlogged_measurement_is_never_adopted(tmp_path):
    """Only a file persisted by a run that had reserved budget (and died) is adopted; anything else is refused."""
    from sdgov.errors import RegistryError
    from sdgov.measurement_store import measurement_key
    from sdgov.tasks.agree_phi import agree_phi
    from sdgov.tasks.measure import measure

    root = tmp_path / "registry"
    spec = _spec(tmp_path, 5)
    agreed = agree_phi.fn(str(spec), str(root), uuid.uuid4().hex, None, None)
    path = Registry(root).measurement_path(measurement_key(agreed.agreement_sha256, agreed.data.sha256))
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "agreement_sha256": agreed.agreement_sha256,
                "dataset_sha256": agreed.data.sha256,
                "schema_sha256": "",
                "attributes": [],
                "domain": {},
                "noise": "gaussian",
                "measurements": [],
            }
        )
    )  # e.g. exact counts dressed up as noisy ones
    with pytest.raises(RegistryError, match="no run ever reserved budget for it"):
        measure.fn(agreed, str(root))
    events = [e.event for e in Registry(root).events()]
    assert events.count("measured") == 0 and events.count(ledger.SPENT) == 0, "refused before spending"
