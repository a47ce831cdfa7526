"""Stage 1 — agree Φ: validate spec, schema and data; canonicalise and hash the agreement; record sign-offs.

Everything a user can get wrong is checked (:func:`sdgov.intake.inputs.check_inputs`) before anything is written: a
bad spec, schema, data file or approval ends the run with one error and an untouched registry.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import write_agreement
from sdgov.contracts import Agreed, ArtifactRef
from sdgov.governance.policy import check_plan_allowed
from sdgov.governance.site import Site
from sdgov.governance.standing import agreement_signoffs, standing_artifacts
from sdgov.intake.inputs import check_inputs
from sdgov.tasks.common import stage

VERSION = "1.3.0"  # 1.3: the data pinned by the approval; 1.2: approvals signed with keys; 1.1: codes.parquet


@task(name="agree_phi", version=VERSION, cache_policy=NO_CACHE)
def agree_phi(
    spec_path: str,
    site: Site,
    run_id: str,
    approvals_path: str | None = None,
    data_path: str | None = None,
    schedule_pin: str | None = None,
) -> Agreed:
    """Check spec, schema, data and standing approvals, then write the agreement and log its sign-offs → ``Agreed``.

    Inputs and the controller's policy are checked before anything is written: a refusal writes nothing. The data
    must be the file the standing approval pins (and ``schedule_pin``, the worker's schedule entry), checked before
    it is parsed."""
    with stage("agree_phi", VERSION, f"{site.root}/runs/{run_id}") as rec:
        checked = check_inputs(spec_path, approvals_path, data_path, root=site.root, schedule_pin=schedule_pin)
        ag, data = checked.loaded.agreement, checked.data
        # the controller's policy: it refuses rows = N (unless N is public) and an exact release (unless allowed)
        check_plan_allowed(site, ag, data.fingerprint, ag.dataset_name, data.rows)
        signoffs = agreement_signoffs(checked.approvals, ag.sha256(), str(checked.approvals_path), site.registry)
        files = write_agreement(site.registry, run_id, checked.loaded, checked.data)  # inputs valid: we write
        for s in signoffs:
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
        approvals = ArtifactRef.of("approvals", checked.approvals_path)
        rec.inputs = [files.spec, files.schema, approvals, files.data.as_artifact()]
        rec.outputs = [files.agreement, files.codes]
        rec.params = {"agreement_sha256": files.sha256}
    return files.agreed(approvals, signoffs, rec.record())
