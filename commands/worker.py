"""``sdgov worker start``: the controller's release service, on the controller's machine.

    sdgov worker start --config worker.yaml [--dry-run --json]

Checks the configuration (:mod:`sdgov.governance.worker`), the registry, its key and the controller's files, takes
the registry's worker lock (one worker per registry), logs ``worker_started`` with the configuration's sha256, ends
(and logs) every run a previous worker left held (:mod:`sdgov.flows.plumbing.worker_runs`), then serves the
deployments of :mod:`sdgov.flows.worker` — proposals and the configured schedules — up to ``max_concurrent_runs`` runs
at once, until Ctrl-C. Analysts submit proposals to it with ``sdgov propose --submit``; the Prefect server's scheduler
creates the scheduled runs.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import TYPE_CHECKING

from sdgov.base.errors import SpecError
from sdgov.commands._common import Parents, command, emit

if TYPE_CHECKING:
    from sdgov.governance.worker import WorkerConfig


def check_worker(config: str) -> tuple[WorkerConfig, str, str]:
    """The configuration, its sha256 and the registry id — after every check a run would make first: the registry
    exists with its key, the controller files are as signed, each dataset's file and schema and each schedule's
    spec are there. One line on the first problem."""
    from sdgov.agreement.load import load_spec
    from sdgov.governance.controller import check_controller_files
    from sdgov.governance.site import Site
    from sdgov.governance.standing import load_approvals
    from sdgov.governance.worker import load_worker_config
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


def cmd_worker(args: argparse.Namespace) -> int:
    """Serve the controller's deployments until Ctrl-C (exit 0); ``--dry-run`` prints them instead. A bad
    configuration, registry or key is one line, exit 2."""
    from sdgov.base.settings import export_worker_config
    from sdgov.flows.plumbing.prefect_api import require_server
    from sdgov.flows.plumbing.worker_runs import end_orphans, hold_registry
    from sdgov.flows.worker import deployments
    from sdgov.governance.site import Site

    cfg, sha, rid = check_worker(args.config)
    deps = deployments(cfg, rid)
    names = [f"{d.flow_name}/{d.name}" for d in deps]
    info = {"registry_id": rid, "config_sha256": sha, "deployments": names}
    if args.dry_run:
        emit(args, info, "would serve: " + ", ".join(names))
        return 0
    require_server()
    registry = Site.resolve(cfg.registry).registry
    hold_registry(registry)  # one worker per registry: the runs left held below were nobody's
    export_worker_config(Path(args.config).resolve())  # the runs this process executes inherit it and our pid
    registry.append(
        "worker_started",
        "sdgov",
        "system",
        comment="the controller's worker serves " + ", ".join(names),
        artifacts={"worker_config": sha},
    )
    ended = end_orphans(registry, names, sha)
    if ended:
        print(f"ended {len(ended)} run(s) a previous worker held (logged as run_ended): {', '.join(ended)}")
    from prefect import serve

    limit = cfg.max_concurrent_runs
    print("serving " + ", ".join(names) + f" (up to {limit} runs at once; Ctrl-C stops the worker)")
    serve(*deps, limit=limit)
    return 0


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``worker``."""
    add = functools.partial(command, subparsers, parents)
    w = add("worker", cmd_worker, "the controller's release service: serve proposals and schedules from worker.yaml")
    w.add_argument("action", choices=["start"])
    w.add_argument("--config", required=True, help="the worker configuration (registry, datasets, schedules)")
    w.add_argument("--dry-run", action="store_true", help="check and print the deployments, do not serve them")
