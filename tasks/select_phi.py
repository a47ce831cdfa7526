"""Stage 0 (optional) — private selection as a Prefect task: the analyst's draft becomes a Φ proposal and a
proposed spec (:mod:`sdgov.measurement.selection.propose`, which ``sdgov propose --select`` calls without Prefect)."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from sdgov.measurement import SELECT_STAGE, SELECT_VERSION, Proposal, propose_selection
from sdgov.tasks.common import stage


@task(name=SELECT_STAGE, version=SELECT_VERSION, cache_policy=NO_CACHE)
def select_phi(
    spec_path: str,
    registry_root: str,
    run_id: str,
    proposer: str,
    data_path: str | None = None,
    method: str | None = None,
    proposal: str | None = None,
) -> tuple[dict[str | None, Proposal], dict[str, Any]]:
    """Select and log the proposals as the analyst's (:func:`~sdgov.measurement.selection.propose.propose_selection`),
    the stage's start and finish in the run's log."""
    with stage(SELECT_STAGE, SELECT_VERSION) as rec:
        return propose_selection(spec_path, registry_root, run_id, proposer, data_path, method, proposal, rec)
