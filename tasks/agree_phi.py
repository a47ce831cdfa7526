"""Stage 1 — agree Φ: the inputs as checked (spec, schema, data, standing approval, the controller's files and
policy), the agreement canonicalised and hashed, its sign-offs logged.

The command checked the inputs before the orchestrator started (:func:`sdgov.intake.inputs.check_release_inputs`) and
hands this stage the record of what it checked: the stage re-verifies it by hash instead of checking again. A run
nobody checked before (a scheduled run in the controller's worker) is checked here, by the same function. Either
way nothing is written before every check passed: a refusal ends the run with one line and an untouched registry.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import write_agreement
from sdgov.base.errors import SpecError
from sdgov.contracts import Agreed, InputsChecked
from sdgov.governance.site import Site
from sdgov.governance.standing import standing_artifacts
from sdgov.intake.inputs import check_release_inputs
from sdgov.tasks.common import stage

VERSION = "1.4.0"  # 1.4: inputs checked once; 1.3: the data pinned by the approval; 1.2: approvals signed with keys


@task(name="agree_phi", version=VERSION, cache_policy=NO_CACHE)
def agree_phi(
    spec_path: str,
    site: Site,
    run_id: str,
    approvals_path: str | None = None,
    data_path: str | None = None,
    schedule_pin: str | None = None,
    checked: InputsChecked | None = None,
) -> Agreed:
    """The inputs as ``checked`` (re-verified by hash: the run's parameters must name what was checked), else
    checked here; then write the agreement and log its sign-offs → ``Agreed``.

    The data must be the file the standing approval pins (and ``schedule_pin``, the worker's schedule entry),
    checked before it is parsed."""
    with stage("agree_phi", VERSION, f"{site.root}/runs/{run_id}") as rec:
        if checked is None:
            checked = check_release_inputs(site, spec_path, approvals_path, data_path, schedule_pin)
        else:
            checked.reverified(site.root, spec_path, approvals_path, data_path)
        if checked.approvals is None:  # a governed proposal's record: the governed flow's propose stage takes it
            raise SpecError("these inputs were checked as a proposal, not under a standing approval", spec_path, "")
        files = write_agreement(site.registry, run_id, checked)  # inputs valid: we write
        for s in checked.signoffs:
            site.registry.append(
                "agreement_signed",
                s.name,
                s.role,
                agreement_sha256=files.sha256,
                run_id=run_id,
                decision=s.decision,
                comment=s.comment or s.via,
                artifacts={"agreement": files.agreement.sha256, "spec": files.spec.sha256, **standing_artifacts(s)},
            )
        rec.inputs = [files.spec, files.schema, checked.approvals, files.data.as_artifact()]
        rec.outputs = [files.agreement, files.codes]
        rec.params = {"agreement_sha256": files.sha256}
    return files.agreed(checked.approvals, list(checked.signoffs), rec.record())
