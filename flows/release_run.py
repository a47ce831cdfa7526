"""A release under a standing approval, run by the command in this process: the use cases of ``sdgov release``
(:func:`release_now`) and ``sdgov demo`` (:func:`release_demo`).

The inputs are checked once, before the orchestrator starts (a refusal is one line and costs no Prefect import);
then a temporary Prefect server is started unless one is configured (:mod:`sdgov.flows.plumbing.temporary_server`:
it dies with this process, even on ``kill -9``), and :func:`~sdgov.flows.release.release_flow` runs against it with
the check's record handed over by ticket (:mod:`sdgov.flows.handover`), never as a run parameter.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sdgov.contracts import ReleaseResult
    from sdgov.flows.plumbing.temporary_server import BackgroundStart, GuardedServer
    from sdgov.governance.site import Site


def release_now(
    site: Site, spec: str, approvals: str | None, data: str | None, starting: BackgroundStart | None = None
) -> ReleaseResult:
    """Release ``spec`` under its standing approval (``approvals``: another file; ``data``: another data file). The
    controller's files as last signed, the inputs, the standing approval and the policy are checked once, here
    (:func:`~sdgov.intake.inputs.check_release_inputs`); the flow's first stage re-verifies what was checked by
    hash. ``starting``: a temporary server already starting in the background (the demo's)."""
    from sdgov.intake.inputs import check_release_inputs

    root = site.root.resolve()
    checked = check_release_inputs(site, spec, approvals, data)  # fail fast, before the orchestrator
    from sdgov.flows.handover import hand_over
    from sdgov.flows.plumbing.temporary_server import install, serving

    server: GuardedServer | None
    if starting is not None:
        server = starting.wait()  # the flow must find the server up, not half-started (or one line: it did not come up)
    else:
        server = install()  # no PREFECT_API_URL: a temporary server that dies with this process, even on kill -9
    from sdgov.flows.plumbing.refusals import quiet_refusals
    from sdgov.flows.release import release_flow

    quiet_refusals()

    with serving(server):  # started here (unless the demo started it already); the flow runs against it
        return release_flow(
            spec_path=str(Path(spec).resolve()),
            registry_root=str(root),
            approvals_path=str(Path(approvals).resolve()) if approvals else None,
            data_path=str(Path(data).resolve()) if data else None,
            checked=hand_over(checked),
        )


def release_demo(site: Site) -> ReleaseResult:
    """A whole release on the built-in demo: the default policy adopted, made-up data written beside the registry, a
    standing approval signed by the demo people; the temporary server starts in the background meanwhile."""
    from sdgov.agreement.load import load_spec
    from sdgov.data.schema import load_schema
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data
    from sdgov.demo.people import signed_demo_approval
    from sdgov.flows.plumbing.temporary_server import start_in_background
    from sdgov.governance.controller import init

    starting = start_in_background()
    registry = site.registry
    init(registry, controller="Carl Controller")  # the demo's registry: the default policy, adopted
    # the made-up confidential file lives beside the registry (never inside the installed package or a clone)
    data = registry.root.resolve().parent / "build" / "demo" / "data.csv"
    if not data.exists():
        write_demo_data(load_schema(inputs() / "schema.yaml"), data)
    spec = inputs() / "spec.yaml"
    # the demo people sign a standing approval with their (demo) keys, as a real registry's people do
    approvals = signed_demo_approval(registry, inputs() / "approvals.yaml", load_spec(spec).agreement.sha256(), data)
    return release_now(site, str(spec), str(approvals), str(data), starting)
