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
    max_concurrent_runs: 4                   # runs executed at once (paused ones included)
    decision_timeout_s: 604800               # how long a paused run waits for a decision

Anyone holding the Prefect server's login can create runs of these deployments with any parameters, patch them,
or rewrite their inputs. So a run's parameters can only *ask*: a run of a scheduled deployment whose registry,
spec, data or approvals differ from this file — or a proposal run that carries any parameter but the signed
proposal and the spec's text — is refused before anything is read, and the refusal is logged in the registry
named here (:func:`check_request`). The worker logs the file's sha256 when it starts (``worker_started``), so
the log says which configuration ran each release.

The service's own limits are the controller's too, never a run's: how many runs it executes at once
(``max_concurrent_runs``), how long a paused run waits for a decision (``decision_timeout_s``, shown on the
pause's form) and how often a paused run looks for one (``poll_interval_s``). A schedule releases one of
``datasets`` (``dataset:``, by default the one its spec names) and may pin that data by the controller's keyed
commitment (``data_sha256_hmac``, the value a card publishes as ``dataset.sha256_hmac``); its standing approval
must pin the same data (:func:`sdgov.governance.standing.check_pinned_data`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from sdgov.base.errors import SpecError
from sdgov.base.hashing import sha256_file
from sdgov.base.loading import load_model_file, read_yaml
from sdgov.base.model import Frozen
from sdgov.base.settings import load_settings

__all__ = [
    "DatasetSource",
    "ScheduleEntry",
    "WorkerConfig",
    "active",
    "check_request",
    "load_worker_config",
    "schedule_parameters",
    "scheduled_entry",
    "worker_pid",
]


class DatasetSource(Frozen):
    """Where the controller keeps one dataset: the confidential file and its public schema."""

    data: str
    schema_file: str = Field(alias="schema")


class ScheduleEntry(Frozen):
    """A standing agreement released on a schedule (a cron expression or a fixed interval in seconds), on one of the
    worker's datasets (``dataset``: by default the one the spec names), optionally pinned by its keyed commitment."""

    spec: str
    cron: str | None = None
    every: int | None = Field(default=None, ge=1)
    approvals: str | None = None
    name: str | None = None
    dataset: str | None = None
    data_sha256_hmac: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")

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
    max_concurrent_runs: int = Field(default=4, ge=1, le=256)
    poll_interval_s: int = Field(default=5, ge=1, le=600)

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
        s["dataset"] = s["dataset"] or _spec_dataset(s["spec"])
    return WorkerConfig.model_validate(data), sha256_file(path)


def _spec_dataset(spec: str) -> str | None:
    """The dataset name a schedule's spec declares (None when the spec cannot be read: the worker's own check of
    the spec then says why in one line)."""
    try:
        doc = read_yaml(spec, SpecError, "spec")
    except SpecError:
        return None
    ds = doc.get("dataset") if isinstance(doc, dict) else None
    name = ds.get("name") if isinstance(ds, dict) else None
    return name if isinstance(name, str) else None


def active() -> tuple[WorkerConfig, str] | None:
    """The configuration of the worker this process runs in (None outside a controller's worker)."""
    path = load_settings().worker_config()
    return load_worker_config(path) if path else None


def schedule_parameters(cfg: WorkerConfig, entry: ScheduleEntry) -> dict[str, Any]:
    """Every parameter of a run of this schedule's deployment, as the worker sets it from the configuration: a run
    asking for anything else (:func:`check_request`) is refused. The data is the configured file of the schedule's
    dataset; the deadline and polling are the worker's."""
    source = cfg.datasets.get(entry.dataset or "")
    return {
        "spec_path": entry.spec,
        "registry_root": cfg.registry,
        "proposer": None,
        "approval": "standing",
        "approvals_path": entry.approvals,
        "data_path": source.data if source else None,
        "timeout_s": cfg.decision_timeout_s,
        "poll_interval": cfg.poll_interval_s,
        "dvc_pull": False,
        "proposal": None,
    }


_PATHS = ("spec_path", "registry_root", "approvals_path", "data_path")


def scheduled_entry(cfg: WorkerConfig, spec_path: Any) -> ScheduleEntry | None:
    """The configuration's schedule of ``spec_path`` (None: no schedule releases that spec)."""
    return next((s for s in cfg.schedules if s.spec == _norm(spec_path)), None)


def worker_pid() -> int | None:
    """The process id of the worker this process runs under (None outside a controller's worker)."""
    return load_settings().worker_pid()


def check_request(cfg: WorkerConfig, requested: dict[str, Any]) -> list[str]:
    """What a scheduled run asked for that its configuration does not say (an empty list: the run may go on).
    ``requested`` holds the run's parameters, every one of which must be the schedule's (:func:`schedule_parameters`):
    a run's parameters redirect nothing — not the registry, spec, data or approvals, and not the deadline, the
    polling or a DVC update either. The configured values are not repeated in the refusal (every holder of the
    Prefect login reads it)."""
    problems = []
    if _norm(requested.get("registry_root")) != cfg.registry:
        problems.append(f"registry_root {requested.get('registry_root')!r} is not the worker's registry")
    entry = scheduled_entry(cfg, requested.get("spec_path"))
    if entry is None:
        return [*problems, f"spec_path {requested.get('spec_path')!r} is not a schedule of the worker's configuration"]
    for name, want in schedule_parameters(cfg, entry).items():
        got = requested.get(name)
        if name == "registry_root" or (_norm(got) if name in _PATHS else got) == want:
            continue
        if name == "approval":
            problems.append("a scheduled deployment runs only under its standing approval")
        elif name in ("proposer", "proposal"):
            problems.append(f"a scheduled run has no {name}: proposals go to the proposals deployment")
        elif name in _PATHS:
            problems.append(f"{name} {got!r} is not the schedule's")
        else:
            problems.append(f"{name} {got!r} is the worker's to set (worker.yaml), not a run's")
    return problems


def _norm(value: Any) -> str | None:
    return None if value in (None, "") else str(Path(str(value)).expanduser().resolve())


def check_worker_config(config: str | Path) -> tuple[WorkerConfig, str, str]:
    """The configuration, its sha256 and the registry id — after every check a run would make first: the registry
    exists with its key, the controller files are as signed, each dataset's file and schema and each schedule's
    spec are there, each schedule pins the data its standing approval pins. One line on the first problem
    (``sdgov worker start``)."""
    from sdgov.agreement.load import load_spec
    from sdgov.governance.controller import check_controller_files
    from sdgov.governance.site import Site
    from sdgov.governance.standing import load_approvals
    from sdgov.registry import key

    cfg, sha = load_worker_config(config)
    registry = Site.resolve(cfg.registry).registry
    registry.require_existing()
    rid = registry.registry_id()
    key.require(registry.keys, rid)
    check_controller_files(registry)
    for name, source in cfg.datasets.items():
        for what, path in (("data", source.data), ("schema", source.schema_file)):
            if not Path(path).is_file():
                raise SpecError(f"dataset {name!r}: its {what} file is not there", path, "fix worker.yaml's datasets")
    for s in cfg.schedules:
        loaded = load_spec(s.spec)
        if s.dataset not in cfg.datasets:
            raise SpecError(
                f"the schedule of {Path(s.spec).name} releases dataset {s.dataset!r}, which worker.yaml does not hold",
                "worker.yaml: schedules",
                "add it under datasets, or name one of them as the schedule's 'dataset'",
            )
        approvals = s.approvals or loaded.approvals_path
        pinned = load_approvals(approvals).data_sha256_hmac if approvals else None
        if s.data_sha256_hmac and pinned != s.data_sha256_hmac:
            raise SpecError(
                f"the schedule of {Path(s.spec).name} pins other data than its standing approval does",
                "worker.yaml: schedules: data_sha256_hmac",
                "pin the data the approval pins ('sdgov approvals pin' prints it)",
            )
    return cfg, sha, rid
