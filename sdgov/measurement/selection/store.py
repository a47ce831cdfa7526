"""Private selection against the registry: the 1-ways through the draw-once store, the selection through the ledger.

The draft agreement (Φ = the 1-way marginals, ``privacy.selection`` declared) is measured like any release
(:func:`sdgov.measurement.store.measure_once`): its 1-ways are drawn once, at the σ the final agreement will ask for
(:func:`sdgov.budget.accounting.plan_privacy` fixes it from the selection share alone), so the release that follows
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

from sdgov.agreement.spec import AgreedPart, Agreement
from sdgov.base.atomic import atomic_write_bytes
from sdgov.base.errors import RegistryError, SpecError
from sdgov.base.hashing import sha256_bytes, sha256_json
from sdgov.contracts import Agreed
from sdgov.data.psi import Measurement
from sdgov.data.schema import Clique, Schema
from sdgov.generators.registry import generator
from sdgov.governance import authority as budget_authority
from sdgov.governance import ledger
from sdgov.governance.site import Site
from sdgov.measurement.marginals import marginal_counts, measure_cliques
from sdgov.measurement.selection.aim import Aim, AimJournal
from sdgov.measurement.selection.model_size import model_cells
from sdgov.measurement.selection.mst import Proposal, select_mst
from sdgov.measurement.store import Outcome, logged_statistic, measure_once
from sdgov.registry.log import Event, Registry

JOURNAL_SUFFIX = ".aim-rounds.json"


Part = str | None  # a split synthesis's part, or None for one model


@dataclass(frozen=True)
class Selection:
    """One model's selection: its proposal, its statistic key in the ledger and how this run came by it."""

    proposal: Proposal
    key: str  # the selection's statistic key in the ledger
    how: str  # "drawn" now; "reused": this draft was selected before, on this dataset; "adopted": persisted by a
    # run that died before logging it (selected once, under that run's reservation)


@dataclass(frozen=True)
class Selected:
    """A draft's selections — one per part of a split synthesis (each on its own records, at its own share of ρ),
    else one under ``None`` — and the 1-ways they were made from."""

    parts: dict[Part, Selection]
    one_ways: Outcome

    @property
    def how(self) -> str:
        """How this run came by the selections: "drawn" if any was drawn now, else "adopted" if any was, else
        "reused"."""
        hows = {s.how for s in self.parts.values()}
        return next(h for h in ("drawn", "adopted", "reused") if h in hows or h == "reused")

    @property
    def proposals(self) -> dict[Part, Proposal]:
        """Each part's proposal (``None``: the one model's)."""
        return {name: s.proposal for name, s in self.parts.items()}


def selection_key(fingerprint: str, agreement: Agreement, records: dict[str, object] | None = None) -> str:
    """dataset content × draft agreement (attributes, selection share, forced and excluded pairs) — × the records
    selected on, for a part of a split synthesis (its agreement is the part's own)."""
    identity: dict[str, object] = {"selection": agreement.sha256(), "dataset": fingerprint}
    if records is not None:
        identity["records"] = records
    return sha256_json(identity)


def check_draft(agreement: Agreement, where: str, method: str | None = None) -> None:
    """A draft for selection: 1-ways only (in every part of a split), a selection declared — by the method asked for
    (``--select``), if any."""
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
            "a draft for private selection lists only 1-way marginals in Φ"
            + (" (in every split part)" if agreement.split is not None else ""),
            where,
            "put Φ's attributes as phi.all_kway with k: 1; pairs you want for sure go in privacy.selection.force",
        )


def selection_units(agreement: Agreement) -> list[tuple[Part, Agreement, dict[str, object] | None]]:
    """What is selected: the draft itself, or each part's own draft of a split synthesis (named, with the records
    it selects on)."""
    split = agreement.split
    if split is None:
        return [(None, agreement, None)]
    return [(p.name, agreement.of_part(p), split.records(p)) for p in split.parts]


def select_once(
    site: Site, agreed: Agreed, agreement: Agreement, schema: Schema, codes: Callable[[], pd.DataFrame]
) -> Selected:
    """Measure the draft's 1-ways (draw-once store, every part's at once), then run each part's selection once
    under the ledger: every selection not drawn before is reserved in one spend before any of them runs."""
    assert agreement.privacy.selection is not None

    def draw(cliques: list[Clique], sigmas: dict[Clique, float], part: AgreedPart | None) -> list[Measurement]:
        return measure_cliques(
            agreement.records_of(None if part is None else part.name, codes()), schema, cliques, sigmas
        )

    one_ways = measure_once(site, agreed, agreement, schema, draw)
    plan = one_ways.plan
    assert plan.rho_budget is not None  # a selection spends a share of a ρ budget (spec validator)
    fp, run_id = agreed.data.fingerprint, Path(agreed.run_dir).name
    units = selection_units(agreement)
    keys = {part: selection_key(fp, ag, records) for part, ag, records in units}
    rhos = {  # each part's selection ρ, at its share (they add up to the split's)
        part: plan.selection_rho if part is None else (plan.part_selection_rho or {}).get(part) for part, _, _ in units
    }
    registry, auth = site.registry, site.authority
    done: dict[Part, Selection] = {}
    with registry.lock(), auth.lock():
        events = registry.verified_events()
        todo: dict[Part, bool] = {}  # part → reserved before (a dead run's reservation: its journal continues)
        for part, _, _ in units:
            found = _settled(registry, auth, agreed, run_id, events, keys[part])
            if found is not None:
                done[part] = found
            else:
                todo[part] = ledger.reservation(events, keys[part]) is not None
        new = {keys[p]: rhos[p] for p, reserved in todo.items() if not reserved}
        if new:  # one ledger check for every part's selection, before any of them runs
            ledger.spend_locked(
                site,
                dataset=agreed.data.name,
                fingerprint=fp,
                statistics={k: float(r or 0.0) for k, r in new.items()},
                agreement_sha256=agreed.agreement_sha256,
                run_id=run_id,
                events=events,
            )
        data = codes() if todo else None
        for part, ag, _ in units:
            if part not in todo:
                continue
            assert data is not None
            key, rho = keys[part], rhos[part]
            assert rho is not None
            ones = _one_ways(one_ways.path, part)
            proposal = _select(registry, key, todo[part], ag, schema, ones, agreement.records_of(part, data), rho)
            payload = (proposal.model_dump_json() + "\n").encode()
            auth.record(key, payload, registry.registry_id(), run_id)  # the authority first: every registry sees it
            path = registry.measurement_path(key)
            atomic_write_bytes(path, payload)  # persisted before it is logged or used
            of = f"{fp[:12]}…" if part is None else f"{fp[:12]}… (split part {part!r})"
            _log(registry, agreed, run_id, path, payload, f"private selection ({proposal.method}) of {of}, rho={rho}")
            done[part] = Selection(proposal, key, "drawn")
    return Selected({part: done[part] for part, _, _ in units}, one_ways)


def _settled(
    registry: Registry, auth: budget_authority.Authority, agreed: Agreed, run_id: str, events: list[Event], key: str
) -> Selection | None:
    """The selection ``key`` if it was made before — logged here (reused), in the controller's authority (another
    registry: copied; a dead run here: adopted), or persisted by a run here that died before logging it (adopted) —
    else None: it is to be made now. A reservation left by a dead run in another registry is refused in one line."""
    path = registry.measurement_path(key)
    if logged_statistic(registry, events, key) is not None:
        return Selection(Proposal.model_validate_json(path.read_bytes()), key, "reused")
    reserved = ledger.reservation(events, key) is not None
    found = auth.drawn(key)
    if found is not None:  # selected under the controller's authority (another registry, or a dead run here)
        payload = found[1]
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
        return Selection(Proposal.model_validate_json(payload), key, how)
    if reserved and path.exists():  # persisted by a run that died before logging it: adopt, never re-select
        payload = path.read_bytes()
        auth.record(key, payload, registry.registry_id(), run_id)
        _log(registry, agreed, run_id, path, payload, "private selection adopted from an interrupted run")
        return Selection(Proposal.model_validate_json(payload), key, "adopted")
    other = auth.reservation(key) if not reserved else None
    if other is not None:  # its AIM journal (rounds already drawn) is in that registry: only it may go on
        raise RegistryError(
            f"this selection was reserved by an interrupted run in registry {other.registry_id} (run "
            f"{other.run_id}) and never finished",
            auth.where,
            "propose the draft again in that registry: it continues the selection under its reservation",
        )
    return None


def _select(
    registry: Registry,
    key: str,
    reserved: bool,
    agreement: Agreement,
    schema: Schema,
    ones: list[Measurement],
    data: pd.DataFrame,
    rho: float,
) -> Proposal:
    """One model's selection (MST or AIM) on ``data`` — a part's records only, for a split — at ``rho``."""
    sel = agreement.privacy.selection
    assert sel is not None
    if sel.method == "aim":
        return _aim(registry, key, reserved, agreement, schema, ones, data, rho)
    plugin, attrs = generator(agreement.generator.name), agreement.attributes
    singles: list[Clique] = [(a,) for a in attrs]
    sizes = schema.domain(attrs)
    count = model_cells(plugin.name, plugin.model_cells)
    return select_mst(
        attrs,
        sizes,
        {m.clique[0]: m.array().astype(np.float64) for m in ones},
        lambda a, b: marginal_counts(data, schema, (a, b)).astype(np.float64),
        sel,
        rho,
        agreement.limits.max_marginal_cells,
        fits=lambda cliques: (  # the extra pairs (and triples) keep the model within the selection's bound
            count(attrs, singles + list(cliques), sizes) <= min(agreement.limits.exact_cells(), sel.model_cells)
        ),
        exact=lambda clique: marginal_counts(data, schema, clique).astype(np.float64),
        one_way_sigma=max((m.sigma or 0.0) for m in ones) or None,  # as drawn (a policy's floor may have raised it)
    )


def journal_path(registry: Registry, key: str) -> Path:
    """AIM's round journal beside the selection's proposal: every round's draw, persisted before it is used."""
    return registry.measurement_path(key).with_suffix(JOURNAL_SUFFIX)


def _aim(
    registry: Registry,
    key: str,
    reserved: bool,
    agreement: Agreement,
    schema: Schema,
    ones: list[Measurement],
    data: pd.DataFrame,
    rho: float,
) -> Proposal:
    """AIM under the selection's reservation; a journal left by an interrupted run (same reservation) is replayed,
    so no round is drawn twice."""
    from sdgov.generators.pgm_mbi import marginal_estimator  # JAX: loaded only when AIM runs

    sel = agreement.privacy.selection
    assert sel is not None
    attrs, sizes = agreement.attributes, schema.domain(agreement.attributes)
    plugin = generator(agreement.generator.name)
    count = model_cells(plugin.name, plugin.model_cells)
    singles: list[Clique] = [(a,) for a in attrs]
    journal_file = journal_path(registry, key)
    journal = AimJournal.model_validate_json(journal_file.read_bytes()) if reserved and journal_file.exists() else None
    aim = Aim(
        spec=sel,
        rho=rho,
        max_marginal_cells=agreement.limits.max_marginal_cells,
        max_model_cells=agreement.limits.exact_cells(),
        estimate=marginal_estimator(attrs, sizes, agreement.generator.iterations),
        model_cells=lambda cliques: count(attrs, singles + list(cliques), sizes),
        journal=journal,
        persist=lambda j: atomic_write_bytes(journal_file, (j.model_dump_json() + "\n").encode()),
    )
    return aim.run(attrs, sizes, ones, lambda clique: marginal_counts(data, schema, clique).astype(np.float64))


def _log(registry: Registry, agreed: Agreed, run_id: str, path: Path, payload: bytes, comment: str) -> None:
    """The proposal (and AIM's round journal, whose noisy tables it rests on) logged as measured."""
    artifacts = {str(path.relative_to(registry.root)): sha256_bytes(payload)}
    journal = path.with_suffix(JOURNAL_SUFFIX)
    if journal.exists():
        artifacts[str(journal.relative_to(registry.root))] = sha256_bytes(journal.read_bytes())
    registry.append_measured_locked(agreed.agreement_sha256, run_id, artifacts, comment)


def _one_ways(path: Path, part: Part) -> list[Measurement]:
    """The noisy 1-ways the selection of ``part`` starts from (a split's ψ holds every part's; its own only)."""
    from sdgov.data.psi import MeasurementSet

    return [m for m in MeasurementSet.model_validate_json(path.read_bytes()).measurements if m.part == part]
