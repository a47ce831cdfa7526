"""Stage 1, governed variant — the analyst proposes Φ; the data controller decides later (in the UI or CLI).

The same ``agreement.json`` as :mod:`sdgov.tasks.agree_phi`, but no standing approval is read: the only sign-off
recorded here is the proposer's (``agreement_proposed``), checked against the approvers registry in force (role
analyst) by :func:`sdgov.intake.inputs.check_proposal` — the controller's committed file, fixed by the registry's
configuration (:mod:`sdgov.governance.controller`), never one the proposer names. The controller's decision is
taken by the governed flow (flows/governed.py).
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import write_agreement
from sdgov.base.clock import utcnow
from sdgov.contracts import Agreed, ArtifactRef
from sdgov.governance.controller import APPROVERS, controller_files
from sdgov.governance.signoff import SignOff
from sdgov.governance.site import Site
from sdgov.intake.inputs import CheckedProposal
from sdgov.tasks.common import stage

VERSION = "1.4.0"  # 1.4: signed proposals; 1.3: the controller's policy; 1.2: committed approvers; 1.1: codes.parquet


@task(name="propose_phi", version=VERSION, cache_policy=NO_CACHE)
def propose_phi(checked: CheckedProposal, site: Site, run_id: str) -> Agreed:
    """The proposal as ``checked`` (its signature, the proposer's role analyst, the inputs and the controller's
    policy: :func:`sdgov.intake.inputs.check_proposal`), re-verified by hash; write the agreement and log it as
    proposed → ``Agreed``.

    The only sign-off is the proposer's; the controller decides later, in the governed flow."""
    with stage("propose_phi", VERSION, f"{site.root}/runs/{run_id}") as rec:
        checked.inputs.reverified()
        approvers_path = controller_files(site.registry)[APPROVERS]
        files = write_agreement(site.registry, run_id, checked.inputs)  # inputs valid: we write
        who, approvers, signed = checked.proposer, ArtifactRef.of("approvers", approvers_path), checked.signed
        site.registry.append(
            "agreement_proposed",
            who.name,
            who.role,
            agreement_sha256=files.sha256,
            run_id=run_id,
            decision="approve",
            comment="proposed",
            artifacts={
                "agreement": files.agreement.sha256,
                "spec": files.spec.sha256,
                "approvers": approvers.sha256,
                "identity_verified": str(signed.verified).lower(),
                **({"nonce": signed.nonce} if signed.nonce else {}),  # a signed proposal counts once
            },
            signatures={"proposal": signed.token} if signed.token else {},
        )
        s = SignOff(
            name=who.name,
            role=who.role,
            subject="agreement",
            decision="approve",
            subject_sha256=files.sha256,
            time=utcnow(),
            comment="proposed",
            via=signed.via(),
            identity_verified=signed.verified,
        )
        rec.inputs = [files.spec, files.schema, approvers, files.data.as_artifact()]
        rec.outputs = [files.agreement, files.codes]
        rec.params = {"agreement_sha256": files.sha256, "proposer": who.name}
    return files.agreed(approvers, [s], rec.record())
