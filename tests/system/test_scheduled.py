"""Scheduled releases under a standing agreement: the deployment (cron or interval); auto-release only if audits pass
and the budget allows, otherwise a pause for a human; a run whose agreement changed is refused and logged.

The release branch runs as a team runs it: a real Prefect server's own scheduler creates the runs, and the
controller's served deployment (``sdgov schedule``) executes them — nobody calls the flow or creates a run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from sdgov.base.atomic import atomic_write_bytes
from sdgov.governance import ledger
from sdgov.governance.site import Site
from sdgov.registry.log import Registry
from tests.conftest import make_demo_inputs
from tests.fixtures.cli import cli
from tests.fixtures.governed import CONTROLLER_EVENTS, FlowThread, decisions, setup_registry, wait_paused
from tests.governance import sign_standing_approval


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
    assert d["schedules"] == ["0 6 1 * *"]
    # Prefect writes the entrypoint relative to the working directory the command ran in (the tests' own, empty)
    assert d["entrypoint"].endswith("flows/governed.py:governed_release_flow")
    assert d["parameters"]["approval"] == "standing" and d["parameters"]["dvc_pull"] is True
    code, _, err = cli("schedule", "--spec", str(demo_spec), "--cron", "every monday", "--dry-run")
    assert code == 2 and "not a cron expression" in err
    code, out, err = cli("schedule", "--spec", str(demo_spec), "--every", "3600", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["schedules"] == ["every 3600 s"], err
    for bad in (["--every", "0"], ["--every", "60", "--cron", "0 6 1 * *"], []):
        code, _, err = cli("schedule", "--spec", str(demo_spec), *bad, "--dry-run")
        assert code == 2 and len(err.strip().splitlines()) == 1, (bad, err)


def test_a_standing_run_over_the_lifetime_budget_pauses_for_a_controller_who_declines(tmp_path, prefect_server):
    """The standing policy's other branch (its release branch runs on the server's schedule below): the ledger
    refuses the measurement, so the run pauses for a controller instead of releasing; he declines."""
    spec, root, keys = setup_registry(tmp_path, rows=1200)
    policy = yaml.safe_load((root / "policy.yaml").read_text())
    policy["datasets"] = {"toyland_census": {"lifetime_rho": 0.02}}
    (root / "policy.yaml").write_text(yaml.safe_dump(policy))
    carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
    code, _, err = cli("approvers", "commit", *carl, "--root", str(root))  # the controller signs the new policy
    assert code == 0, err
    s = yaml.safe_load(spec.read_text())
    s["privacy"] = {"rho": 0.03}  # σ above the policy's floor of 10 for the demo's 11 marginals; over the lifetime
    spec.write_text(yaml.safe_dump(s))
    sign_standing_approval(spec, root, keys)

    t = FlowThread(spec_path=str(spec), registry_root=str(root), approval="standing", poll_interval=1, timeout_s=120)
    t.start()
    run = wait_paused(root, "budget", thread=t)
    assert "budget" in run["subject"]
    code, _, err = cli("approve", run["run_id"], *carl, "--reject", "--comment", "budget stays")
    assert code == 0, err
    t.join(120)
    assert t.result.status == "rejected"
    assert [e for e, _ in decisions(root)] == [
        "agreement_signed",
        "agreement_signed",
        ledger.REFUSED,
        "budget_rejected",
    ]
    assert (
        ledger.ledger_summary(Site.resolve(root)) == []
        or ledger.ledger_summary(Site.resolve(root))[0]["spent_rho"] == 0
    )
    assert Registry(root).verify() == []


# ------------------------------------------------------------------------------ the server's own scheduler


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _started(argv: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """An ``sdgov`` command in its own process group, stopped (the group: its children too) when the block ends."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("sdgov")), *argv],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait(what: str, done, timeout: float, *procs: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        for p in procs:
            assert p.poll() is None, f"{p.args[1]} exited ({p.returncode}) while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


_IDLE_SERVICES = (
    "CANCELLATION_CLEANUP",
    "FOREMAN",
    "LATE_RUNS",
    "PAUSE_EXPIRATIONS",
    "TRIGGERS",
    "EVENT_PERSISTER",
    "TASK_RUN_RECORDER",
    "REPOSSESSOR",
)
"""Server services the test does not need (on 2 busy cores they slow the ones it does)."""


def _post_until_served(url: str, body: dict):  # -> httpx.Response
    """A POST as a login holder's script would send it: again after a 503, which Prefect's server answers while its
    SQLite database is busy (seen once in a loaded full suite), as Prefect's own client retries; any other answer
    is returned."""
    import httpx

    for _ in range(5):
        made = httpx.post(url, json=body, timeout=10)
        if made.status_code != 503:
            return made
        time.sleep(2)
    return made


def _events(root: Path) -> list[str]:
    return [e.event for e in Registry(root).events() if e.event not in CONTROLLER_EVENTS]


def test_the_servers_scheduler_runs_a_standing_agreement_until_its_spec_changes(tmp_path):
    """``sdgov server start`` (its scheduler every second) creates the runs of ``sdgov schedule --every 4`` (the
    controller's served deployment); nobody calls the flow or creates a run. Two release under the signed standing
    approval; then the spec changes (a new agreement nobody signed) and the next run is refused, logged, nothing
    drawn."""
    import httpx

    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {
        "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "1",
        "PREFECT_RUNNER_POLL_FREQUENCY": "1",
        "PREFECT_LOGGING_TO_API_ENABLED": "false",  # the runs log to schedule.log; the server has less to do
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": "false",
        "PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
        "SDGOV_JAX_CACHE_DIR": str(tmp_path / "jax"),  # the runs' processes share mbi's compiled programs
        **{f"PREFECT_SERVER_SERVICES_{s}_ENABLED": "false" for s in _IDLE_SERVICES},
    }
    server_argv = ["server", "start", "--port", str(port), "--home", str(tmp_path / "prefect")]

    def healthy() -> bool:
        try:
            return httpx.get(f"{api}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    with _started(server_argv, env, tmp_path / "server.log") as server:
        spec, root, keys = setup_registry(tmp_path, rows=1000)  # while the server starts
        # the controller's release channel (issue 28): every scheduled release is tracked and pushed by DVC
        project, remote = tmp_path / "release-repo", tmp_path / "release-remote"
        (root / "controller.yaml").write_text(
            yaml.safe_dump({"release_channel": {"project": str(project), "remote": str(remote)}})
        )
        code, _, err = cli(
            "approvers", "commit", "--as", "Carl Controller", "--key", str(keys["Carl Controller"]), "--root", str(root)
        )
        assert code == 0, err
        sign_standing_approval(spec, root, keys)
        serve_argv = ["schedule", "--spec", str(spec), "--every", "2", "--root", str(root), "--no-dvc-pull"]
        _wait("the Prefect server", healthy, 120, server)
        other = make_demo_inputs(tmp_path / "other", rows=600).with_name("data.csv")  # same schema, other people
        with _started(serve_argv, env | {"PREFECT_API_URL": api}, tmp_path / "schedule.log") as served:
            _wait("two scheduled releases", lambda: _events(root).count("released") >= 2, 240, server, served)
            # a login holder runs the deployment on other data the controller's machine holds: the approval pins
            # the data by its keyed commitment, so the run is refused before the file is parsed
            [dep] = httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json()
            first = {
                "type": "SCHEDULED",
                "state_details": {"scheduled_time": "2000-01-01T00:00:00Z"},
            }  # before the queue
            made = _post_until_served(
                f"{api}/deployments/{dep['id']}/create_flow_run",
                {"parameters": {"data_path": str(other)}, "state": first},
            )
            assert made.status_code == 201, made.text
            _wait("the other data refused", lambda: "run_refused" in _events(root), 120, server, served)
            s = yaml.safe_load(spec.read_text())
            s["privacy"] = {"rho": 0.031}  # a new budget: a new agreement, which the standing approval does not cover
            atomic_write_bytes(spec, yaml.safe_dump(s).encode())
            _wait("a refused run", lambda: _events(root).count("run_refused") >= 2, 120, server, served)

            def runs_now() -> list[dict]:
                return httpx.post(
                    f"{api}/flow_runs/filter", json={"sort": "EXPECTED_START_TIME_ASC"}, timeout=10
                ).json()

            # the refused run logs its refusal, then ends: wait for its final state on the server
            _wait(
                "the refused run's state",
                lambda: any((r.get("state") or {}).get("name") == "Refused" for r in runs_now()),
                60,
            )
        runs = runs_now()

    events = list(Registry(root).events())
    pinned, refused = [e for e in events if e.event == "run_refused"][:2]
    assert "not the data the standing approval pins" in pinned.comment and str(other) in pinned.comment
    assert not list((root / "runs").glob(f"{pinned.run_id}*"))  # nothing written for it
    assert "standing approval covers agreement" in refused.comment and refused.actor == "sdgov"
    assert [e.event for e in events if e.run_id == pinned.run_id] == ["run_refused"]  # nothing drawn, spent, released
    after = [e.event for e in events if e.seq > refused.seq]
    assert "measured" not in after and "budget_spent" not in after and "released" not in after
    released = [e for e in events if e.event == "released"]
    assert len(released) >= 2 and all(e.seq < refused.seq for e in released)
    assert "every audit check passed" in next(e for e in events if e.event == "release_approved").comment
    assert Registry(root).verify() == []
    # each scheduled release was committed to the public release repository and pushed, nobody typing a command
    ids = {r["release_id"] for r in Registry(root).releases()}
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project, capture_output=True, text=True).stdout.split("\n")
    assert len(ids) >= 2 and {f"release {i}" for i in ids} <= set(log), log
    pushed = [p for p in remote.rglob("*") if p.is_file()]
    assert len(pushed) >= 2  # ψ and the synthetic data (the same bytes each run here: DVC stores them once)
    # every run was created by the server's scheduler (auto_scheduled), and the refused one says so in its state
    finished = [r for r in runs if r["state"]["type"] == "COMPLETED"]
    assert len(finished) >= 4 and sum(r["auto_scheduled"] for r in runs) == len(runs) - 1  # the attacker's run
    assert any(r["state"]["name"] == "Refused" for r in finished)
