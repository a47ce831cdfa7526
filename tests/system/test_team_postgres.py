"""A team deployment, run as an office runs it, and attacked as a holder of the Prefect login would (issue 24).

Prefect's server runs on PostgreSQL with basic auth (``sdgov server start --database … --auth …``). The controller's
worker (``sdgov worker start --config worker.yaml``) is the only process with the data, the registry key, the ledger
and the schedule. Every person is a separate process (:mod:`tests.system.team`) that holds only their own key and is
stopped if it opens the data file, the registry's key or anyone else's key: the analyst submits a signed proposal
(``sdgov propose --submit``, her copy of the spec pointing at no data at all), the controller decides with
``sdgov approve``, compliance checks with ``sdgov runs`` and ``sdgov registry verify``.

Where the tests run as root (and the venv is runnable by others), every person is also a separate OS user
(``useradd``; the analyst, the controller and compliance in the registry's readers' group, ``sdgov init --readers``):
the file system, not only the hook, keeps the data, the keys and the controller's state from them.

Then everything the shared login allows is tried through Prefect's REST API — runs that redirect the registry or
the approvals, a replayed and an unsigned proposal, a rewritten pause input, patched parameters, a forced state —
and each is refused or detected, and logged in the controller's registry, with nothing drawn or written for it.
Skipped without PostgreSQL's server binaries (``tests/system/postgres.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import yaml

from sdgov.governance.standing import load_approvals
from sdgov.registry.log import Registry
from tests.conftest import make_demo_inputs
from tests.fixtures.governed import setup_registry
from tests.governance import PEOPLE, sign_standing_approval, signed_proposal
from tests.system.postgres import PostgresCluster, TeamServer
from tests.system.team import OSUser, os_users, os_users_unavailable, run_party, start_party


def flow_runs_in_postgres(cluster: PostgresCluster, run_id: str) -> int:
    """How many rows of Prefect's ``flow_run`` table in the cluster's database are this run."""
    import asyncio
    from uuid import UUID

    import asyncpg

    async def count() -> int:
        conn = await asyncpg.connect(
            host=cluster.host, port=cluster.port, user=cluster.user, password=cluster.password, database="prefect"
        )
        try:
            return await conn.fetchval("select count(*) from flow_run where id = $1", UUID(run_id))
        finally:
            await conn.close()

    return asyncio.run(count())


class Office:
    """The test's view of the deployment: the REST API as a login holder sees it, and the people's processes."""

    def __init__(
        self,
        server: TeamServer,
        root: Path,
        keys: dict[str, Path],
        forbid: dict[str, list[Path]],
        users: dict[str, OSUser] | None = None,
    ):
        user, password = server.auth.split(":", 1)
        self.api = httpx.Client(base_url=server.env["PREFECT_API_URL"], auth=(user, password), timeout=10)
        self.server, self.root, self.keys, self.forbid, self.users = server, root, keys, forbid, users or {}

    def person(self, name: str, argv: list[str]):
        """``sdgov *argv`` as ``name``: their own process, home and key (their own OS user where the tests can make
        one); stopped if it opens what is not theirs."""
        user = self.users.get(name)
        home = user.home if user else self.root.parent / "people" / name.split()[0].lower()
        env = {**self.server.env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
        if user:  # Prefect's client files in their own home, not the test's
            env["PREFECT_HOME"] = str(home / ".prefect")
        done = run_party(name, argv, env, self.forbid[name], user=user)
        assert not done.stopped, done.stderr[-2000:]
        return done

    def cli(self, *argv: str) -> tuple[int, str, str]:
        """``sdgov *argv`` in this process, as a client of the team server (a party process costs seconds of
        imports: the refusals that need no separate person are checked here)."""
        from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

        from tests.fixtures.cli import cli

        with temporary_settings(
            updates={PREFECT_API_URL: self.server.env["PREFECT_API_URL"], PREFECT_API_AUTH_STRING: self.server.auth}
        ):
            return cli(*argv)

    def paused(self, subject: str, run: str, attempt: int = 1, timeout: float = 300) -> dict:
        """The run as ``sdgov runs --root`` lists it once paused for ``subject`` (polled in this process; compliance's
        own process lists it once, below)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code, out, err = self.cli("runs", "--json", "--root", str(self.root))
            assert code == 0, err
            p = next((p for p in json.loads(out)["paused"] if p["run_id"] == run), None)
            if p and p["subject"] == subject and p["attempt"] == attempt:
                return p
            time.sleep(1)
        raise AssertionError(f"run {run} did not pause for the {subject}")

    def final(
        self, run: str, timeout: float = 300, final: tuple[str, ...] = ("COMPLETED", "FAILED", "CRASHED")
    ) -> dict:
        """The run's final state on the server (``final``: the state types that count as its end)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.api.get(f"/flow_runs/{run}").json()["state"]
            if st and st["type"] in (*final, "CANCELLED"):
                return st
            time.sleep(1)
        raise AssertionError(f"run {run} did not end")

    def deployment(self, name: str) -> dict | None:
        r = self.api.get(f"/deployments/name/{name}")
        return r.json() if r.status_code == 200 else None

    def events(self) -> list:
        return list(Registry(self.root).events())


@contextlib.contextmanager
def team_people(tmp_path: Path):
    """Where the tests can make OS users: the people as OS users (all in the readers' group), the registry under a
    folder they may pass through, each key in its owner's home; else plain processes under ``tmp_path``."""
    if os_users_unavailable():
        yield tmp_path, {}, None
        return
    with os_users([n for n, _ in PEOPLE], readers=[n for n, _ in PEOPLE]) as (users, group):
        base = users["Ada Analyst"].home.parent / "office"
        base.mkdir()
        base.chmod(0o711)
        yield base, users, group


def test_a_team_releases_through_the_controllers_worker_and_every_redirect_is_refused_or_logged(
    tmp_path, postgres_cluster, team_server
):
    with team_people(tmp_path) as (base, users, group):
        _team(tmp_path, base, users, group, postgres_cluster, team_server)


def _team(tmp_path, base, users, group, postgres_cluster, team_server):
    spec, root, keys = setup_registry(base, rows=800)
    if users:  # each key in its owner's home; the registry readable by the readers' group
        for name, path in list(keys.items()):
            keys[name] = users[name].home / path.name
            path.rename(keys[name])
            os.chown(keys[name], users[name].uid, users[name].gid)
        Registry(root).set_readers_group(group)
    pin = load_approvals(sign_standing_approval(spec, root, keys)).data_sha256_hmac  # pinned to the spec's data
    raw = yaml.safe_load(spec.read_text())
    data, schema = (spec.parent / raw["dataset"]["path"]).resolve(), (spec.parent / raw["schema"]).resolve()
    other = make_demo_inputs(tmp_path / "other", rows=600).with_name("data.csv")  # the same schema, other people
    registry_keys = Path(os.environ["SDGOV_KEY_DIR"]).resolve()  # the registry's signing key is in there
    config = tmp_path / "controller" / "worker.yaml"
    config.parent.mkdir()
    config.write_text(
        yaml.safe_dump(
            {
                "registry": str(root),
                "datasets": {
                    raw["dataset"]["name"]: {"data": str(data), "schema": str(schema)},
                    "toyland_census_2012": {"data": str(other), "schema": str(schema)},
                },
                # served, not due: attacked below
                "schedules": [{"spec": str(spec), "cron": "0 0 1 1 *", "data_sha256_hmac": pin}],
                "max_concurrent_runs": 2,
                "poll_interval_s": 1,
                "decision_timeout_s": 3600,
            }
        )
    )
    # the analyst's own folder: the spec and the public schema; its data path points at nothing
    analyst = users["Ada Analyst"].home / "analyst" if users else tmp_path / "analyst"
    analyst.mkdir()
    shutil.copy(schema, analyst / raw["schema"])
    mine = {**raw, "dataset": {**raw["dataset"], "path": "not-here/data.csv"}}
    mine.pop("approvals", None)
    (analyst / "spec.yaml").write_text(yaml.safe_dump(mine, sort_keys=False))
    if users:
        for p in (analyst, *analyst.iterdir()):
            os.chown(p, users["Ada Analyst"].uid, users["Ada Analyst"].gid)
    people = {n: [data, registry_keys, *[keys[o] for o, _ in PEOPLE if o != n]] for n, _ in PEOPLE}
    office = Office(team_server, root, keys, people, users)

    def start_worker():  # the controller's machine: the data and the registry key, never the people's keys
        return start_party(
            "worker",
            ["worker", "start", "--config", str(config)],
            {
                **team_server.env,
                "SDGOV_KEY_DIR": str(registry_keys),
                "SDGOV_AUTHORITY": os.environ["SDGOV_AUTHORITY"],  # this test's budget authority (tests/conftest.py)
                "PREFECT_RUNNER_POLL_FREQUENCY": "1",
            },
            [keys[n] for n, _ in PEOPLE],
        )

    worker = start_worker()
    try:
        deadline = time.monotonic() + 180
        while not office.deployment("sdgov-controller-release/controller"):
            assert worker.poll() is None and time.monotonic() < deadline, worker.communicate()[1][-3000:]
            time.sleep(1)
        seq0 = len(office.events())

        # 1. the analyst proposes, signed, from her own process: no data, no registry key (either would stop it)
        ada = ["--as", "Ada Analyst", "--key", str(keys["Ada Analyst"])]
        submitted = office.person(
            "Ada Analyst", ["propose", "--spec", str(analyst / "spec.yaml"), *ada, "--submit", "--json"]
        )
        assert submitted.returncode == 0, submitted.stderr[-2000:]
        run = json.loads(submitted.stdout)["flow_run_id"]
        p = office.paused("agreement", run)
        assert p["sha256"] == json.loads(submitted.stdout)["agreement_sha256"] and p["verified"]
        due = datetime.fromisoformat(p["deadline"].replace("Z", "+00:00")) - datetime.now(UTC)
        assert 3000 < due.total_seconds() <= 3600, p["deadline"]  # worker.yaml's decision_timeout_s, not the analyst's
        assert flow_runs_in_postgres(postgres_cluster, run) == 1  # the run is in PostgreSQL, not a SQLite file
        seen = office.person("Cora Compliance", ["runs", "--json", "--root", str(root)])  # no data, no key needed
        assert run in [r["run_id"] for r in json.loads(seen.stdout)["paused"]]
        selfie = office.person(
            "Ada Analyst", ["approve", run, *ada, "--root", str(root), "--yes", "--hash", p["sha256"][:8]]
        )
        assert selfie.returncode == 2 and "cannot approve or reject it" in selfie.stderr  # separation of duties

        # 2. a login holder rewrites what the pause awaits: the controller is shown, and signs, the registry's record
        key = f"sdgov-agreement-{p['attempt']}"
        posted = office.api.get(f"/flow_runs/{run}/input/{key}").json()
        fake = {**(json.loads(posted) if isinstance(posted, str) else posted), "sha256": "f" * 64}
        fake["summary"] = {"verdict": "SPOOFED: pass"}
        assert office.api.delete(f"/flow_runs/{run}/input/{key}").status_code == 204
        assert (
            office.api.post(f"/flow_runs/{run}/input", json={"key": key, "value": json.dumps(fake)}).status_code == 201
        )
        carl = ["--as", "Carl Controller", "--key", str(keys["Carl Controller"]), "--root", str(root)]
        agreed = office.person("Carl Controller", ["approve", run, *carl, "--yes", "--hash", p["sha256"][:8]])
        assert agreed.returncode == 0 and "rewritten" in agreed.stderr, agreed.stderr[-2000:]

        # 3. while the release awaits its sign-off, the run's parameters are patched
        rel = office.paused("release", run)
        assert "SPOOFED" not in json.dumps(rel) and rel["summary"]["verdict"] == "pass"
        # what every login holder reads of the pause (the form's text, the pending record): only what the card
        # publishes — no utility against the real data, no hash of the data
        deadline = time.monotonic() + 60  # the form is saved a moment after the run shows as paused
        while "Sign off the release" not in (
            readable := json.dumps(
                office.api.post(f"/flow_runs/{run}/input/filter", json={"prefix": "", "limit": 200}).json()
            )
        ):
            assert time.monotonic() < deadline, "the release form was not saved"
            time.sleep(0.5)
        assert rel["sha256"] in readable
        assert "Decide by " + p["deadline"].replace("T", " ").rstrip("Z") in readable  # the deadline, on the form
        for secret in ("TVD", "real vs synthetic", "fingerprint", "true record count", "Fitness statement"):
            assert secret not in readable, secret
        # the draft card rewritten in the registry before approval: flagged by runs, refused by approve
        draft = Path(rel["summary"]["draft_card"])
        shown = draft.read_bytes()
        draft.write_bytes(shown.replace(b"</body>", b"<p>every check passed</p></body>"))
        _, flagged, _ = office.cli("runs", "--json", "--root", str(root))
        [entry] = [r for r in json.loads(flagged)["paused"] if r["run_id"] == run]
        assert not entry["verified"] and "card.html was changed after the flow showed it" in entry["unverified"]
        code, _, err = office.cli("approve", run, *carl, "--yes", "--hash", rel["sha256"][:8])
        assert code == 2 and "card.html was changed" in err, err
        draft.write_bytes(shown)
        assert (
            office.api.patch(f"/flow_runs/{run}", json={"parameters": {"proposer": "Cora Compliance"}}).status_code
            == 204
        )
        shipped = office.person("Carl Controller", ["approve", run, *carl, "--yes", "--hash", rel["sha256"][:8]])
        assert shipped.returncode == 0, shipped.stderr[-2000:]
        assert office.final(run)["name"] == "Completed"

        # 4. runs that try to redirect the worker, replay the proposal, or go unsigned: refused before any read
        dep = office.deployment("sdgov-controller-release/controller")
        sched = office.deployment(f"sdgov-governed-release/scheduled-{raw['name']}")
        attacker = tmp_path / "attacker"
        text = (analyst / "spec.yaml").read_text()
        elsewhere = {"registry_root": str(attacker / "reg"), "approvals_path": str(attacker / "appr.yaml")}
        replay = next(e for e in office.events() if e.event == "agreement_proposed").signatures["proposal"]
        fresh = signed_proposal(root, analyst / "spec.yaml", keys)  # valid: refused for its parameters alone
        attempts = {
            "redirected": (dep, {"proposal": fresh, "spec_yaml": text, **elsewhere}),
            "held for a year": (dep, {"proposal": fresh, "spec_yaml": text, "timeout_s": 31536000}),
            "replayed": (dep, {"proposal": replay, "spec_yaml": text}),
            "unsigned": (dep, {"proposal": "", "spec_yaml": text}),
            "scheduled elsewhere": (sched, elsewhere),
            "scheduled on other data": (sched, {"data_path": str(other)}),  # a dataset the worker holds, same schema
        }  # fmt: skip
        made = {}
        for name, (d, params) in attempts.items():  # made at once: the worker runs them two at a time
            made[name] = office.api.post(f"/deployments/{d['id']}/create_flow_run", json={"parameters": params})
            assert made[name].status_code == 201, (name, made[name].text)
        for name, created in made.items():
            assert office.final(created.json()["id"])["name"] == "Refused", name

        # 5. two runs at once (max_concurrent_runs: 2); a third waits for a slot. One paused run forced to
        # COMPLETED through the API is cancelled and logged, and its slot serves the third
        def submit() -> str:
            made = office.person("Ada Analyst", ["propose", "--spec", str(analyst / "spec.yaml"), *ada, "--submit"])
            return made.stdout.split()[2]  # "submitted run <id> of …"

        forced, held = submit(), submit()
        office.paused("agreement", forced)
        office.paused("agreement", held)
        waiting = submit()
        res = office.api.post(f"/flow_runs/{forced}/set_state", json={"state": {"type": "COMPLETED"}, "force": True})
        assert res.status_code in (200, 201), res.text
        assert office.final(forced, 120, final=())["type"] == "CANCELLED"  # COMPLETED was forced; the run ended it
        office.paused("agreement", waiting)  # served once the forced run's process ended

        # 6. the worker and its runs' processes die (systemd stopping it, a reboot): a decision sent meanwhile is
        # never reported as taken; the restarted worker ends both runs it held and logs them
        os.killpg(worker.pid, signal.SIGKILL)
        worker.communicate(timeout=60)
        lost = office.paused("agreement", held)
        code, _, err = office.cli("approve", held, *carl, "--yes", "--hash", lost["sha256"][:8], "--wait", "5")
        assert code == 2 and "no process took the decision" in err, err
        worker = start_worker()
        for ended in (held, waiting):
            assert office.final(ended, 180)["type"] == "CANCELLED", ended
        code, _, err = office.cli("approve", held, *carl, "--yes", "--hash", lost["sha256"][:8])
        assert code == 2 and "is not paused" in err, err
    finally:
        worker.terminate()
        _, worker_err = worker.communicate(timeout=60)
    assert "stopped: opened forbidden path" not in worker_err

    events = office.events()[seq0:]
    names = [e.event for e in events]
    assert names.count("released") == 1 and names.count("budget_spent") == 1  # one release, one draw
    tampered = [e.comment for e in events if e.event == "run_tampered"]
    listed = office.person("Cora Compliance", ["runs", "--json", "--root", str(root)])  # shown where people look
    assert {t["what"] for t in json.loads(listed.stdout)["tampered"]} == set(tampered)
    assert any("rewritten" in t for t in tampered) and any("parameters were patched" in t for t in tampered)
    assert any("forced to COMPLETED" in t for t in tampered)
    refused = " | ".join(e.comment for e in events if e.event in ("run_refused", "proposal_refused"))
    assert "registry_root" in refused and "not the controller's" in refused  # both deployments refused redirects
    assert "already submitted" in refused and "unreadable" in refused  # the replay, the unsigned one
    assert "timeout_s" in refused and f"data_path '{other}' is not the schedule's" in refused
    assert not attacker.exists()  # nothing was written where a run asked
    ended = {e.artifacts["flow_run_id"]: e.comment for e in events if e.event == "run_ended"}
    assert "forced to COMPLETED" in ended[forced] and "nothing was drawn, spent or released" in ended[forced]
    assert all("worker restarted" in ended[r] and "nothing was drawn" in ended[r] for r in (held, waiting)), ended
    assert names.count("worker_started") == 1  # the restart (the first start was before seq0)
    assert [e.event for e in events if e.run_id and str(other) in e.comment] == ["run_refused"]
    card = json.loads(next(root.glob("releases/*/card.json")).read_text())
    assert [(s["name"], s["subject"], s["identity_verified"]) for s in card["signoffs"]] == [
        ("Ada Analyst", "agreement", True),
        ("Carl Controller", "agreement", True),
        ("Carl Controller", "release", True),
    ]
    assert "signed proposal" in card["signoffs"][0]["via"]

    # compliance verifies the registry from its own process, with neither the data nor the registry's key
    verified = office.person("Cora Compliance", ["registry", "verify", "--root", str(root)])
    assert verified.returncode == 0, verified.stdout + verified.stderr[-2000:]
    # the team server's log never shows the database password or the basic-auth password
    log = team_server.stderr()
    assert "PostgreSQL postgresql://sdgov:***@127.0.0.1" in log
    assert postgres_cluster.password not in log and team_server.auth.split(":", 1)[1] not in log
