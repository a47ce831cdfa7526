"""Private selection against the registry: the 1-ways through the draw-once store, the selection through the ledger.

The draft agreement (Φ = the 1-way marginals, ``privacy.selection`` declared) is measured like any release
(:func:`sdgov.measurement.store.measure_once`): its 1-ways are drawn once, at the σ the final agreement will ask for
(:func:`sdgov.agreement.accounting.plan_privacy` fixes it from the selection share alone), so the release that follows
reuses
them. The selection's own ρ (exponential mechanism + noisy scores; with AIM also its rounds' Gaussian
measurements) is one more statistic in the ledger, keyed by the draft agreement and the dataset: reserved before the
mechanism runs (in the controller's budget authority, against the dataset's account over every registry), its
proposal recorded in the authority, persisted and logged as ``measured`` — proposing the same draft again, in this
registry or another, reads that proposal back, it never selects twice. AIM persists each round's draw in a
journal (``<key>.aim-rounds.json``) before using it; a run that dies mid-rounds is continued under the same
reservation by replaying the journal (in its registry only: another registry is refused until it finishes).

AIM's round measurements are not reused by the release: they are drawn at σs its annealing picks round by round,
while the release measures Φ's pairs at the σ the agreement's plan fixes from ``1 − share``. They are paid for
inside the selection's ρ, once, and serve only the selection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sdgov.agreement.accounting import selection_budget
from sdgov.agreement.spec import Agreement
from sdgov.base.atomic import atomic_write_bytes
from sdgov.base.errors import RegistryError, SpecError
from sdgov.base.hashing import sha256_bytes, sha256_json
from sdgov.contracts import Agreed
from sdgov.data.schema import Clique, Schema
from sdgov.generators.registry import generator
from sdgov.governance import authority as budget_authority
from sdgov.governance import ledger
from sdgov.measurement.marginals import Measurement, marginal_counts, measure_cliques
from sdgov.measurement.selection.aim import Aim, AimJournal
from sdgov.measurement.selection.mst import Proposal, select_mst
from sdgov.measurement.store import Outcome, logged_statistic, measure_once
from sdgov.registry.log import Registry

JOURNAL_SUFFIX = ".aim-rounds.json"


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


def check_draft(agreement: Agreement, where: str, method: str | None = None) -> None:
    """A draft for selection: 1-ways only, a selection declared — by the method asked for (``--select``), if any."""
    sel = agreement.privacy.selection
    if sel is None:
        raise SpecError(
            "the draft declares no private selection",
            where,
            f"add privacy.selection (method: {method or 'mst'}, share: ...)",
        )
    if method is not None and sel.method != method:
        raise SpecError(
            f"--select {method}, but the draft's privacy.selection.method is {sel.method}",
            where,
            f"set privacy.selection.method: {method} in the draft (it is part of the agreement) or use "
            f"--select {sel.method}",
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

    def draw(cliques: list[Clique], sigmas: dict[Clique, float], part: object) -> list[Measurement]:
        return measure_cliques(codes(), schema, cliques, sigmas)

    one_ways = measure_once(registry, agreed, agreement, schema, draw)
    assert one_ways.plan.rho_budget is not None  # a selection spends a share of a ρ budget (spec validator)
    rho = selection_budget(agreement.privacy, one_ways.plan.rho_budget)
    assert rho is not None
    noisy = _read_one_ways(one_ways.path)
    fp, key = agreed.data.fingerprint, selection_key(agreed.data.fingerprint, agreement)
    run_id = Path(agreed.run_dir).name
    path = registry.measurement_path(key)
    auth = budget_authority.open_authority()
    with registry.lock(), auth.lock():
        events = registry.verified_events()
        if logged_statistic(registry, events, key) is not None:
            return Selected(Proposal.model_validate_json(path.read_bytes()), key, "reused", one_ways)
        reserved = ledger.reservation(events, key) is not None
        found = auth.drawn(key)
        if found is not None:  # selected under the controller's authority (another registry, or a dead run here)
            payload = found[1]
            proposal = Proposal.model_validate_json(payload)
            atomic_write_bytes(path, payload)
            how = "adopted" if reserved else "reused"
            origin = f"registry {found[0].registry_id} run {found[0].run_id}"
            _log(
                registry,
                agreed,
                run_id,
                path,
                payload,
                f"private selection {how} from budget authority {auth.authority_id} (selected once, in {origin}; "
                "no new spend)",
            )
            return Selected(proposal, key, how, one_ways)
        if reserved and path.exists():  # persisted by a run that died before logging it: adopt, never re-select
            payload = path.read_bytes()
            proposal = Proposal.model_validate_json(payload)
            auth.record(key, payload, registry.registry_id(), run_id)
            _log(
                registry, agreed, run_id, path, payload, f"private selection adopted from an interrupted run, rho={rho}"
            )
            return Selected(proposal, key, "adopted", one_ways)
        other = auth.reservation(key) if not reserved else None
        if other is not None:  # its AIM journal (rounds already drawn) is in that registry: only it may go on
            raise RegistryError(
                f"this selection was reserved by an interrupted run in registry {other.registry_id} (run "
                f"{other.run_id}) and never finished",
                budget_authority.location(),
                "propose the draft again in that registry: it continues the selection under its reservation",
            )
        if not reserved:
            ledger.spend_locked(
                registry,
                dataset=agreed.data.name,
                fingerprint=fp,
                statistics={key: rho},
                agreement_sha256=agreed.agreement_sha256,
                run_id=run_id,
                events=events,
                authority=auth,
            )
        data = codes()
        plugin, attrs = generator(agreement.generator.name), agreement.attributes
        ones: list[Clique] = [(a,) for a in attrs]
        sizes = schema.domain(attrs)
        if sel.method == "aim":
            proposal = _aim(registry, key, reserved, agreement, schema, one_ways.path, data, rho)
        else:
            proposal = select_mst(
                agreement.attributes,
                schema.domain(agreement.attributes),
                noisy,
                lambda a, b: marginal_counts(data, schema, (a, b)).astype(np.float64),
                sel,
                rho,
                agreement.limits.max_marginal_cells,
                fits=lambda pairs: (  # the extra pairs keep the model within exact inference's limit
                    plugin.model_cells(attrs, ones + list(pairs), sizes) <= agreement.limits.exact_cells()
                ),
            )
        payload = (proposal.model_dump_json() + "\n").encode()
        auth.record(key, payload, registry.registry_id(), run_id)  # the authority first: every registry sees it
        atomic_write_bytes(path, payload)  # persisted before it is logged or used
        _log(registry, agreed, run_id, path, payload, f"private selection ({proposal.method}) of {fp[:12]}…, rho={rho}")
    return Selected(proposal, key, "drawn", one_ways)


def journal_path(registry: Registry, key: str) -> Path:
    """AIM's round journal beside the selection's proposal: every round's draw, persisted before it is used."""
    return registry.measurement_path(key).with_suffix(JOURNAL_SUFFIX)


def _aim(
    registry: Registry,
    key: str,
    reserved: bool,
    agreement: Agreement,
    schema: Schema,
    one_ways: Path,
    data: pd.DataFrame,
    rho: float,
) -> Proposal:
    """AIM under the selection's reservation; a journal left by an interrupted run (same reservation) is replayed,
    so no round is drawn twice."""
    from sdgov.generators.pgm_mbi import marginal_estimator  # JAX: loaded only when AIM runs
    from sdgov.measurement.marginals import MeasurementSet

    sel = agreement.privacy.selection
    assert sel is not None
    attrs, sizes = agreement.attributes, schema.domain(agreement.attributes)
    plugin = generator(agreement.generator.name)
    ones: list[Clique] = [(a,) for a in attrs]
    journal_file = journal_path(registry, key)
    journal = AimJournal.model_validate_json(journal_file.read_bytes()) if reserved and journal_file.exists() else None
    aim = Aim(
        spec=sel,
        rho=rho,
        max_marginal_cells=agreement.limits.max_marginal_cells,
        max_model_cells=agreement.limits.exact_cells(),
        estimate=marginal_estimator(attrs, sizes, agreement.generator.iterations),
        model_cells=lambda cliques: plugin.model_cells(attrs, ones + list(cliques), sizes),
        journal=journal,
        persist=lambda j: atomic_write_bytes(journal_file, (j.model_dump_json() + "\n").encode()),
    )
    return aim.run(
        attrs,
        sizes,
        MeasurementSet.model_validate_json(one_ways.read_bytes()).measurements,
        lambda clique: marginal_counts(data, schema, clique).astype(np.float64),
    )


def _log(registry: Registry, agreed: Agreed, run_id: str, path: Path, payload: bytes, comment: str) -> None:
    """The proposal (and AIM's round journal, whose noisy tables it rests on) logged as measured."""
    artifacts = {str(path.relative_to(registry.root)): sha256_bytes(payload)}
    journal = path.with_suffix(JOURNAL_SUFFIX)
    if journal.exists():
        artifacts[str(journal.relative_to(registry.root))] = sha256_bytes(journal.read_bytes())
    registry.append_measured_locked(agreed.agreement_sha256, run_id, artifacts, comment)


def _read_one_ways(path: Path) -> dict[str, np.ndarray]:
    from sdgov.measurement.marginals import MeasurementSet

    mset = MeasurementSet.model_validate_json(path.read_bytes())
    return {m.clique[0]: m.array().astype(np.float64) for m in mset.measurements}
