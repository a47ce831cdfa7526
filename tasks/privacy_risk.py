"""Privacy-risk evidence as a Prefect task (controller side, beside the audit stage).

The work is :func:`sdgov.risk.run.audit_spec_privacy` (no orchestrator inside); attack trials run in parallel in
joblib workers inside it, and their progress is logged here. Writes ``privacy_evidence.json`` (the full result and
the card's "Privacy evidence" section). Not yet wired into ``flows/release.py``: the card accepts the section
through ``build_card(privacy_evidence=...)`` and ``sdgov.risk.report.audit_checks`` turns the verdict into
blocking audit checks.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.contracts import ArtifactRef
from sdgov.hashing import write_json
from tasks.common import logger

VERSION = "1.0.0"


@task(name="privacy_risk", version=VERSION, cache_policy=NO_CACHE)
def privacy_risk(spec_path: str, out_dir: str, generator: str | None = None, settings: dict | None = None,
                 policy_path: str | None = None, data_path: str | None = None) -> ArtifactRef:
    from sdgov.risk.base import RiskSettings
    from sdgov.risk.policy import load_policy
    from sdgov.risk.report import privacy_section
    from sdgov.risk.run import audit_spec_privacy

    log = logger()

    def progress(done: int, total: int, what: str) -> None:
        if done == total or done % max(1, total // 10) == 0:
            log.info("privacy audit — %s: %d / %d", what, done, total)

    result = audit_spec_privacy(spec_path, generator, RiskSettings(**(settings or {})), load_policy(policy_path),
                                data_path, progress=progress)
    out = Path(out_dir) / "privacy_evidence.json"
    write_json(out, {"result": json.loads(result.model_dump_json()), "section": privacy_section(result)})
    log.info("privacy evidence: %s (ε_lower %s, min PG %s)", result.verdict, result.epsilon_lower,
             result.min_privacy_gain)
    return ArtifactRef.of("privacy_evidence", out)
