"""Private selection against the registry: the 1-ways through the draw-once store, the selection through the ledger.

The draft agreement (Φ = the 1-way marginals, ``privacy.selection`` declared) is measured like any release
(:func:`sdgov.measurement_store.measure_once`): its 1-ways are drawn once, at the σ the final agreement will ask for
(:func:`sdgov.privacy.plan_privacy` fixes it from the selection share alone), so the release that follows reuses
them. The selection's own ρ (exponential mechanism + noisy scores) is one more statistic in the ledger, keyed by
the draft agreement and the dataset: reserved before the mechanism runs, its proposal persisted and logged as
``measured`` — proposing the same draft again reads that proposal back, it never selects twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sdgov import ledger
from sdgov.atomic import atomic_write_bytes
from sdgov.contracts import Agreed
from sdgov.errors import SpecError
from sdgov.generators.registry import generator
from sdgov.hashing import sha256_bytes, sha256_json
from sdgov.measure import Measurement, marginal_counts, measure_cliques
from sdgov.measurement_store import Outcome, logged_statistic, measure_once
from sdgov.privacy import selection_budget
from sdgov.registry import Registry
from sdgov.schema import Clique, Schema
from sdgov.selection import Proposal, select_mst
from sdgov.spec import Agreement


@dataclass(frozen=True)
class Selected:
    proposal: Proposal
    key: str  # the selection's statistic key in the ledger
    how: str  # "drawn" now; "reused": this draft was selected before, on this dataset; "adopted": persisted by a
    # run that died before logging it (selected once, under that run's reservation)
    one_ways: Outcome


def selection_key(fingerprint: str, agreement: Agreement) -> str:
    """dataset content × draft agreement (attributes, selection share, forced and excluded pairs)."""
    return sha256_json({"selection": agreement.sha256(), "dataset": fingerprint})


def check_draft(agreement: Agreement, where: str) -> None:
    if agreement.privacy.selection is None:
        raise SpecError(
            "the draft declares no private selection", where, "add privacy.selection (method: mst, share: ...)"
        )
    if any(len(c) != 1 for c in agreement.cliques):
        raise SpecError(
            "a draft for private selection lists only 1-way marginals in Φ",
            where,
            "put Φ's attributes as phi.all_kway with k: 1; pairs you want for sure go in privacy.selection.force",
        )


def select_once(
    registry: Registry, agreed: Agreed, agreement: Agreement, schema: Schema, codes: Callable[[], pd.DataFrame]
) -> Selected:
    """Measure the draft's 1-ways (draw-once store), then run the selection once under the ledger."""
    sel = agreement.privacy.selection
    assert sel is not None

    def draw(cliques: list[Clique], sigmas: dict[Clique, float]) -> list[Measurement]:
        return measure_cliques(codes(), schema, cliques, sigmas)

    one_ways = measure_once(registry, agreed, agreement, schema, draw)
    assert one_ways.plan.rho_budget is not None  # a selection spends a share of a ρ budget (spec validator)
    rho = selection_budget(agreement.privacy, one_ways.plan.rho_budget)
    assert rho is not None
    noisy = _read_one_ways(one_ways.path)
    fp, key = agreed.data.fingerprint, selection_key(agreed.data.fingerprint, agreement)
    run_id = Path(agreed.run_dir).name
    path = registry.measurement_path(key)
    with registry.lock():
        events = registry.verified_events()
        if logged_statistic(registry, events, key) is not None:
            return Selected(Proposal.model_validate_json(path.read_bytes()), key, "reused", one_ways)
        reserved = ledger.reservation(events, key) is not None
        if reserved and path.exists():  # persisted by a run that died before logging it: adopt, never re-select
            payload = path.read_bytes()
            proposal = Proposal.model_validate_json(payload)
            _log(
                registry, agreed, run_id, path, payload, f"private selection adopted from an interrupted run, rho={rho}"
            )
            return Selected(proposal, key, "adopted", one_ways)
        if not reserved:
            ledger.spend_locked(
                registry,
                dataset=agreed.data.name,
                fingerprint=fp,
                statistics={key: rho},
                agreement_sha256=agreed.agreement_sha256,
                run_id=run_id,
                events=events,
            )
        data = codes()
        plugin, attrs = generator(agreement.generator.name), agreement.attributes
        ones: list[Clique] = [(a,) for a in attrs]
        sizes = schema.domain(attrs)
        proposal = select_mst(
            agreement.attributes,
            schema.domain(agreement.attributes),
            noisy,
            lambda a, b: marginal_counts(data, schema, (a, b)).astype(np.float64),
            sel,
            rho,
            agreement.limits.max_marginal_cells,
            fits=lambda pairs: plugin.model_cells(attrs, ones + list(pairs), sizes) <= agreement.limits.max_model_cells,
        )
        payload = (proposal.model_dump_json() + "\n").encode()
        atomic_write_bytes(path, payload)  # persisted before it is logged or used
        _log(registry, agreed, run_id, path, payload, f"private selection ({proposal.method}) of {fp[:12]}…, rho={rho}")
    return Selected(proposal, key, "drawn", one_ways)


def _log(registry: Registry, agreed: Agreed, run_id: str, path: Path, payload: bytes, comment: str) -> None:
    registry.append_locked(
        "measured",
        "sdgov",
        "system",
        agreement_sha256=agreed.agreement_sha256,
        run_id=run_id,
        artifacts={str(path.relative_to(registry.root)): sha256_bytes(payload)},
        comment=comment,
    )


def _read_one_ways(path: Path) -> dict[str, np.ndarray]:
    from sdgov.measure import MeasurementSet

    mset = MeasurementSet.model_validate_json(path.read_bytes())
    return {m.clique[0]: m.array().astype(np.float64) for m in mset.measurements}
