"""Stage 1 — agree Φ: validate spec, schema and data; canonicalise and hash the agreement; record sign-offs.

Everything a user can get wrong is checked here, before anything is written: a bad spec, schema, data file
or approval ends the run with one error and an untouched registry.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.approvals import agreement_signoffs
from sdgov.contracts import Agreed, ArtifactRef
from sdgov.inputs import check_inputs
from sdgov.registry import Registry
from sdgov.tasks.common import stage, write_agreement

VERSION = "1.0.0"


@task(name="agree_phi", version=VERSION, cache_policy=NO_CACHE)
def agree_phi(
    spec_path: str, registry_root: str, run_id: str, approvals_path: str | None = None, data_path: str | None = None
) -> Agreed:
    with stage("agree_phi", VERSION) as rec:
        checked = check_inputs(spec_path, approvals_path, data_path)
        loaded, data, codes, approvals_file = checked.loaded, checked.data_path, checked.codes, checked.approvals_path
        sha = loaded.agreement.sha256()
        signoffs = agreement_signoffs(checked.approvals, sha, str(approvals_file))

        # --- all inputs valid: from here on we write
        files = write_agreement(registry_root, run_id, loaded, data, rows=len(codes))
        registry = Registry(registry_root)
        for s in signoffs:
            registry.append(
                "agreement_signed",
                s.name,
                s.role,
                agreement_sha256=sha,
                run_id=run_id,
                decision=s.decision,
                comment=s.comment or s.via,
                artifacts={"agreement": files.agreement.sha256, "spec": files.spec.sha256},
            )
        approvals_ref = ArtifactRef.of("approvals", approvals_file)
        rec.inputs = [files.spec, files.schema, approvals_ref, files.data.as_artifact()]
        rec.outputs = [files.agreement]
        rec.params = {"agreement_sha256": sha}
    return Agreed(
        run_dir=str(files.run_dir),
        spec=files.spec,
        schema_file=files.schema,
        agreement=files.agreement,
        agreement_sha256=sha,
        approvals=approvals_ref,
        data=files.data,
        signoffs=signoffs,
        record=rec.record(),
    )
