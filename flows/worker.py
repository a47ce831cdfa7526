"""The controller's release service: the deployments only the controller's worker runs.

``sdgov worker start --config worker.yaml`` (:mod:`sdgov.commands.worker`) serves, from the controller's machine:

* ``sdgov-controller-release/<name>`` — a proposal from an analyst, who submits it with ``sdgov propose --submit``
  (a signed statement and the spec's text, nothing else: the analyst's process never reads the data or holds the
  registry key). The run takes the registry, the dataset's file and schema from the worker's configuration
  (:mod:`sdgov.governance.worker`), then goes on as the governed release (pauses for the controller's decisions);
* one deployment per schedule of the configuration: :func:`~sdgov.flows.governed.governed_release_flow` under the
  standing approval, whose parameters must be the configuration's (checked in that flow).

Prefect carries the runs; anyone with its login may create one with other parameters. A proposal run that sets
``timeout_s``, ``poll_interval``, ``registry_root``, ``data_path``, ``approvals_path``, ``spec_path`` or
``proposer`` is refused before anything is read, and the refusal is logged in the worker's registry; a parameter of
any other name fails Prefect's own validation before the flow starts. A scheduled run's parameters must be exactly
the schedule's (:func:`sdgov.governance.worker.check_request`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import flow

from sdgov import __version__
from sdgov.agreement.code_names import check_named_code
from sdgov.base.errors import SdgovError, SpecError
from sdgov.base.hashing import sha256_bytes
from sdgov.base.loading import parse_yaml
from sdgov.flows.governed import GovernedOutcome, GovernedRequest, governed_release, refuse_run
from sdgov.flows.plumbing.worker_runs import die_with_worker
from sdgov.governance import worker
from sdgov.governance.site import Site
from sdgov.identity.statements import ProposalStatement, decode_statement
from sdgov.registry.log import Registry

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment
    from prefect.states import State

PROPOSALS_FLOW = "sdgov-controller-release"
REGISTRY_TAG = "sdgov-registry:"  # the deployment's tag naming the registry id a proposal must be signed for


@flow(name=PROPOSALS_FLOW, version=__version__, log_prints=False)
def controller_release_flow(
    proposal: str,
    spec_yaml: str,
    timeout_s: int | None = None,
    poll_interval: int | None = None,
    registry_root: str | None = None,
    data_path: str | None = None,
    approvals_path: str | None = None,
    spec_path: str | None = None,
    proposer: str | None = None,
) -> GovernedOutcome | State[GovernedOutcome]:
    """An analyst's signed proposal, released by the controller's worker: registry, data and schema from the worker's
    configuration, and the decision deadline and polling too (``decision_timeout_s``, ``poll_interval_s``). The
    parameters a run could use to redirect it or hold it (``timeout_s`` … ``proposer``) exist only to be refused, and
    logged, before anything is read; a parameter of any other name is refused by Prefect's own validation before the
    flow starts."""
    from prefect.runtime import flow_run

    unexpected = {
        k: v
        for k, v in {
            "timeout_s": timeout_s,
            "poll_interval": poll_interval,
            "registry_root": registry_root,
            "data_path": data_path,
            "approvals_path": approvals_path,
            "spec_path": spec_path,
            "proposer": proposer,
        }.items()
        if v is not None
    }
    active = worker.active()
    if active is None:
        raise SdgovError(
            "a proposal runs only in the controller's worker",
            PROPOSALS_FLOW,
            "start it on the controller's machine: sdgov worker start --config worker.yaml",
        )
    cfg, cfg_sha = active
    registry = Site.resolve(cfg.registry).registry  # the worker's registry, never one a parameter names
    die_with_worker(cfg.registry, str(flow_run.id))
    try:
        if unexpected:
            raise SdgovError(
                f"the run carries parameters a proposal may not set: {', '.join(sorted(unexpected))}",
                "run parameters",
                "the worker's configuration decides the registry, data, approvals and deadline; submit with "
                "'sdgov propose --submit'",
            )
        written, signer, source = materialise_spec(cfg, registry, proposal, spec_yaml)
    except SdgovError as exc:
        return refuse_run(registry, f"flow-run-{flow_run.id}", exc, cfg_sha)
    return governed_release(
        GovernedRequest(
            spec_path=str(written),
            registry_root=cfg.registry,
            proposer=signer,
            data_path=source.data,
            timeout_s=cfg.decision_timeout_s,
            poll_interval=cfg.poll_interval_s,
            proposal=proposal,
        )
    )


def _dataset_name(spec: dict[str, Any]) -> str:
    """The dataset the proposed spec names (``dataset.name``), or a one-line ``SpecError``."""
    ds = spec.get("dataset")
    name = ds.get("name") if isinstance(ds, dict) else None
    if not isinstance(name, str) or not name:
        raise SpecError("the proposed spec names no dataset", "spec: dataset.name", "add dataset: {name: ...}")
    return name


def materialise_spec(
    cfg: worker.WorkerConfig, registry: Registry, proposal: str, spec_yaml: str
) -> tuple[Path, str, worker.DatasetSource]:
    """Write the proposed spec into the registry (``proposals/<sha256 of its text>/spec.yaml``) with the controller's
    dataset file and schema in place of the analyst's paths → that file, the proposer the signed statement names and
    the dataset's source. Refused in one line: unparseable text, a dataset the worker does not hold, code named by
    anything but a registered name (:func:`sdgov.agreement.code_names.check_named_code`, the check the spec's own
    sections make: nothing the proposal names is imported before it is found registered)."""
    try:
        stmt, _ = decode_statement(proposal, ProposalStatement)
    except ValueError as exc:
        raise SpecError(f"the proposal is unreadable: {exc}", "proposal", "submit with 'sdgov propose --key'") from None
    try:
        spec = parse_yaml(spec_yaml)
    except Exception:
        raise SpecError("the proposed spec is not valid YAML", "spec_yaml", "submit the spec file's text") from None
    if not isinstance(spec, dict):
        raise SpecError("the proposed spec is not a mapping", "spec_yaml", "submit the spec file's text")
    check_named_code(spec)
    source = cfg.dataset(_dataset_name(spec))
    spec["dataset"] = {**spec["dataset"], "path": source.data}
    spec["schema"] = source.schema_file
    spec.pop("approvals", None)  # a proposal is decided by the controller, not by a standing approval
    import yaml

    folder = registry.root / "proposals" / sha256_bytes(spec_yaml.encode())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    return path, stmt.proposer, source


def deployments(cfg: worker.WorkerConfig, registry_id: str) -> list[RunnerDeployment]:
    """The worker's deployments: proposals, and one per schedule (parameters from the configuration)."""
    from sdgov.flows.schedule import deployment

    tags = ["sdgov", f"{REGISTRY_TAG}{registry_id}"]
    # Prefect's async_dispatch types the call as RunnerDeployment | Coroutine; called from sync code it is the former
    out: list[RunnerDeployment] = [
        controller_release_flow.to_deployment(
            name=cfg.name,
            tags=tags,
            description="Proposals to the controller's registry: signed by an analyst (sdgov propose --submit); "
            "data, registry and schema come from the controller's worker configuration.",
        )  # type: ignore[list-item]
    ]
    for s in cfg.schedules:
        params = worker.schedule_parameters(cfg, s)
        out.append(deployment(s.spec, cfg.registry, s.cron, s.name, every=s.every, tags=tags, parameters=params))
    return out


@dataclass(frozen=True)
class WorkerPlan:
    """What ``sdgov worker start`` serves: the configuration file as checked (its sha256, the registry's id) and the
    deployments it makes (:func:`deployments`)."""

    config: Path
    cfg: worker.WorkerConfig
    config_sha256: str
    registry_id: str
    deployments: list[RunnerDeployment]

    @property
    def names(self) -> list[str]:
        """Each deployment as ``flow/name``."""
        return [f"{d.flow_name}/{d.name}" for d in self.deployments]


def plan_worker(config: str | Path) -> WorkerPlan:
    """The worker of ``config`` after every check a run would make first
    (:func:`sdgov.governance.worker.check_worker_config`), with its deployments; one line on the first problem."""
    cfg, sha, rid = worker.check_worker_config(config)
    return WorkerPlan(Path(config).resolve(), cfg, sha, rid, deployments(cfg, rid))


def serve_worker(plan: WorkerPlan, say: Callable[[str], None]) -> None:
    """Serve the worker's deployments until Ctrl-C, up to ``max_concurrent_runs`` runs at once: against the configured
    server only (one line without ``PREFECT_API_URL``), holding the registry's worker lock (one worker per registry),
    its configuration exported to the runs it executes; ``worker_started`` is logged, and every run a previous worker
    left held is ended and logged first (:mod:`sdgov.flows.plumbing.worker_runs`). ``say``: where progress goes."""
    from prefect import serve

    from sdgov.base.settings import export_worker_config
    from sdgov.flows.plumbing.prefect_api import require_server
    from sdgov.flows.plumbing.worker_runs import end_orphans, hold_registry

    require_server()
    registry = Site.resolve(plan.cfg.registry).registry
    hold_registry(registry)  # one worker per registry: the runs left held below were nobody's
    export_worker_config(plan.config)  # the runs this process executes inherit it and our pid
    names = plan.names
    registry.append(
        "worker_started",
        "sdgov",
        "system",
        comment="the controller's worker serves " + ", ".join(names),
        artifacts={"worker_config": plan.config_sha256},
    )
    ended = end_orphans(registry, names, plan.config_sha256)
    if ended:
        say(f"ended {len(ended)} run(s) a previous worker held (logged as run_ended): {', '.join(ended)}")
    limit = plan.cfg.max_concurrent_runs
    say("serving " + ", ".join(names) + f" (up to {limit} runs at once; Ctrl-C stops the worker)")
    serve(*plan.deployments, limit=limit)
