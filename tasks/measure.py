"""Stage 2 — measure: the agreed marginals on the confidential data, with discrete Gaussian noise, drawn once.

The draw-once transaction (ledger, crash recovery, reuse) is :mod:`sdgov.measurement_store`; the data is the
encoded artifact the agree stage wrote (:func:`sdgov.artifacts.read_codes`), read only when noise is drawn.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import load_agreement, read_codes, read_schema
from sdgov.contracts import Agreed, ArtifactRef, Measured
from sdgov.hashing import write_json
from sdgov.measure import measure as measure_marginals
from sdgov.measurement_store import read_logged_or_draw_once
from sdgov.privacy import plan_privacy
from sdgov.registry import Registry
from sdgov.tasks.common import logger, stage

VERSION = "1.2.0"  # 1.2: reads the encoded data artifact (codes.parquet) instead of parsing the CSV


@task(name="measure", version=VERSION, cache_policy=NO_CACHE)
def measure(agreed: Agreed, registry_root: str) -> Measured:
    log = logger()
    with stage("measure", VERSION) as rec:
        agreement = load_agreement(agreed.agreement)
        plan = plan_privacy(agreement.privacy, agreement.cliques, agreed.data.rows)
        write_json(Path(agreed.run_dir) / "privacy_plan.json", plan.model_dump(mode="json"))
        stored = read_logged_or_draw_once(
            Registry(registry_root),
            agreed,
            plan,
            len(agreement.cliques),
            draw=lambda: measure_marginals(
                read_codes(agreed.codes), read_schema(agreed.schema_file), agreement, plan, agreed.data.sha256
            ),
        )
        if stored.how == "reused":
            log.info("reusing the noisy marginals drawn at %s (no new noise)", stored.logged_at)
        else:
            if stored.how == "adopted":
                log.warning("adopting the noisy marginals persisted by an interrupted run (no new noise)")
            log.info(
                "measured %d marginals (ρ=%s, ε=%s, δ=%s)", len(agreement.cliques), plan.rho, plan.epsilon, plan.delta
            )
        rec.inputs = [agreed.agreement, agreed.data.as_artifact(), agreed.codes]
        rec.outputs = [
            ArtifactRef.of("measurements", stored.path),
            ArtifactRef.of("privacy_plan", Path(agreed.run_dir) / "privacy_plan.json"),
        ]
        rec.params = {"reused": stored.how == "reused", "measurement_key": stored.key}
    return Measured(
        measurements=rec.outputs[0], privacy_plan=rec.outputs[1], reused=stored.how == "reused", record=rec.record()
    )
