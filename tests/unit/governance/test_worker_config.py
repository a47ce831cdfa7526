"""The controller's worker configuration (issue 24 item 1): the data, registry and schedule come from the worker's
own file; a run's parameters can only ask, and a run that asks for anything else is refused."""

from __future__ import annotations

import pytest
import yaml

from sdgov.commands import main
from sdgov.governance.worker import check_request, load_worker_config, schedule_parameters


def write(tmp_path, **extra) -> tuple:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs/app.yaml").write_text("dataset: {name: toy, path: x.csv}\n")  # what a schedule releases
    cfg = {
        "registry": "reg",
        "datasets": {"toy": {"data": "data/toy.csv", "schema": "data/schema.yaml"}},
        "schedules": [{"spec": "specs/app.yaml", "cron": "0 6 1 * *"}],
        **extra,
    }
    path = tmp_path / "worker.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return load_worker_config(path)


def test_paths_are_made_absolute_from_the_files_folder(tmp_path):
    cfg, sha = write(tmp_path)
    assert cfg.registry == str(tmp_path / "reg")
    assert cfg.datasets["toy"].data == str(tmp_path / "data/toy.csv")
    assert cfg.schedules[0].spec == str(tmp_path / "specs/app.yaml") and len(sha) == 64


def test_a_scheduled_run_must_ask_for_exactly_what_the_configuration_says(tmp_path):
    """Every parameter of a scheduled run is the worker's (issue 38): the registry, spec, data and approvals, and
    the deadline, the polling and a DVC update too. A refusal does not repeat the configured paths."""
    cfg, _ = write(tmp_path)
    [entry] = cfg.schedules
    ok = schedule_parameters(cfg, entry)
    assert ok["data_path"] == str(tmp_path / "data/toy.csv") and ok["timeout_s"] == cfg.decision_timeout_s
    assert check_request(cfg, ok) == []
    assert check_request(cfg, {**ok, "registry_root": "/tmp/attacker/reg"}) == [
        "registry_root '/tmp/attacker/reg' is not the worker's registry"
    ]
    assert check_request(cfg, {**ok, "approvals_path": "/tmp/attacker/a.yaml"}) == [
        "approvals_path '/tmp/attacker/a.yaml' is not the schedule's"
    ]
    other = check_request(cfg, {**ok, "data_path": str(tmp_path / "data/other.csv")})
    assert other == [f"data_path '{tmp_path / 'data/other.csv'}' is not the schedule's"]
    assert str(tmp_path / "data/toy.csv") not in " ".join(other)  # the configured file is not shown
    assert "standing approval" in check_request(cfg, {**ok, "approval": "interactive"})[0]
    assert "no proposer" in check_request(cfg, {**ok, "proposer": "Cora Compliance"})[0]
    assert "spec_path" in check_request(cfg, {**ok, "spec_path": str(tmp_path / "specs/other.yaml")})[0]
    for name, value in (("timeout_s", 31536000), ("poll_interval", 0), ("dvc_pull", True)):
        assert check_request(cfg, {**ok, name: value}) == [
            f"{name} {value!r} is the worker's to set (worker.yaml), not a run's"
        ]


def test_a_schedule_releases_the_dataset_its_spec_names_unless_it_says_which(tmp_path):
    cfg, _ = write(tmp_path)
    assert cfg.schedules[0].dataset == "toy" and cfg.max_concurrent_runs == 4 and cfg.poll_interval_s == 5
    cfg, _ = write(tmp_path, schedules=[{"spec": "specs/app.yaml", "every": 60, "dataset": "other"}])
    assert cfg.schedules[0].dataset == "other" and schedule_parameters(cfg, cfg.schedules[0])["data_path"] is None


def test_a_proposal_naming_code_by_anything_but_a_registered_name_is_refused():
    from sdgov.agreement.code_names import check_named_code, named_code
    from sdgov.base.errors import SpecError

    for where, spec in [
        ("audit.positive_control", {"audit": {"positive_control": "os:system"}}),
        ("privacy_risk.generator", {"privacy_risk": {"generator": "x"}}),
        ("audit.generator", {"audit": {"generator": "sdgov.reporting.card:subprocess.getoutput"}}),
        ("privacy_risk.generator_params.base", {"privacy_risk": {"generator_params": {"base": "os:system"}}}),
        ("audit.generator", {"sections": {"audit": {"generator": "sdgov.commands.__main__:main"}}}),
    ]:
        with pytest.raises(SpecError) as err:
            check_named_code(spec)
        assert err.value.where == where
    ok = {"audit": {"generator": "honest_pgm", "positive_control": "dishonest_pgm"}, "generator": {"name": "pgm"}}
    check_named_code(ok)
    assert named_code({"name": "a:b c", "generator": {"name": "pgm"}}) == []


def test_a_bad_configuration_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "worker.yaml"
    path.write_text("registry: r\nschedules: [{spec: a.yaml}]\n")  # neither cron nor every
    assert main(["worker", "start", "--config", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exactly one of cron and every" in err
    assert main(["worker", "start", "--config", str(tmp_path / "none.yaml"), "--dry-run"]) == 2
    assert "worker configuration file not found" in capsys.readouterr().err
