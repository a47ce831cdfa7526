"""Stage 4 — audit (controller side): did the generator use only Φ, and what privacy risk remains?

Always: the structural and provenance checks of :mod:`sdgov.audit`. When the spec pre-registers them: the
black-box decomposability test (``audit:``, :mod:`sdgov.decomposability`) and the privacy-risk evidence
(``privacy_risk:``, :mod:`sdgov.risk`). Both read the confidential data, which only this stage and the utility
stage may do after measurement. Any failed blocking check blocks the release.

The privacy audit's attack trials (shadow fits, attack classifiers) run in parallel across cores through a
Prefect :class:`~prefect.task_runners.ProcessPoolTaskRunner`, each trial its own ``attack-trial`` task run, so the
Prefect UI shows their progress and a failed trial by name; the stage also logs progress every tenth.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.artifacts import load_agreement, read_measurements
from sdgov.audit import DECOMPOSABILITY_NOT_RUN, PRIVACY_NOT_RUN, run_checks, with_checks
from sdgov.contracts import Agreed, ArtifactRef, Audited, Generated, Measured
from sdgov.errors import DataError
from sdgov.hashing import write_json
from sdgov.privacy import PrivacyPlan
from sdgov.schema import encode, load_encoded, load_schema
from sdgov.tasks.common import logger, stage

VERSION = "1.1.0"


@task(name="attack-trials", version=VERSION, cache_policy=NO_CACHE)
def attack_trials(fn: Callable[..., Any], calls: list[tuple]) -> list[Any]:
    """A batch of privacy-audit trials (shadow fits with their synthetic sets, or targets' attack classifiers)."""
    return [fn(*args) for args in calls]


class PrefectTrials:
    """A :data:`sdgov.risk.base.Mapper` over one Prefect process pool, open for the whole privacy audit.

    Trials go in batches of a few (about ``BATCHES_PER_WORKER`` task runs per worker and kind): a task run costs
    a few API calls, which one trial of a small audit does not outweigh, while a handful per worker still load-
    balances and shows progress in the UI.
    """

    BATCHES_PER_WORKER = 4

    def __init__(self, workers: int) -> None:
        from prefect.task_runners import ProcessPoolTaskRunner

        self.workers = max(1, workers)
        self.runner = ProcessPoolTaskRunner(max_workers=self.workers)

    def __enter__(self) -> PrefectTrials:
        self.runner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.runner.__exit__(*exc)

    def __call__(self, fn: Callable[..., Any], calls: list[tuple], label: str) -> Iterator[Any]:
        size = max(1, -(-len(calls) // (self.BATCHES_PER_WORKER * self.workers)))
        futures = [
            self.runner.submit(
                attack_trials.with_options(task_run_name=f"{label}-{i}-{i + len(batch) - 1}"),
                {"fn": fn, "calls": batch},
            )
            for i in range(0, len(calls), size)
            for batch in [calls[i : i + size]]
        ]
        for f in futures:
            yield from f.result()


@task(name="audit", version=VERSION, cache_policy=NO_CACHE)
def audit(agreed: Agreed, measured: Measured, generated: Generated) -> Audited:
    log = logger()
    with stage("audit", VERSION) as rec:
        agreement = load_agreement(agreed.agreement)
        mset = read_measurements(measured.measurements)
        schema = load_schema(agreed.schema_file.verified())
        info = json.loads(generated.model_info.verified().read_text())
        synth = pd.read_parquet(generated.synthetic.verified())
        try:
            encode(synth, schema, where="synthetic.parquet", columns=agreement.attributes)
            schema_error = None
        except DataError as exc:
            schema_error = exc.one_line()
        report = run_checks(
            agreement,
            agreed.agreement_sha256,
            mset,
            measured.measurements,
            generated.record,
            [tuple(c) for c in info.get("fitted_marginals", [])],
            len(synth),
            generated.rows,
            schema_error,
        )
        run_dir = Path(agreed.run_dir)
        extra: dict[str, ArtifactRef] = {}
        decomposability = agreement.audit is not None and agreement.audit.enabled
        privacy = agreement.privacy_risk is not None and agreement.privacy_risk.enabled
        if decomposability or privacy:
            codes = load_encoded(agreed.data.as_artifact().verified(), schema)
        if decomposability:
            from sdgov.decomposability_report import audit_checks, decomposability_section, run_release_audit

            log.info(
                "decomposability test: %d fits of %s…",
                4 * agreement.audit.K,
                agreement.audit.generator or agreement.generator.name,
            )
            result = run_release_audit(agreement, codes, schema)
            log.info("decomposability test: %s (p = %.3g, %.1f s)", result.verdict, result.p_value, result.seconds)
            report = with_checks(report, audit_checks(result), DECOMPOSABILITY_NOT_RUN)
            out = run_dir / "decomposability.json"
            write_json(out, {"result": result.model_dump(mode="json"), "section": decomposability_section(result)})
            extra["decomposability"] = ArtifactRef.of("decomposability", out)
        if privacy:
            from sdgov.risk.report import audit_checks as privacy_checks
            from sdgov.risk.report import privacy_section
            from sdgov.risk.run import run_release_privacy

            def progress(done: int, total: int, what: str) -> None:
                if done == total or done % max(1, total // 10) == 0:
                    log.info("privacy audit — %s: %d / %d", what, done, total)

            plan = PrivacyPlan.model_validate_json(measured.privacy_plan.verified().read_bytes())
            n_jobs = agreement.privacy_risk.settings.n_jobs
            with PrefectTrials((os.cpu_count() or 1) if n_jobs < 1 else n_jobs) as trials:
                risk = run_release_privacy(agreement, schema, codes, plan, progress, trials)
            log.info(
                "privacy evidence: %s (ε_lower %s, min PG %s, %.1f s)",
                risk.verdict,
                risk.epsilon_lower,
                risk.min_privacy_gain,
                risk.seconds,
            )
            report = with_checks(report, privacy_checks(risk), PRIVACY_NOT_RUN)
            out = run_dir / "privacy_evidence.json"
            write_json(out, {"result": json.loads(risk.model_dump_json()), "section": privacy_section(risk)})
            extra["privacy_evidence"] = ArtifactRef.of("privacy_evidence", out)
        out = run_dir / "audit.json"
        write_json(out, report.model_dump(mode="json"))
        rec.inputs = [
            agreed.agreement,
            measured.measurements,
            generated.synthetic,
            generated.model_info,
            *([agreed.data.as_artifact()] if extra else []),
        ]
        rec.outputs = [ArtifactRef.of("audit", out), *extra.values()]
        rec.params = {"verdict": report.verdict}
    return Audited(report=rec.outputs[0], verdict=report.verdict, record=rec.record(), **extra)
