"""System tests: real Prefect, DVC, the browser, the census extract. Everything collected here is marked ``system``.

Prefect runs against ONE local test server per run of this package; nothing leaves 127.0.0.1. The server is
package-scoped so a combined run (``pytest -q``) stops it before the unit tests, which must never need one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import init_registry, make_demo_inputs, own_authority
from tests.system.postgres import PostgresCluster, TeamServer, postgres
from tests.system.postgres import team_server as start_team_server

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.system)


@pytest.fixture(scope="package", autouse=True)
def prefect_server():
    """Started before any test's capsys, so Prefect's log handlers never hold a stream a test closes."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="package")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 with a database ``prefect`` (skipped without PostgreSQL)."""
    with postgres("prefect") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def team_server(postgres_cluster: PostgresCluster, tmp_path_factory) -> Iterator[TeamServer]:
    """``sdgov server start --database … --auth …`` on ``postgres_cluster``: a team's Prefect server."""
    with start_team_server(postgres_cluster, tmp_path_factory.mktemp("team-server")) as server:
        yield server


@pytest.fixture(scope="package")
def released(tmp_path_factory, prefect_server):
    """One real release of the demo through the Prefect flow (shared by read-only tests)."""
    from sdgov.flows.release import release_flow

    base = tmp_path_factory.mktemp("released")
    spec = make_demo_inputs(base / "inputs")
    root = init_registry(base / "registry")
    with own_authority(base):  # its own account: released_with_audits releases the same demo data
        result = release_flow(spec_path=str(spec), registry_root=str(root))
    return {"result": result, "root": root, "spec": spec}


@pytest.fixture(scope="package")
def released_with_audits(tmp_path_factory, prefect_server):
    """One real release of the demo with both pre-registered audits (``test_release_audits``'s small but real
    settings), shared by read-only tests: 3,000 real records and 2,500 synthetic rows, so the real count is never
    a public figure. ``started``/``finished`` bound the release's task runs on the session's server."""
    from datetime import UTC, datetime

    import yaml

    from sdgov.flows.release import release_flow
    from tests.fixtures.audit_settings import AUDIT, RISK

    base = tmp_path_factory.mktemp("released_with_audits")
    spec = make_demo_inputs(base / "in", rows=3000, audit=AUDIT, privacy_risk=RISK)
    s = yaml.safe_load(spec.read_text())
    s["rows"] = 2500
    spec.write_text(yaml.safe_dump(s, sort_keys=False))
    root = init_registry(base / "registry")
    started = datetime.now(UTC)
    with counting_encodes() as parsed, own_authority(base):  # its own account: `released` releases the same data
        result = release_flow(spec_path=str(spec), registry_root=str(root))
    return {
        "result": result,
        "root": root,
        "spec": spec,
        "started": started,
        "finished": datetime.now(UTC),
        "parsed": parsed,
    }


@contextlib.contextmanager
def counting_encodes() -> Iterator[list[Path]]:
    """The files the engine parses and encodes while the block runs (``test_read_once``: once per release)."""
    from sdgov.engines.duckdb_engine import DuckDBEngine

    encode, parsed = DuckDBEngine.encode, []

    def counting_encode(self, path, *args):
        parsed.append(Path(path).resolve())
        return encode(self, path, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DuckDBEngine, "encode", counting_encode)
        yield parsed
