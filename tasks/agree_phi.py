"""Stage 1 — agree Φ: validate spec, schema and data; canonicalise and hash the agreement; record sign-offs.

Everything a user can get wrong is checked here, before anything is written: a bad spec, schema, data file
or approval ends the run with one error and an untouched registry.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.approvals import agreement_signoffs
from sdgov.contracts import Agreed, ArtifactRef, DataRef
from sdgov.hashing import write_json
from sdgov.inputs import check_inputs
from sdgov.registry import Registry
from tasks.common import stage

VERSION = "1.0.0"


@task(name="agree_phi", version=VERSION, cache_policy=NO_CACHE)
def agree_phi(spec_path: str, registry_root: str, run_id: str, approvals_path: str | None = None,
              data_path: str | None = None) -> Agreed:
    with stage("agree_phi", VERSION) as rec:
        checked = check_inputs(spec_path, approvals_path, data_path)
        loaded, data, codes, approvals_file = checked.loaded, checked.data_path, checked.codes, checked.approvals_path
        sha = loaded.agreement.sha256()
        signoffs = agreement_signoffs(checked.approvals, sha, str(approvals_file))

        # --- all inputs valid: from here on we write
        registry = Registry(registry_root)
        run_dir = registry.run_dir(run_id)
        run_dir.mkdir(parents=True, exist_ok=False)
        write_json(run_dir / "agreement.json", {"agreement": loaded.agreement.model_dump(mode="json"), "sha256": sha})
        agreement = ArtifactRef.of("agreement", run_dir / "agreement.json")
        spec_ref = ArtifactRef.of("spec", loaded.spec_path)
        schema_ref = ArtifactRef.of("schema", loaded.schema_file)
        data_ref = DataRef.of(loaded.spec.dataset.name, data, rows=len(codes))
        for s in signoffs:
            registry.append("agreement_signed", s.name, s.role, agreement_sha256=sha, run_id=run_id,
                            decision=s.decision, comment=s.comment or s.via,
                            artifacts={"agreement": agreement.sha256, "spec": spec_ref.sha256})
        approvals_ref = ArtifactRef.of("approvals", approvals_file)
        rec.inputs = [spec_ref, schema_ref, approvals_ref,
                      data_ref.as_artifact()]
        rec.outputs = [agreement]
        rec.params = {"agreement_sha256": sha}
    return Agreed(run_dir=str(run_dir), spec=spec_ref, schema_file=schema_ref, agreement=agreement,
                  agreement_sha256=sha, approvals=approvals_ref, data=data_ref, signoffs=signoffs, record=rec.record())
