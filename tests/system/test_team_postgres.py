"""A team deployment, run as an office runs it (issue 24 item 6): Prefect's server on PostgreSQL with basic auth,
the controller's process with the data and the registry key, and the people as separate processes that hold only
their own key and are stopped if they open the data file, the registry's key or someone else's key.

The controller's side is today's governed flow in a process of its own (the controller's worker replaces it); the
approvals go through ``sdgov approve`` and the checks through ``sdgov runs`` / ``sdgov registry verify``, each in a
party process (:mod:`tests.system.team`). Skipped without PostgreSQL's server binaries (``tests/system/postgres.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from sdgov.registry.log import Registry
from tests.governance import PEOPLE
from tests.system.postgres import PostgresCluster, TeamServer
from tests.system.team import run_party
from tests.system.test_governed import decisions, setup_registry

CONTROLLER = """
import json, sys
from sdgov.flows.governed import governed_release_flow

spec, root, proposer = sys.argv[1:4]
out = governed_release_flow(spec_path=spec, registry_root=root, proposer=proposer, timeout_s=600, poll_interval=1)
print(json.dumps({"status": out.status, "message": out.message,
                  "card_json": out.release.card_json if out.release else None}))
"""


def start_controller(server: TeamServer, spec: Path, root: Path, proposer: str) -> subprocess.Popen[str]:
    """The controller's process: the governed flow on the team server, with the data and the registry key
    (``SDGOV_KEY_DIR``, as this test process made the registry)."""
    env = {**server.env, "SDGOV_KEY_DIR": os.environ["SDGOV_KEY_DIR"]}
    return subprocess.Popen(
        [sys.executable, "-c", CONTROLLER, str(spec), str(root), proposer],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def paused(server: TeamServer, root: Path, subject: str, controller: subprocess.Popen[str], timeout=300) -> dict:
    """The run of ``root`` paused for ``subject``, as ``sdgov runs --json`` lists it (read in this process)."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    from tests.system.test_governed import cli

    deadline = time.monotonic() + timeout
    with temporary_settings(
        updates={PREFECT_API_URL: server.env["PREFECT_API_URL"], PREFECT_API_AUTH_STRING: server.auth}
    ):
        while time.monotonic() < deadline:
            code, out, err = cli("runs", "--json")
            assert code == 0, err
            mine = [r for r in json.loads(out)["paused"] if r["registry"] == str(root)]
            if mine and mine[0]["subject"] == subject:
                return mine[0]
            assert controller.poll() is None, controller.communicate()[1][-3000:]
            time.sleep(1)
    raise AssertionError(f"no run paused for {subject}")


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


def test_a_team_releases_through_a_postgres_backed_server(tmp_path, postgres_cluster, team_server):
    spec, root, keys = setup_registry(tmp_path, rows=1500)
    data = spec.with_name("data.csv").resolve()
    registry_keys = Path(os.environ["SDGOV_KEY_DIR"]).resolve()  # the registry's signing key is in there

    def person(name: str) -> tuple[dict[str, str], list[Path]]:
        """A person's process: the server's client settings, a home of its own (no registry key there), and
        everything not theirs forbidden (the data, the registry's key, the other people's keys)."""
        others = [keys[n] for n, _role in PEOPLE if n != name]
        home = tmp_path / "people" / name.split()[0].lower()
        env = {**team_server.env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
        return env, [data, registry_keys, *others]

    controller = start_controller(team_server, spec, root, "Ada Analyst")
    try:
        run = paused(team_server, root, "agreement", controller)
        rid = run["run_id"]
        assert flow_runs_in_postgres(postgres_cluster, rid) == 1  # the run is in PostgreSQL, not a SQLite file

        # compliance looks at the paused runs: what it reads holds no data and needs no key
        env, forbid = person("Cora Compliance")
        seen = run_party("Cora Compliance", ["runs", "--json"], env, forbid)
        assert seen.returncode == 0 and not seen.stopped, seen.stderr[-2000:]
        assert rid in [r["run_id"] for r in json.loads(seen.stdout)["paused"]]

        # the analyst, from her own process with her own key, tries to approve her own proposal: refused; her
        # process never opened the data file. (Logging a refusal made outside the controller's machine needs the
        # registry's key there: today it stays on her terminal; issue 24 item 7 wants it in the log.)
        env, forbid = person("Ada Analyst")
        ada = ["--as", "Ada Analyst", "--key", str(keys["Ada Analyst"])]
        selfie = run_party("Ada Analyst", ["approve", rid, *ada, "--yes", "--hash", run["sha256"][:8]], env, forbid)
        assert selfie.returncode == 2 and not selfie.stopped, selfie.stderr[-2000:]
        assert "proposed this agreement and cannot approve or reject it" in selfie.stderr

        # the controller approves Φ from his own process, holding his own key only
        env, forbid = person("Carl Controller")
        carl = ["--as", "Carl Controller", "--key", str(keys["Carl Controller"])]
        agreed = run_party(
            "Carl Controller",
            ["approve", rid, *carl, "--comment", "Φ is fine", "--yes", "--hash", run["sha256"][:8], "--json"],
            env,
            forbid,
        )
        assert agreed.returncode == 0 and not agreed.stopped, agreed.stderr[-2000:]

        release = paused(team_server, root, "release", controller)
        assert release["summary"]["verdict"] == "pass"
        sha = release["sha256"]
        shipped = run_party(
            "Carl Controller",
            ["approve", rid, *carl, "--comment", "ship it", "--yes", "--hash", sha[:8], "--json"],
            env,
            forbid,
        )
        assert shipped.returncode == 0 and not shipped.stopped, shipped.stderr[-2000:]
        assert json.loads(shipped.stdout)["decision"] == "approve"

        out, err = controller.communicate(timeout=300)
        assert controller.returncode == 0, err[-3000:]
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait(30)
    outcome = json.loads(out.strip().splitlines()[-1])
    assert outcome["status"] == "released", outcome
    card = json.loads(Path(outcome["card_json"]).read_text())
    assert [(s["name"], s["subject"], s["decision"]) for s in card["signoffs"]] == [
        ("Ada Analyst", "agreement", "approve"),
        ("Carl Controller", "agreement", "approve"),
        ("Carl Controller", "release", "approve"),
    ]
    assert all(s["identity_verified"] for s in card["signoffs"][1:])
    assert card["signoffs"][2]["subject_sha256"] == sha
    assert [d for d in decisions(root) if d[0] != "approval_refused"] == [
        ("agreement_proposed", "Ada Analyst"),
        ("agreement_approved", "Carl Controller"),
        ("budget_spent", "sdgov"),
        ("measured", "sdgov"),
        ("release_approved", "Carl Controller"),
        ("released", "Carl Controller"),
    ]

    # compliance verifies the registry from its own process, with neither the data nor the registry's key
    env, forbid = person("Cora Compliance")
    verified = run_party("Cora Compliance", ["registry", "verify", "--root", str(root)], env, forbid)
    assert verified.returncode == 0 and not verified.stopped, verified.stdout + verified.stderr[-2000:]
    assert Registry(root).verify() == []
    # the team server's log never shows the database password or the basic-auth password
    log = team_server.stderr()
    assert "PostgreSQL postgresql://sdgov:***@127.0.0.1" in log
    assert postgres_cluster.password not in log and team_server.auth.split(":", 1)[1] not in log
