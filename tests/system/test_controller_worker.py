"""The controller's release service, attacked through the real interface (issue 24, items 1–3).

A Prefect server (``sdgov server start``), the controller's worker (``sdgov worker start --config worker.yaml``) and
the analyst (``sdgov propose --submit``) are separate processes. The analyst's copy of the spec points at a data
file that does not exist: she never needs the data, nor the registry key. Then everything a holder of the server's
login can do is tried over REST — runs that redirect the registry, a replayed or unsigned proposal, a rewritten
pause input, patched parameters, a forced state — and each is refused or detected, and logged in the controller's
registry, with nothing drawn for it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from sdgov.registry.log import Registry
from tests.governance import sign_standing_approval
from tests.system.test_governed import setup_registry
from tests.system.test_scheduled import _IDLE_SERVICES, _free_port, _started, _wait

SDGOV = str(Path(sys.executable).with_name("sdgov"))


def _sdgov(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SDGOV, *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def _events(root: Path) -> list:
    return list(Registry(root).events())


def _paused(env: dict[str, str], root: Path, subject: str, run: str, attempt: int = 1) -> dict:
    def found() -> dict | None:
        r = _sdgov(["runs", "--json", "--root", str(root)], env)
        return next(
            (p for p in json.loads(r.stdout or '{"paused": []}')["paused"] if p["run_id"] == run),
            None,
        )

    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        p = found()
        if p and p["subject"] == subject and p["attempt"] == attempt:
            return p
        time.sleep(1)
    raise AssertionError(f"run {run} did not pause for the {subject}")


def _final(api: str, run: str, timeout: float = 240) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = httpx.get(f"{api}/flow_runs/{run}", timeout=10).json()["state"]
        if st and st["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            return st
        time.sleep(1)
    raise AssertionError(f"run {run} did not end")


def test_the_controllers_worker_releases_a_signed_proposal_and_refuses_or_logs_every_redirect(tmp_path):
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {
        "PREFECT_RUNNER_POLL_FREQUENCY": "1",
        "PREFECT_LOGGING_TO_API_ENABLED": "false",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": "false",
        "PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
        "SDGOV_JAX_CACHE_DIR": str(tmp_path / "jax"),
        **{f"PREFECT_SERVER_SERVICES_{s}_ENABLED": "false" for s in _IDLE_SERVICES},
    }
    client_env = env | {"PREFECT_API_URL": api}
    spec, root, keys = setup_registry(tmp_path, rows=800)
    sign_standing_approval(spec, root, keys)  # the schedule's standing approval
    raw = yaml.safe_load(spec.read_text())
    data, schema = (spec.parent / raw["dataset"]["path"]).resolve(), (spec.parent / raw["schema"]).resolve()
    config = tmp_path / "controller" / "worker.yaml"
    config.parent.mkdir()
    config.write_text(
        yaml.safe_dump(
            {
                "registry": str(root),
                "datasets": {raw["dataset"]["name"]: {"data": str(data), "schema": str(schema)}},
                "schedules": [{"spec": str(spec), "cron": "0 0 1 1 *"}],  # served, not due: attacked below
            }
        )
    )
    # the analyst's own folder: the spec and the public schema, the data path pointing at nothing
    analyst = tmp_path / "analyst"
    analyst.mkdir()
    shutil.copy(schema, analyst / raw["schema"])
    mine = dict(raw, dataset={**raw["dataset"], "path": "not-here/data.csv"})
    mine.pop("approvals", None)
    (analyst / "spec.yaml").write_text(yaml.safe_dump(mine, sort_keys=False))

    with _started(
        ["server", "start", "--port", str(port), "--home", str(tmp_path / "prefect")], env, tmp_path / "s.log"
    ) as server:
        _wait("the Prefect server", lambda: _healthy(api), 120, server)
        with _started(["worker", "start", "--config", str(config)], client_env, tmp_path / "w.log") as worker:
            _wait(
                "the worker's deployments", lambda: _deployment(api, "sdgov-controller-release/controller"), 120, worker
            )
            seq0 = len(_events(root))

            # 1. the analyst proposes, signed, from her own folder (no data there, no registry key)
            r = _sdgov(
                ["propose", "--spec", "spec.yaml", "--as", "Ada Analyst", "--key", str(keys["Ada Analyst"]),
                 "--submit", "--json"],
                client_env | {"SDGOV_KEY_DIR": str(tmp_path / "no-keys")},
                cwd=analyst,
            )  # fmt: skip
            assert r.returncode == 0, r.stderr
            submitted = json.loads(r.stdout)
            run = submitted["flow_run_id"]
            p = _paused(client_env, root, "agreement", run)
            assert p["sha256"] == submitted["agreement_sha256"] and p["verified"] and p["proposer"] == "Ada Analyst"

            # 2. someone rewrites the pause's input on the server: approvers are shown the registry's record
            key = "sdgov-" + p["subject"] + "-1"
            posted = httpx.get(f"{api}/flow_runs/{run}/input/{key}", timeout=10).json()
            fake = json.loads(posted) if isinstance(posted, str) else posted
            fake = {**fake, "sha256": "f" * 64, "summary": {"verdict": "SPOOFED: pass"}}
            assert httpx.delete(f"{api}/flow_runs/{run}/input/{key}", timeout=10).status_code == 204
            assert (
                httpx.post(
                    f"{api}/flow_runs/{run}/input", json={"key": key, "value": json.dumps(fake)}, timeout=10
                ).status_code
                == 201
            )
            listed = next(
                x
                for x in json.loads(_sdgov(["runs", "--json", "--root", str(root)], client_env).stdout)["paused"]
                if x["run_id"] == run
            )
            assert listed["sha256"] == p["sha256"] and set(listed["rewritten"]) >= {"sha256", "summary"}
            carl = ["--as", "Carl Controller", "--key", str(keys["Carl Controller"]), "--root", str(root)]
            r = _sdgov(["approve", run, *carl, "--yes", "--hash", p["sha256"][:8]], client_env)
            assert r.returncode == 0 and "rewritten" in r.stderr, r.stderr

            # 3. while the release awaits its sign-off, the run's parameters are patched
            rel = _paused(client_env, root, "release", run)
            assert "SPOOFED" not in json.dumps(rel) and rel["summary"]["verdict"] == "pass"
            patched = httpx.patch(
                f"{api}/flow_runs/{run}", json={"parameters": {"proposer": "Cora Compliance"}}, timeout=10
            )
            assert patched.status_code == 204
            r = _sdgov(["approve", run, *carl, "--yes", "--hash", rel["sha256"][:8], "--wait", "120"], client_env)
            assert r.returncode == 0, r.stderr
            assert _final(api, run)["name"] == "Completed"

            # 4. runs that try to redirect the worker, replay the proposal or go unsigned
            dep = _deployment(api, "sdgov-controller-release/controller")
            sched = _deployment(api, f"sdgov-governed-release/scheduled-{raw['name']}")
            attacker = tmp_path / "attacker"
            text = (analyst / "spec.yaml").read_text()
            elsewhere = {"registry_root": str(attacker / "reg"), "approvals_path": str(attacker / "appr.yaml")}
            attempts = {
                "redirected": (dep, {"proposal": fresh_token(keys, root, analyst), "spec_yaml": text, **elsewhere}),
                "replayed": (dep, {"proposal": _logged_token(root), "spec_yaml": text}),
                "unsigned": (dep, {"proposal": "", "spec_yaml": text}),
                "scheduled elsewhere": (sched, elsewhere),
            }
            for name, (d, params) in attempts.items():
                made = httpx.post(
                    f"{api}/deployments/{d['id']}/create_flow_run", json={"parameters": params}, timeout=10
                )
                assert made.status_code == 201, (name, made.text)
                st = _final(api, made.json()["id"])
                assert st["name"] == "Refused", (name, st)

            # 5. a paused run forced to COMPLETED: the worker logs it
            r = _sdgov(
                ["propose", "--spec", "spec.yaml", "--as", "Ada Analyst", "--key", str(keys["Ada Analyst"]),
                 "--submit", "--json"],
                client_env,
                cwd=analyst,
            )  # fmt: skip
            forced = json.loads(r.stdout)["flow_run_id"]
            _paused(client_env, root, "agreement", forced)
            res = httpx.post(
                f"{api}/flow_runs/{forced}/set_state", json={"state": {"type": "COMPLETED"}, "force": True}, timeout=10
            )
            assert res.status_code in (200, 201), res.text
            _wait(
                "the forced state logged",
                lambda: any(e.event == "run_tampered" and "forced" in e.comment for e in _events(root)),
                60,
                worker,
            )

    events = _events(root)[seq0:]
    names = [e.event for e in events]
    assert names.count("released") == 1 and names.count("budget_spent") == 1  # one release, one draw, no other
    tampered = [e.comment for e in events if e.event == "run_tampered"]
    assert any("rewritten" in t for t in tampered) and any("parameters were patched" in t for t in tampered)
    assert any("forced to COMPLETED" in t for t in tampered)
    refused = [e.comment for e in events if e.event in ("run_refused", "proposal_refused")]
    assert any("registry_root" in c for c in refused) and any("not the controller's" in c for c in refused)
    assert any("already submitted" in c for c in refused) and any(
        "not signed" in c or "unreadable" in c for c in refused
    )
    assert not attacker.exists()  # nothing was written where a run asked
    card = json.loads(next((root / "releases").glob("*/card.json")).read_text())
    [ada] = [s for s in card["signoffs"] if s["name"] == "Ada Analyst"]
    assert ada["identity_verified"] is True and "signed proposal" in ada["via"]
    assert Registry(root).verify() == []


def _healthy(api: str) -> bool:
    try:
        return httpx.get(f"{api}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _deployment(api: str, name: str) -> dict | None:
    try:
        r = httpx.get(f"{api}/deployments/name/{name}", timeout=5)
    except httpx.HTTPError:
        return None
    return r.json() if r.status_code == 200 else None


def _logged_token(root: Path) -> str:
    """The signed proposal the registry's log kept with the released agreement (a replay of it)."""
    return next(e for e in _events(root) if e.event == "agreement_proposed").signatures["proposal"]


def fresh_token(keys: dict, root: Path, analyst: Path) -> str:
    """A fresh, valid signed proposal: the redirect must be refused for its parameters, not its signature."""
    from tests.governance import signed_proposal

    return signed_proposal(root, analyst / "spec.yaml", keys)
