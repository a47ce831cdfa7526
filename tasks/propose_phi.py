"""Stage 1, governed variant — the analyst proposes Φ; the data controller decides later (in the UI or CLI).

Same checks and the same ``agreement.json`` as :mod:`sdgov.tasks.agree_phi`, but no standing approval is read: the
only sign-off recorded here is the proposer's (``agreement_proposed``), checked against the approvers
registry (role analyst). The controller's decision is taken by the governed flow (flows/governed.py).
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.approvers import load_approvers
from sdgov.contracts import Agreed, ArtifactRef, SignOff, utcnow
from sdgov.errors import SpecError
from sdgov.inputs import check_spec_and_data
from sdgov.registry import Registry
from sdgov.tasks.common import stage, write_agreement

VERSION = "1.0.0"


def check_proposal(spec_path: str, approvers_path: str, proposer: str, data_path: str | None = None):
    """Everything a user can get wrong, before anything is written (also called by the CLI before the flow)."""
    loaded, data, codes = check_spec_and_data(spec_path, data_path)
    approvers = load_approvers(approvers_path)
    who = approvers.find(proposer)
    if who is None or who.role != "analyst":
        raise SpecError(
            f"the proposer {proposer!r} must be an analyst in the approvers registry",
            str(approvers_path),
            "add them with role 'analyst' or name the analyst who proposes Φ",
        )
    return loaded, data, codes, who


@task(name="propose_phi", version=VERSION, cache_policy=NO_CACHE)
def propose_phi(
    spec_path: str, registry_root: str, run_id: str, proposer: str, approvers_path: str, data_path: str | None = None
) -> Agreed:
    with stage("propose_phi", VERSION) as rec:
        loaded, data, codes, who = check_proposal(spec_path, approvers_path, proposer, data_path)
        files = write_agreement(registry_root, run_id, loaded, data, rows=len(codes))
        sha, registry = files.sha256, Registry(registry_root)
        approvers_ref = ArtifactRef.of("approvers", approvers_path)
        s = SignOff(
            name=who.name,
            role=who.role,
            subject="agreement",
            decision="approve",
            subject_sha256=sha,
            time=utcnow(),
            comment="proposed",
            via="proposal (governed flow)",
        )
        registry.append(
            "agreement_proposed",
            who.name,
            who.role,
            agreement_sha256=sha,
            run_id=run_id,
            decision="approve",
            comment="proposed",
            artifacts={
                "agreement": files.agreement.sha256,
                "spec": files.spec.sha256,
                "approvers": approvers_ref.sha256,
            },
        )
        rec.inputs = [files.spec, files.schema, approvers_ref, files.data.as_artifact()]
        rec.outputs = [files.agreement]
        rec.params = {"agreement_sha256": sha, "proposer": who.name}
    return Agreed(
        run_dir=str(files.run_dir),
        spec=files.spec,
        schema_file=files.schema,
        agreement=files.agreement,
        agreement_sha256=sha,
        approvals=approvers_ref,
        data=files.data,
        signoffs=[s],
        record=rec.record(),
    )
