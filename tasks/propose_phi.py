"""Stage 1, governed variant — the analyst proposes Φ; the data controller decides later (in the UI or CLI).

Same checks and the same ``agreement.json`` as :mod:`tasks.agree_phi`, but no standing approval is read: the
only sign-off recorded here is the proposer's (``agreement_proposed``), checked against the approvers
registry (role analyst). The controller's decision is taken by the governed flow (flows/governed.py).
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.approvers import load_approvers
from sdgov.contracts import Agreed, ArtifactRef, DataRef, SignOff, utcnow
from sdgov.errors import SpecError
from sdgov.hashing import write_json
from sdgov.privacy import plan_privacy
from sdgov.registry import Registry
from sdgov.schema import load_encoded
from sdgov.spec import load_spec
from tasks.common import stage

VERSION = "1.0.0"


def check_proposal(spec_path: str, approvers_path: str, proposer: str, data_path: str | None = None):
    """Everything a user can get wrong, before anything is written (also called by the CLI before the flow)."""
    loaded = load_spec(spec_path)
    data = Path(data_path).resolve() if data_path else loaded.data_path
    codes = load_encoded(data, loaded.schema_)
    try:
        plan_privacy(loaded.agreement.privacy, loaded.agreement.cliques, len(codes))
    except SpecError as exc:
        raise SpecError(exc.what, f"{loaded.spec_path}: {exc.where}", exc.fix) from None
    approvers = load_approvers(approvers_path)
    who = approvers.find(proposer)
    if who is None or who.role != "analyst":
        raise SpecError(f"the proposer {proposer!r} must be an analyst in the approvers registry", str(approvers_path),
                        "add them with role 'analyst' or name the analyst who proposes Φ")
    return loaded, data, codes, who


@task(name="propose_phi", version=VERSION, cache_policy=NO_CACHE)
def propose_phi(spec_path: str, registry_root: str, run_id: str, proposer: str, approvers_path: str,
                data_path: str | None = None) -> Agreed:
    with stage("propose_phi", VERSION) as rec:
        loaded, data, codes, who = check_proposal(spec_path, approvers_path, proposer, data_path)
        sha = loaded.agreement.sha256()
        registry = Registry(registry_root)
        run_dir = registry.run_dir(run_id)
        run_dir.mkdir(parents=True, exist_ok=False)
        write_json(run_dir / "agreement.json", {"agreement": loaded.agreement.model_dump(mode="json"), "sha256": sha})
        agreement = ArtifactRef.of("agreement", run_dir / "agreement.json")
        spec_ref = ArtifactRef.of("spec", loaded.spec_path)
        schema_ref = ArtifactRef.of("schema", loaded.schema_file)
        approvers_ref = ArtifactRef.of("approvers", approvers_path)
        data_ref = DataRef.of(loaded.spec.dataset.name, data, rows=len(codes))
        s = SignOff(name=who.name, role=who.role, subject="agreement", decision="approve", subject_sha256=sha,
                    time=utcnow(), comment="proposed", via="proposal (governed flow)")
        registry.append("agreement_proposed", who.name, who.role, agreement_sha256=sha, run_id=run_id,
                        decision="approve", comment="proposed",
                        artifacts={"agreement": agreement.sha256, "spec": spec_ref.sha256,
                                   "approvers": approvers_ref.sha256})
        rec.inputs = [spec_ref, schema_ref, approvers_ref, data_ref.as_artifact()]
        rec.outputs = [agreement]
        rec.params = {"agreement_sha256": sha, "proposer": who.name}
    return Agreed(run_dir=str(run_dir), spec=spec_ref, schema_file=schema_ref, agreement=agreement,
                  agreement_sha256=sha, approvals=approvers_ref, data=data_ref, signoffs=[s], record=rec.record())
