"""``sdgov schedule``: serve a cron-scheduled deployment re-running a standing agreement (the deployment itself
is built by :mod:`sdgov.flows.schedule`).

    sdgov schedule --spec sdgov/demo/spec.yaml --cron "0 6 1 * *" --root /srv/sdgov/registry [--dry-run --json]
    sdgov schedule --spec sdgov/demo/spec.yaml --every 3600 --root /srv/sdgov/registry       (a fixed interval)
"""

from __future__ import annotations

import argparse

from sdgov.commands._common import Parents, command, emit, site_of
from sdgov.flows.schedule import DEFAULT_DECISION_TIMEOUT


def cmd_schedule(args: argparse.Namespace) -> int:
    """Serve the scheduled deployment of the standing agreement (:func:`sdgov.flows.schedule.deployment`), one run at a
    time, until Ctrl-C (exit 0; :func:`sdgov.flows.schedule.serve_schedule`); ``--dry-run`` prints it instead. A bad
    schedule or spec is one line, exit 2."""
    from sdgov.flows.schedule import deployment, serve_schedule

    root = str(site_of(args).root.resolve())
    dep = deployment(
        args.spec, root, args.cron, args.name, args.approvals, args.timeout, not args.no_dvc_pull, args.every
    )
    when = f"'{args.cron}'" if args.cron else f"every {args.every} s"
    info = {
        "name": dep.name,
        "flow": "sdgov-governed-release",
        "cron": args.cron,
        "every": args.every,
        "schedules": [str(getattr(s.schedule, "cron", None) or f"every {args.every} s") for s in (dep.schedules or [])],
        "parameters": dep.parameters,
        "entrypoint": dep.entrypoint,
    }
    if args.dry_run:
        emit(args, info, f"would serve {dep.name} {when}")
        return 0
    print(f"serving {dep.name} {when}, one run at a time (Ctrl-C stops the schedule)")
    serve_schedule(dep)
    return 0


HELP = "serve a scheduled deployment (cron or interval) re-running a standing agreement"


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``schedule``."""
    s = command(subparsers, parents, "schedule", cmd_schedule, HELP, [parents.spec, parents.root])
    s.add_argument("--cron", help="cron expression, e.g. '0 6 1 * *' (or --every)")
    s.add_argument("--every", type=int, metavar="SECONDS", help="a fixed interval instead of a cron expression")
    s.add_argument("--name", help="deployment name (default: scheduled-<spec name>)")
    s.add_argument("--approvals", help="standing-approval file (default: the spec's)")
    s.add_argument("--timeout", type=int, default=DEFAULT_DECISION_TIMEOUT, help="seconds a paused run waits")
    s.add_argument("--no-dvc-pull", action="store_true", help="do not update the DVC-tracked data before each run")
    s.add_argument("--dry-run", action="store_true", help="print the deployment, do not serve it")
