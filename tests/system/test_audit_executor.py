"""The audit and generate stages' process pool on a run's temporary Prefect server (issue 13, item 5): the workers
report their task runs to the server of the run that spawned them and start no server of their own (a worker with
no ``PREFECT_API_URL`` would start a temporary server, ~18 s, and its task runs would never reach the UI); and the
sample's parts, drawn as task runs in two worker processes, make the same file as one worker (issue 15, item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from sdgov.commands import ENV_DEFAULTS
from tests.conftest import REPO

CHILD = textwrap.dedent(
    """
    import json, os
    from prefect import flow
    from sdgov.flows.plumbing.temporary_server import install, serving
    from sdgov.tasks.executor import prefect_executors
    from tests.fixtures.pool_probes import sample_sha256, servers_started_here

    server = install()  # as `sdgov release` does with no PREFECT_API_URL

    @flow
    def audit_like():
        with prefect_executors() as executor_for:
            pool = executor_for(2)
            return {
                "api": pool.map(os.getenv, [("PREFECT_API_URL",)] * 4, "probe-api"),
                "pids": pool.map(os.getpid, [()] * 4, "probe-pid"),
                "servers": pool.map(servers_started_here, [()] * 4, "probe-servers"),
                "sample": [sample_sha256(pool), sample_sha256(executor_for(1))],
            }

    with serving(server):  # as `sdgov release` runs its flow
        out = audit_like()
    here = servers_started_here()  # Prefect's own threads (the task-run waiter's) found the run's server too
    print(json.dumps({**out, "server": server.api_url, "pid": os.getpid(), "env": os.getenv("PREFECT_API_URL"),
                      "servers_here": here}))
    """
)


def test_process_pool_workers_use_the_runs_temporary_server(tmp_path):
    env = {**ENV_DEFAULTS, **os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}  # as `sdgov` sets them
    env.pop("PREFECT_API_URL", None)  # the run starts its own temporary server, as for a user
    p = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["pid"] not in out["pids"]  # the trials really ran in worker processes
    assert out["api"] == [out["server"]] * 4  # every worker was pointed at the run's own server
    assert out["env"] is None  # and the run's environment is restored afterwards
    assert out["servers"] == [0] * 4  # after running task runs, no worker had started a server of its own
    assert out["servers_here"] == 0  # nor the run's own process, from a thread outside the flow's context
    two_workers, one_worker = out["sample"]
    assert two_workers == one_worker  # parts drawn concurrently, finishing in any order: the same bytes
