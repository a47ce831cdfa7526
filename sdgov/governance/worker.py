"""The controller's worker configuration: where the data, the registry and the schedule are — never a run parameter.

The controller starts the release service on their own machine (``sdgov worker start --config worker.yaml``); it
serves the deployments that read confidential data or hold the registry key, and every run they execute takes its
registry, data, schema and standing approvals from this file::

    registry: /srv/sdgov/registry            # relative paths: from this file's folder
    name: controller                         # the proposals deployment: sdgov-controller-release/<name>
    datasets:                                # by the name a spec declares (dataset.name)
      census2011_teaching: {data: /srv/data/census.csv, schema: /srv/data/schema.yaml}
    schedules:                               # optional: standing agreements released on a schedule
      - {spec: /srv/specs/app1.yaml, cron: "0 6 1 * *"}     # or every: 3600; approvals: FILE (default the spec's)

Anyone holding the Prefect server's login can create runs of these deployments with any parameters, patch them,
or rewrite their inputs. So a run's parameters can only *ask*: a run of a scheduled deployment whose registry,
spec, data or approvals differ from this file — or a proposal run that carries any parameter but the signed
proposal and the spec's text — is refused before anything is read, and the refusal is logged in the registry
named here (:func:`check_request`). The worker logs the file's sha256 when it starts (``worker_started``), so
the log says which configuration ran each release.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from sdgov.base.errors import SpecError
from sdgov.base.hashing import sha256_file
from sdgov.base.loading import load_model_file
from sdgov.base.model import Frozen

ENV = "SDGOV_WORKER_CONFIG"  # set by `sdgov worker start` in its own process: the runs it executes inherit it

__all__ = [
    "ENV",
    "DatasetSource",
    "ScheduleEntry",
    "WorkerConfig",
    "active",
    "check_request",
    "load_worker_config",
]


class DatasetSource(Frozen):
    """Where the controller keeps one dataset: the confidential file and its public schema."""

    data: str
    schema_file: str = Field(alias="schema")


class ScheduleEntry(Frozen):
    """A standing agreement released on a schedule (a cron expression or a fixed interval in seconds)."""

    spec: str
    cron: str | None = None
    every: int | None = Field(default=None, ge=1)
    approvals: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _one_schedule(self) -> ScheduleEntry:
        if (self.cron is None) == (self.every is None):
            raise ValueError(f"schedule of {self.spec}: give exactly one of cron and every")
        return self


class WorkerConfig(Frozen):
    """The controller's worker: the registry it releases into, the datasets it may read, the schedules it keeps."""

    registry: str
    name: str = Field(default="controller", pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    datasets: dict[str, DatasetSource] = {}
    schedules: list[ScheduleEntry] = []
    decision_timeout_s: int = Field(default=7 * 24 * 3600, ge=1)

    def dataset(self, name: str) -> DatasetSource:
        """The controller's source of dataset ``name``, or a one-line ``SpecError`` (a proposal for data the controller
        does not hold here)."""
        if name not in self.datasets:
            raise SpecError(
                f"the controller's worker holds no dataset {name!r}",
                "worker.yaml: datasets",
                "propose for one of: " + (", ".join(sorted(self.datasets)) or "(none configured)"),
            )
        return self.datasets[name]


def _absolute(base: Path, value: str) -> str:
    p = Path(value).expanduser()
    return str((p if p.is_absolute() else base / p).resolve())


def load_worker_config(path: str | Path) -> tuple[WorkerConfig, str]:
    """The configuration with every path made absolute (relative ones from the file's folder), and the file's
    sha256; an unreadable or invalid file is one line."""
    path = Path(path)
    cfg = load_model_file(WorkerConfig, path, SpecError, "worker configuration")
    base = path.resolve().parent
    data: dict[str, Any] = cfg.model_dump(by_alias=True)
    data["registry"] = _absolute(base, cfg.registry)
    for d in data["datasets"].values():
        d["data"], d["schema"] = _absolute(base, d["data"]), _absolute(base, d["schema"])
    for s in data["schedules"]:
        s["spec"] = _absolute(base, s["spec"])
        if s["approvals"]:
            s["approvals"] = _absolute(base, s["approvals"])
    return WorkerConfig.model_validate(data), sha256_file(path)


def active() -> tuple[WorkerConfig, str] | None:
    """The configuration of the worker this process runs in (None outside a controller's worker)."""
    path = os.environ.get(ENV)
    return load_worker_config(path) if path else None


def check_request(cfg: WorkerConfig, requested: dict[str, Any]) -> list[str]:
    """What a scheduled run asked for that its configuration does not say: registry, spec, data, approvals (an empty
    list: the run may go on). ``requested`` holds the run's parameters."""
    problems = []
    if _norm(requested.get("registry_root")) != cfg.registry:
        problems.append(f"registry_root {requested.get('registry_root')!r} is not the worker's registry")
    entry = next((s for s in cfg.schedules if s.spec == _norm(requested.get("spec_path"))), None)
    if entry is None:
        problems.append(f"spec_path {requested.get('spec_path')!r} is not a schedule of the worker's configuration")
    elif _norm(requested.get("approvals_path")) not in (None, entry.approvals):
        problems.append(f"approvals_path {requested.get('approvals_path')!r} is not the schedule's")
    data = requested.get("data_path")
    if data is not None and _norm(data) not in {d.data for d in cfg.datasets.values()}:
        problems.append(f"data_path {data!r} is not a dataset of the worker's configuration")
    if requested.get("approval") != "standing":
        problems.append("a scheduled deployment runs only under its standing approval")
    if requested.get("proposer") or requested.get("proposal"):
        problems.append("a scheduled run has no proposer: proposals go to the proposals deployment")
    return problems


def _norm(value: Any) -> str | None:
    return None if value in (None, "") else str(Path(str(value)).expanduser().resolve())
