"""Scheduled releases: a Prefect deployment with a cron schedule that re-runs a standing agreement.

Each scheduled run is :func:`sdgov.flows.governed.governed_release_flow` with ``approval="standing"``: the Φ agreement
comes from the spec's standing-approval file (pin its ``agreement_sha256`` so a changed spec cannot ride on an
old approval), the data is brought to its latest DVC version first (``dvc_pull``), and the standing policy
applies — **auto-release only if every audit check passed and the privacy budget allowed the measurement;
otherwise the run pauses for a data controller** (``sdgov runs`` / ``sdgov approve`` / the Prefect UI).

    sdgov schedule --spec sdgov/demo/spec.yaml --cron "0 6 1 * *" --root /srv/sdgov/registry

serves the deployment from this process (``flow.serve``): keep it running (systemd, tmux) next to
``sdgov server start``. ``--dry-run --json`` prints the deployment instead.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

DEFAULT_DECISION_TIMEOUT = 7 * 24 * 3600  # a scheduled run that needs a human waits a week, then ends


def deployment(
    spec: str,
    root: str,
    cron: str,
    name: str | None = None,
    approvals: str | None = None,
    timeout_s: int = DEFAULT_DECISION_TIMEOUT,
    dvc_pull: bool = True,
):
    from prefect.client.schemas.schedules import CronSchedule

    from sdgov.agreement.load import load_spec
    from sdgov.base.errors import SdgovError
    from sdgov.flows.governed import governed_release_flow

    try:
        CronSchedule(cron=cron)
    except ValueError:
        raise SdgovError(
            f"{cron!r} is not a cron expression", "--cron", "e.g. '0 6 1 * *' (06:00 on the 1st)"
        ) from None
    loaded = load_spec(spec)
    params: dict[str, Any] = {
        "spec_path": str(Path(spec).resolve()),
        "registry_root": str(Path(root).resolve()),
        "approval": "standing",
        "timeout_s": timeout_s,
        "poll_interval": 30,
        "dvc_pull": dvc_pull,
    }
    if approvals:
        params["approvals_path"] = str(Path(approvals).resolve())
    return governed_release_flow.to_deployment(
        name=name or f"scheduled-{loaded.agreement.spec_name}",
        cron=cron,
        parameters=params,
        tags=["sdgov", "scheduled-release"],
        description=(
            f"Scheduled release of {loaded.agreement.spec_name} (agreement {loaded.agreement.sha256()[:12]}…) "
            "under its standing approval: auto-release only if every audit passes and the budget allows; "
            "otherwise pause for a data controller."
        ),
    )


def cmd_schedule(args: argparse.Namespace) -> int:
    import json

    from sdgov.registry.log import Registry

    root = str(Registry(args.root).root.resolve())
    dep = deployment(args.spec, root, args.cron, args.name, args.approvals, args.timeout, not args.no_dvc_pull)
    info = {
        "name": dep.name,
        "flow": "sdgov-governed-release",
        "cron": args.cron,
        "schedules": [str(getattr(s.schedule, "cron", s.schedule)) for s in (dep.schedules or [])],
        "parameters": dep.parameters,
        "entrypoint": dep.entrypoint,
    }
    if args.dry_run:
        print(json.dumps(info, indent=2) if args.json else f"would serve {dep.name} on '{args.cron}'")
        return 0
    from prefect import serve

    print(f"serving {dep.name} on '{args.cron}' (Ctrl-C stops the schedule)")
    serve(dep)
    return 0


def add_parser(add) -> None:
    s = add("schedule", cmd_schedule, "serve a cron-scheduled deployment re-running a standing agreement")
    s.add_argument("--spec", required=True)
    s.add_argument("--cron", required=True, help="cron expression, e.g. '0 6 1 * *'")
    s.add_argument("--root", help="registry root (default: $SDGOV_REGISTRY or ./registry)")
    s.add_argument("--name", help="deployment name (default: scheduled-<spec name>)")
    s.add_argument("--approvals", help="standing-approval file (default: the spec's)")
    s.add_argument("--timeout", type=int, default=DEFAULT_DECISION_TIMEOUT, help="seconds a paused run waits")
    s.add_argument("--no-dvc-pull", action="store_true", help="do not update the DVC-tracked data before each run")
    s.add_argument("--dry-run", action="store_true", help="print the deployment, do not serve it")
