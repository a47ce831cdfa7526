"""Stage 2 — measure: the agreed marginals on the confidential data, with discrete Gaussian noise, drawn once.

The noisy marginals are persisted under the registry (keyed by agreement and data hash) *before* anything
uses them, under the registry lock. A retry, a crash and re-run, or a second run of the same agreement on the
same data reuses them: two noisy copies of one statistic would leak more than one.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.atomic import atomic_write_bytes
from sdgov.contracts import Agreed, ArtifactRef, Measured
from sdgov.errors import RegistryError
from sdgov.hashing import sha256_bytes, sha256_file, sha256_json, write_json
from sdgov.measure import MeasurementSet, measure as measure_marginals
from sdgov.privacy import plan_privacy
from sdgov.registry import Registry
from sdgov.schema import load_encoded, load_schema
from sdgov.spec import Agreement
from tasks.common import logger, stage

VERSION = "1.0.0"


def measurement_key(agreement_sha256: str, data_sha256: str) -> str:
    return sha256_json({"agreement": agreement_sha256, "data": data_sha256})


def load_agreement(ref: ArtifactRef) -> Agreement:
    return Agreement.model_validate(json.loads(ref.verified().read_text())["agreement"])


@task(name="measure", version=VERSION, cache_policy=NO_CACHE)
def measure(agreed: Agreed, registry_root: str) -> Measured:
    log = logger()
    with stage("measure", VERSION) as rec:
        registry = Registry(registry_root)
        agreement = load_agreement(agreed.agreement)
        plan = plan_privacy(agreement.privacy, agreement.cliques, agreed.data.rows)
        run_dir = Path(agreed.run_dir)
        write_json(run_dir / "privacy_plan.json", plan.model_dump(mode="json"))
        key = measurement_key(agreed.agreement_sha256, agreed.data.sha256)
        path = registry.measurement_path(key)
        name = str(path.relative_to(registry.root))
        with registry.lock():
            logged = [e for e in registry.events() if e.event == "measured" and name in e.artifacts]
            if path.exists():
                if not logged or sha256_file(path) != logged[0].artifacts[name]:
                    raise RegistryError("persisted measurement does not match the one logged when it was drawn",
                                        str(path), "restore it from DVC/backup; never re-draw noise for the same agreement")
                reused = True
                log.info("reusing the noisy marginals drawn at %s (no new noise)", logged[0].time)
            else:
                data = Path(agreed.data.path)
                if sha256_file(data) != agreed.data.sha256:
                    raise RegistryError("the confidential data changed since the agreement stage", str(data),
                                        "re-run the whole release")
                schema = load_schema(agreed.schema_file.verified())
                codes = load_encoded(data, schema)
                mset = measure_marginals(codes, schema, agreement, plan, agreed.data.sha256)
                payload = (mset.model_dump_json(indent=None) + "\n").encode()
                atomic_write_bytes(path, payload)  # persisted before anything uses it
                registry._append_locked("measured", "sdgov", "system", agreement_sha256=agreed.agreement_sha256,
                                        run_id=run_dir.name, artifacts={name: sha256_bytes(payload)},
                                        comment=f"{len(mset.measurements)} marginals, rho={plan.rho}")
                reused = False
                log.info("measured %d marginals (ρ=%s, ε=%s, δ=%s)", len(mset.measurements), plan.rho, plan.epsilon, plan.delta)
        rec.inputs = [agreed.agreement, agreed.data.as_artifact()]
        measurements = ArtifactRef.of("measurements", path)
        plan_ref = ArtifactRef.of("privacy_plan", run_dir / "privacy_plan.json")
        rec.outputs = [measurements, plan_ref]
        rec.params = {"reused": reused, "measurement_key": key}
    return Measured(measurements=measurements, privacy_plan=plan_ref, reused=reused, record=rec.record())


def read_measurements(ref: ArtifactRef) -> MeasurementSet:
    return MeasurementSet.model_validate_json(ref.verified().read_bytes())
