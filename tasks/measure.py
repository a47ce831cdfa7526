"""Stage 2 — measure: the agreed marginals on the confidential data, with discrete Gaussian noise, drawn once.

The noisy marginals are persisted under the registry (keyed by agreement and data hash) *before* anything
uses them, under the registry lock. A retry, a crash and re-run, or a second run of the same agreement on the
same data reuses them: two noisy copies of one statistic would leak more than one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov import ledger
from sdgov.atomic import atomic_write_bytes
from sdgov.contracts import Agreed, ArtifactRef, Measured
from sdgov.errors import RegistryError
from sdgov.hashing import sha256_bytes, sha256_file, sha256_json, write_json
from sdgov.measure import MeasurementSet
from sdgov.measure import measure as measure_marginals
from sdgov.privacy import plan_privacy
from sdgov.registry import Event, Registry
from sdgov.schema import load_encoded, load_schema
from sdgov.spec import Agreement
from sdgov.tasks.common import logger, stage

VERSION = "1.1.0"  # 1.1: privacy-budget ledger, crash recovery of persisted draws


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
            logged = logged_measurement(registry, key)
            if logged is not None:
                reused = True
                log.info("reusing the noisy marginals drawn at %s (no new noise)", logged.time)
            else:
                # budget ledger (sdgov/ledger.py): reserve ρ or refuse, BEFORE any noise is drawn; idempotent per key
                reserved_before = ledger.reservation(registry, key)
                adopted = _adopt_unlogged(path, agreed, reserved_before is not None, plan.noise)
                ledger.spend_locked(
                    registry,
                    dataset=agreed.data.name,
                    dataset_sha256=agreed.data.sha256,
                    rho=plan.rho,
                    measurement_key=key,
                    agreement_sha256=agreed.agreement_sha256,
                    run_id=run_dir.name,
                )
                fault_point("after_spend")
                if adopted is not None:  # persisted by a run that died before logging it: never re-draw
                    payload, n, note = adopted, None, "adopted: persisted by an interrupted run before it was logged"
                    log.warning("adopting the noisy marginals persisted by an interrupted run (no new noise)")
                else:
                    data = Path(agreed.data.path)
                    if sha256_file(data) != agreed.data.sha256:
                        raise RegistryError(
                            "the confidential data changed since the agreement stage",
                            str(data),
                            "re-run the whole release",
                        )
                    schema = load_schema(agreed.schema_file.verified())
                    codes = load_encoded(data, schema)
                    mset = measure_marginals(codes, schema, agreement, plan, agreed.data.sha256)
                    payload = (mset.model_dump_json(indent=None) + "\n").encode()
                    fault_point("after_draw")
                    atomic_write_bytes(path, payload)  # persisted before anything uses it
                    n, note = len(mset.measurements), ""
                    fault_point("after_persist")
                registry.append_locked(
                    "measured",
                    "sdgov",
                    "system",
                    agreement_sha256=agreed.agreement_sha256,
                    run_id=run_dir.name,
                    artifacts={name: sha256_bytes(payload)},
                    comment=f"{n if n is not None else len(agreement.cliques)} marginals, "
                    f"rho={plan.rho}" + (f"; {note}" if note else ""),
                )
                reused = False
                log.info(
                    "measured %d marginals (ρ=%s, ε=%s, δ=%s)",
                    len(agreement.cliques),
                    plan.rho,
                    plan.epsilon,
                    plan.delta,
                )
        rec.inputs = [agreed.agreement, agreed.data.as_artifact()]
        measurements = ArtifactRef.of("measurements", path)
        plan_ref = ArtifactRef.of("privacy_plan", run_dir / "privacy_plan.json")
        rec.outputs = [measurements, plan_ref]
        rec.params = {"reused": reused, "measurement_key": key}
    return Measured(measurements=measurements, privacy_plan=plan_ref, reused=reused, record=rec.record())


def logged_measurement(registry: Registry, key: str) -> Event | None:
    """The log event of the measurement drawn for ``key`` (agreement × data), after checking the persisted file
    still has the logged hash; None if none was ever drawn."""
    path = registry.measurement_path(key)
    name = str(path.relative_to(registry.root))
    logged = [e for e in registry.events() if e.event == "measured" and name in e.artifacts]
    if not logged:
        return None
    if not path.exists() or sha256_file(path) != logged[0].artifacts[name]:
        raise RegistryError(
            "persisted measurement does not match the one logged when it was drawn",
            str(path),
            "restore it from DVC/backup; never re-draw noise for the same agreement",
        )
    return logged[0]


def _adopt_unlogged(path: Path, agreed: Agreed, reserved_before: bool, noise: str) -> bytes | None:
    """A measurement file this key's run persisted (atomically, under the lock) but did not live to log.

    Adopted only if an earlier run had reserved the budget for this key (so an sdgov run was measuring when it
    died): a file that appeared without a reservation was not drawn under the ledger and is refused. With
    ``noise: none`` the counts are exact and simply measured again.
    """
    if not path.exists() or noise == "none":
        return None
    if not reserved_before:
        raise RegistryError(
            "an unlogged measurement file is there, but no run ever reserved budget for it (it was "
            "not drawn by sdgov under the ledger)",
            str(path),
            "inspect it and move it away deliberately",
        )
    payload = path.read_bytes()
    try:
        mset = MeasurementSet.model_validate_json(payload)
    except ValueError:
        raise RegistryError(
            "an unlogged, unreadable measurement file is in the way",
            str(path),
            "inspect it and move it away deliberately",
        ) from None
    if mset.agreement_sha256 != agreed.agreement_sha256 or mset.dataset_sha256 != agreed.data.sha256:
        raise RegistryError(
            "an unlogged measurement for a different agreement or dataset is in the way",
            str(path),
            "inspect it and move it away deliberately",
        )
    return payload


def fault_point(name: str) -> None:
    """Test hook for crash tests: with ``SDGOV_FAULT=name``, touch ``$SDGOV_FAULT_FILE`` and wait to be killed."""
    if os.environ.get("SDGOV_FAULT") == name:
        Path(os.environ["SDGOV_FAULT_FILE"]).write_text(name)
        time.sleep(float(os.environ.get("SDGOV_FAULT_SLEEP", "120")))


def read_measurements(ref: ArtifactRef) -> MeasurementSet:
    return MeasurementSet.model_validate_json(ref.verified().read_bytes())
