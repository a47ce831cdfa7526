"""Scheduled releases under a standing agreement: cron deployment; auto-release only if audits pass and the budget
allows, otherwise a pause for a human."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import yaml

from sdgov.governance import ledger
from sdgov.registry.log import Registry
from tests.governance import sign_standing_approval
from tests.system.test_governed import CONTROLLER_EVENTS, FlowThread, cli, decisions, setup_registry, wait_paused


def test_deployment_has_the_cron_schedule_and_standing_policy(demo_spec, tmp_path):
    code, out, err = cli(
        "schedule",
        "--spec",
        str(demo_spec),
        "--cron",
        "0 6 1 * *",
        "--root",
        str(tmp_path / "r"),
        "--dry-run",
        "--json",
    )
    assert code == 0, err
    d = json.loads(out)
    assert d["schedules"] == ["0 6 1 * *"] and d["entrypoint"] == "flows/governed.py:governed_release_flow"
    assert d["parameters"]["approval"] == "standing" and d["parameters"]["dvc_pull"] is True
    code, _, err = cli("schedule", "--spec", str(demo_spec), "--cron", "every monday", "--dry-run")
    assert code == 2 and "not a cron expression" in err


def test_three_scheduled_releases_against_two_and_a_half_rho(tmp_path, prefect_server):
    from sdgov.flows.governed import governed_release_flow

    spec, root, keys = setup_registry(tmp_path, rows=1200)
    rhos = {1: 0.03, 2: 0.031, 3: 0.032}  # σ above the policy's floor of 10 for the demo's 11 marginals
    policy = yaml.safe_load((root / "policy.yaml").read_text())
    policy["datasets"] = {"toyland_census": {"lifetime_rho": rhos[1] + rhos[2] + rhos[3] / 2}}
    (root / "policy.yaml").write_text(yaml.safe_dump(policy))
    carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
    code, _, err = cli("approvers", "commit", *carl, "--root", str(root))  # the controller signs the new policy
    assert code == 0, err

    def next_run(k: int) -> None:  # each scheduled run: a new budget (so new σ) on the same dataset → new ρ
        s = yaml.safe_load(spec.read_text())
        s["privacy"] = {"rho": rhos[k]}
        spec.write_text(yaml.safe_dump(s))
        sign_standing_approval(spec, root, keys)  # a new agreement needs its people's signatures again

    for seed in (1, 2):
        next_run(seed)
        with contextlib.redirect_stdout(io.StringIO()):
            out = governed_release_flow(
                spec_path=str(spec), registry_root=str(root), approval="standing", poll_interval=1, timeout_s=120
            )
        assert out.status == "released"
    events = [e for e in Registry(root).events() if e.event not in CONTROLLER_EVENTS]
    assert [e.event for e in events][:6] == [
        "agreement_signed",
        "agreement_signed",
        "budget_spent",
        "measured",
        "release_approved",
        "released",
    ]
    assert "every audit check passed" in events[4].comment

    # the third run would overspend (ρ1 + ρ2 + ρ3 > lifetime): refused before measuring → paused; a human declines
    next_run(3)
    t = FlowThread(spec_path=str(spec), registry_root=str(root), approval="standing", poll_interval=1, timeout_s=120)
    t.start()
    run = wait_paused(root, "budget", thread=t)
    assert "budget" in run["subject"]
    code, _, err = cli(
        "approve", run["run_id"], "--as", "Carl Controller", "--key", str(keys["Carl Controller"]), "--reject",
        "--comment", "budget stays",
    )  # fmt: skip
    assert code == 0, err
    t.join(120)
    assert t.result.status == "rejected"
    events = [e for e, _ in decisions(root)]
    assert events.count("measured") == 2 and events.count("released") == 2
    assert events[12:] == ["agreement_signed", "agreement_signed", ledger.REFUSED, "budget_rejected"]
    [acct] = ledger.ledger_summary(Registry(root))
    assert acct["spent_rho"] == pytest.approx(rhos[1] + rhos[2]) and len(acct["spends"]) == 2
    assert Registry(root).verify() == []
