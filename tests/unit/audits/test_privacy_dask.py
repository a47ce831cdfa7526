"""Issue 37 item 3: with ``engine: dask`` the privacy-risk audit's trials — every shadow fit and attack classifier —
run on the Dask cluster (here a local one of two worker processes, named by ``SDGOV_DASK_SCHEDULER``), and the audit
answers exactly as the serial run in this process: the same result JSON, byte for byte, apart from its timings.

A tiny population and light settings (IPF, no JAX), so the cluster's start dominates the cost.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from distributed import LocalCluster

from sdgov.agreement.sections.privacy_risk import RiskSettings
from sdgov.audits.privacy.run import audit_spec_privacy
from sdgov.base.settings import DASK_SCHEDULER
from sdgov.engines.dask_executor import DaskExecutor
from tests.fixtures.rare_category import tiny_spec

SETTINGS = RiskSettings(
    n_outliers=1,
    n_random=1,
    n_shadow=2,
    n_synth=2,
    train_rows=100,
    canaries=50,
    n_jobs=1,  # the serial run: every trial in this process
    folds=2,
    rf_trees=10,
    disclosure_rows=300,
    beyond_phi_rows=300,
    beyond_phi_synth_rows=20_000,
    beyond_phi_bootstrap=19,
    memorisation_worlds=4,
    memorisation_rows=300,
    memorisation_synth_factor=5,
    verbatim_rounds=2,  # the verbatim-copy test's rounds: fits of the record checks' own, reduced on the cluster
    verbatim_samples=3,
)


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def _audit_json(spec: Path) -> str:
    """The audit's result as the CLI's ``--out`` writes it, less its timings."""
    result = json.loads(audit_spec_privacy(spec, settings=SETTINGS).model_dump_json())
    return json.dumps({k: v for k, v in result.items() if k not in ("seconds", "timing")}, sort_keys=True)


def test_the_audit_on_a_dask_cluster_is_the_serial_audit_byte_for_byte(
    scheduler: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tiny_spec(tmp_path)
    serial = _audit_json(spec)  # engine duckdb, n_jobs 1

    doc = yaml.safe_load(spec.read_text())
    (tmp_path / "dask.yaml").write_text(yaml.safe_dump({**doc, "engine": "dask"}, sort_keys=False))
    monkeypatch.setenv(DASK_SCHEDULER, scheduler)
    labels: list[str] = []
    real_map = DaskExecutor.map

    def recording(self, fn, calls, label):  # type: ignore[no-untyped-def]
        labels.append(label)
        return real_map(self, fn, calls, label)

    monkeypatch.setattr(DaskExecutor, "map", recording)
    on_cluster = _audit_json(tmp_path / "dask.yaml")

    assert {"shadow-fit", "attack-classifier"} <= set(labels), labels  # the trials went to the cluster
    assert serial == on_cluster
    result = json.loads(serial)
    # membership worlds, memorisation's (+ beyond Φ), one-run, the record checks' one and their 2 verbatim rounds
    assert sum(result["fits"].values()) == 4 + 4 + 1 + 1 + 2
    assert result["targets"] and result["memorisation"]["worlds"] == 4 and result["beyond_phi"]["ran"]
    assert result["disclosure"]["verbatim"]["rounds"] == 2
