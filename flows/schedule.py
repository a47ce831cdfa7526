"""Scheduled releases: a Prefect deployment with a cron schedule that re-runs a standing agreement.

Each scheduled run is :func:`sdgov.flows.governed.governed_release_flow` with ``approval="standing"``: the Φ agreement
comes from the spec's standing-approval file (pin its ``agreement_sha256`` so a changed spec cannot ride on an
old approval), the data is brought to its latest DVC version first (``dvc_pull``), and the standing policy
applies — **auto-release only if every audit check passed and the privacy budget allowed the measurement;
otherwise the run pauses for a data controller** (``sdgov runs`` / ``sdgov approve`` / the Prefect UI).

    sdgov schedule --spec sdgov/demo/spec.yaml --cron "0 6 1 * *" --root /srv/sdgov/registry

serves the deployment from this process (``flow.serve``, one run at a time): keep it running (systemd, tmux) next to
``sdgov server start``, whose scheduler creates the runs that this process then executes. ``--every SECONDS``
instead of ``--cron`` schedules at a fixed interval. ``--dry-run --json`` prints the deployment instead. The command
is in :mod:`sdgov.commands.schedule`; this module builds the deployment.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment

DEFAULT_DECISION_TIMEOUT = 7 * 24 * 3600  # a scheduled run that needs a human waits a week, then ends


def deployment(
    spec: str,
    root: str,
    cron: str | None,
    name: str | None = None,
    approvals: str | None = None,
    timeout_s: int = DEFAULT_DECISION_TIMEOUT,
    dvc_pull: bool = True,
    every: int | None = None,
    tags: list[str] | None = None,
    parameters: dict[str, Any] | None = None,
) -> RunnerDeployment:
    """The deployment of :func:`~sdgov.flows.governed.governed_release_flow` under the standing approval, on ``cron``
    or every ``every`` seconds (not started); neither or both, a bad cron or a non-positive interval is an
    ``SdgovError``. ``parameters``: the run's every parameter, as the controller's worker sets them
    (:func:`sdgov.governance.worker.schedule_parameters`), instead of those built from the other arguments."""
    from datetime import timedelta

    from prefect.client.schemas.schedules import CronSchedule

    from sdgov.agreement.load import load_spec
    from sdgov.base.errors import SdgovError
    from sdgov.flows.governed import governed_release_flow

    if (cron is None) == (every is None):
        raise SdgovError("a schedule is either --cron or --every", "--cron/--every", "give exactly one of them")
    if every is not None and every < 1:
        raise SdgovError(f"--every {every}: the interval is a positive number of seconds", "--every", "e.g. 3600")
    try:
        if cron is not None:
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
    if parameters is not None:
        params = {k: v for k, v in parameters.items() if v is not None}
    # Prefect's async_dispatch types the call as RunnerDeployment | Coroutine; called from sync code it is the former
    return governed_release_flow.to_deployment(  # type: ignore[return-value]
        name=name or f"scheduled-{loaded.agreement.spec_name}",
        cron=cron,
        interval=timedelta(seconds=every) if every is not None else None,
        parameters=params,
        tags=[*(tags or ["sdgov"]), "scheduled-release"],
        description=(
            f"Scheduled release of {loaded.agreement.spec_name} (agreement {loaded.agreement.sha256()[:12]}…) "
            "under its standing approval: auto-release only if every audit passes and the budget allows; "
            "otherwise pause for a data controller."
        ),
    )


def serve_schedule(dep: RunnerDeployment) -> None:
    """Serve the scheduled deployment from this process until Ctrl-C, one run at a time: the server's scheduler
    creates the runs; this process runs them, never two at once."""
    from prefect import serve

    serve(dep, limit=1)
