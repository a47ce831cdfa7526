"""Stage 2 — measure: the agreed marginals on the confidential data, with discrete Gaussian noise, drawn once
per statistic (dataset × marginal × σ; a part of a split synthesis is measured on its own records, its filter in
the key).

The draw-once transaction (policy, ledger, crash recovery, reuse of statistics drawn by earlier releases) is
:mod:`sdgov.measurement.store`; the data is the encoded artifact the agree stage wrote
(``codes.parquet``), counted by the engine (:mod:`sdgov.engines`: all marginals in one grouped scan, out of core)
only when noise is drawn.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import load_agreement, read_schema, read_spec
from sdgov.base.hashing import write_json
from sdgov.contracts import Agreed, ArtifactRef, Measured
from sdgov.engines import engine
from sdgov.governance.site import Site
from sdgov.measurement.marginals import noisy_measurements
from sdgov.measurement.store import STATEMENT, measure_once
from sdgov.tasks.common import logger, stage

VERSION = "2.1.0"  # 2.1: the privacy statement (privacy_statement.json) in place of budget.json
# 2.0: one draw per statistic (dataset × marginal × σ), reused across agreements; policy checked


@task(name="measure", version=VERSION, cache_policy=NO_CACHE)
def measure(agreed: Agreed, site: Site) -> Measured:
    """Draw (or reuse) the agreed noisy marginals once per statistic; write the privacy plan and the release's privacy
    statement → ``Measured``.

    Counts come from the encoded data only when noise is drawn; the record names statistics by keyed commitment."""
    log = logger()
    with stage("measure", VERSION, agreed.run_dir) as rec:
        agreement = load_agreement(agreed.agreement)
        schema = read_schema(agreed.schema_file)
        counter = engine(read_spec(agreed.spec).engine)  # the spec's engine: DuckDB embedded, or Dask
        outcome = measure_once(
            site,
            agreed,
            agreement,
            schema,
            # every marginal in one grouped scan of the encoded copy, out of core (a split part: of its records)
            draw=lambda cliques, sigmas, part: noisy_measurements(
                counter.marginals(
                    agreed.codes.verified(),
                    schema,
                    cliques,
                    None if part is None or agreement.split is None else (agreement.split.attribute, part.cells),
                ),
                sigmas,
            ),
        )
        plan = outcome.plan
        write_json(Path(agreed.run_dir) / "privacy_plan.json", plan.model_dump(mode="json"))
        counts = {h: list(outcome.how.values()).count(h) for h in ("reused", "adopted", "drawn")}
        if counts["adopted"]:
            log.warning(
                "adopting %d noisy marginal(s) persisted by an interrupted run (no new noise)", counts["adopted"]
            )
        log.info(
            "%d marginals: %d drawn now, %d reused (no new noise); ρ spent now %s, ε of the release %s, δ %s",
            len(plan.marginals),
            counts["drawn"],
            counts["reused"],
            outcome.statement.spent_rho,
            outcome.statement.release.zcdp,
            outcome.statement.delta,
        )
        rec.inputs = [agreed.agreement, agreed.data.as_artifact(), agreed.codes]
        rec.outputs = [
            ArtifactRef.of("measurements", outcome.path),
            ArtifactRef.of("privacy_plan", Path(agreed.run_dir) / "privacy_plan.json"),
            ArtifactRef.of("privacy_statement", Path(agreed.run_dir) / STATEMENT),
        ]
        # the record is published (provenance): each statistic by its keyed commitment, as in measurements.json
        commit = site.committer()
        rec.params = {
            "reused": outcome.reused_all,
            "statistics": {commit("statistic", k): h for k, h in outcome.how.items()},
        }
    return Measured(
        measurements=rec.outputs[0],
        privacy_plan=rec.outputs[1],
        statement=rec.outputs[2],
        reused=outcome.reused_all,
        record=rec.record(),
    )
