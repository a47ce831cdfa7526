"""Stage 1 — agree Φ: the run's first files written from its inputs as checked (spec, schema, data, standing
approval, the controller's files and policy), the agreement canonicalised and hashed, its sign-offs logged.

The inputs were checked once before this stage (:func:`sdgov.intake.inputs.check_release_inputs`: by the command
before the orchestrator started, or by the flow when nobody checked before it); the stage re-verifies the record of
that check by hash instead of checking again. A file changed since is refused in one line, with nothing written.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import write_agreement
from sdgov.base.errors import SpecError
from sdgov.contracts import Agreed, InputsChecked
from sdgov.governance.site import Site
from sdgov.governance.standing import standing_artifacts
from sdgov.tasks.common import stage

VERSION = "1.4.0"  # 1.4: inputs checked once; 1.3: the data pinned by the approval; 1.2: approvals signed with keys


@task(name="agree_phi", version=VERSION, cache_policy=NO_CACHE)
def agree_phi(checked: InputsChecked, site: Site, run_id: str) -> Agreed:
    """The inputs as ``checked``, re-verified by hash; then write the agreement and log its sign-offs → ``Agreed``."""
    with stage("agree_phi", VERSION, f"{site.root}/runs/{run_id}") as rec:
        checked.reverified()
        if checked.approvals is None:  # a governed proposal's record: the governed flow's propose stage takes it
            raise SpecError(
                "these inputs were checked as a proposal, not under a standing approval",
                checked.spec.path,
                "a proposal is released by the governed flow (sdgov propose)",
            )
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
