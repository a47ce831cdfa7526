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

from sdgov.commands._common import Parents, command, emit


def cmd_worker(args: argparse.Namespace) -> int:
    """Serve the controller's deployments until Ctrl-C (exit 0; :func:`sdgov.flows.worker.serve_worker`);
    ``--dry-run`` prints them instead. A bad configuration, registry or key is one line, exit 2."""
    from sdgov.flows.worker import plan_worker, serve_worker

    plan = plan_worker(args.config)
    info = {"registry_id": plan.registry_id, "config_sha256": plan.config_sha256, "deployments": plan.names}
    if args.dry_run:
        emit(args, info, "would serve: " + ", ".join(plan.names))
        return 0
    serve_worker(plan, say=print)
    return 0


HELP = "the controller's release service: serve proposals and schedules from worker.yaml"


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``worker``."""
    w = command(subparsers, parents, "worker", cmd_worker, HELP)
    w.add_argument("action", choices=["start"])
    w.add_argument("--config", required=True, help="the worker configuration (registry, datasets, schedules)")
    w.add_argument("--dry-run", action="store_true", help="check and print the deployments, do not serve them")
