"""Issue 37 item 3: with ``engine: dask`` the privacy-risk audit's trials — every shadow fit and attack classifier —
run on the Dask cluster (here a local one of two worker processes, named by ``SDGOV_DASK_SCHEDULER``), and the audit
answers exactly as the serial run in this process: the same JSON, byte for byte, apart from its timings.

A tiny population and light settings (IPF, no JAX), so the cluster's start dominates the cost.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from distributed import LocalCluster

from sdgov.engines import dask_engine
from sdgov.engines.dask_executor import DaskExecutor
from sdgov.flows.cli import main
from tests.unit.test_privacy_risk import FAST, _tiny_spec

TIMINGS = ("seconds", "timing")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def _audit(spec: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict, dict]:
    rc = main(["audit", "privacy", "--spec", str(spec), "--json", "--out", str(out), *FAST])
    summary = json.loads(capsys.readouterr().out)
    assert rc == (1 if summary["verdict"] == "fail" else 0)
    result = json.loads(out.read_text())["result"]
    return {k: v for k, v in summary.items() if k not in (*TIMINGS, "out")}, {
        k: v for k, v in result.items() if k not in TIMINGS
    }


def test_the_audit_on_a_dask_cluster_is_the_serial_audit_byte_for_byte(
    scheduler: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _tiny_spec(tmp_path)
    serial = _audit(spec, tmp_path / "serial.json", capsys)  # engine duckdb, --jobs 1: every trial in this process

    doc = yaml.safe_load(spec.read_text())
    (tmp_path / "dask.yaml").write_text(yaml.safe_dump({**doc, "engine": "dask"}, sort_keys=False))
    monkeypatch.setenv(dask_engine.SCHEDULER_ENV, scheduler)
    labels: list[str] = []
    real_map = DaskExecutor.map

    def recording(self, fn, calls, label):  # type: ignore[no-untyped-def]
        labels.append(label)
        return real_map(self, fn, calls, label)

    monkeypatch.setattr(DaskExecutor, "map", recording)
    on_cluster = _audit(tmp_path / "dask.yaml", tmp_path / "dask.json", capsys)

    assert {"shadow-fit", "attack-classifier"} <= set(labels), labels  # the trials went to the cluster
    for serial_doc, cluster_doc in zip(serial, on_cluster):
        assert json.dumps(serial_doc, sort_keys=True) == json.dumps(cluster_doc, sort_keys=True)
    assert serial[1]["fits"] and serial[1]["targets"] and serial[1]["memorisation"] is not None
