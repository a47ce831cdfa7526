"""The draw-once store of noisy marginals: one draw per statistic per dataset, ever.

A *statistic* is one marginal of one dataset at one noise scale: its key (:func:`statistic_key`) is the
dataset's content fingerprint, the attribute set and σ — nothing the analyst can vary for free (seed, rows,
generator, spec name, the rest of Φ). A part of a split synthesis counts only its own records, so its marginal is
another statistic: its key adds the part's defining filter (split attribute and codes), and an unsplit key is
unchanged. Each is recorded in the controller's budget authority (:mod:`sdgov.governance.authority`, shared by
every registry on the machine) and persisted under the registry (``measurements/<key>.json``) *before* anything
uses it, under the registry lock and the authority's. Any later agreement that asks for the same marginal at the
same σ reuses that noisy table (post-processing: no new noise, no new spend) — in another registry too, which
copies it from the authority and logs the copy, naming the authority and the original draw; the same marginal at
another σ is a new statistic, drawn and charged. Two noisy copies of one statistic would leak more than one, so none is
ever drawn twice. No seed is stored: the noise cannot be drawn again, only read back.

A release's noisy marginals (its ψ, ``measurements.json`` in the run directory) are assembled from the
statistics it uses; its privacy statement beside it (``privacy_statement.json``, :mod:`sdgov.budget.statement`) says
what the release and its dataset have spent, by both accountings — which statistics were drawn now and which reused,
from which earlier run (and registry), the dataset's lifetime ledger before and after over every registry, and
where the dataset was ever measured exactly (from then on its ε is ∞). Exact statistics are recorded in the budget
authority too (never shared: they are measured again each time), so that every registry's statements see them.

The budget ledger (:mod:`sdgov.governance.ledger`) reserves ρ before any noise is drawn; see its docstring for the crash
protocol. :data:`fault_point` is the crash tests' hook (a no-op in production): they install one that kills a run
at each step (``tests/crashing_store.py``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from sdgov.agreement.spec import AgreedPart, Agreement
from sdgov.base.atomic import atomic_write_bytes
from sdgov.base.errors import RegistryError
from sdgov.base.hashing import sha256_bytes, sha256_file, sha256_json
from sdgov.base.model import Frozen
from sdgov.budget.accounting import PrivacyPlan
from sdgov.budget.statement import (
    AuthorityHead,
    Epsilon,
    ExactMeasurement,
    Origin,
    OtherScale,
    PrivacyStatement,
    cumulative_epsilon,
    make_statement,
)
from sdgov.contracts import Agreed
from sdgov.data.psi import Measurement, MeasurementSet
from sdgov.data.schema import Clique, Schema
from sdgov.governance import ledger
from sdgov.governance.authority import Authority
from sdgov.governance.authority_model import head_of
from sdgov.governance.policy import check_release, load_policy, planned
from sdgov.governance.site import Site
from sdgov.registry import commitment
from sdgov.registry.log import Event, Registry

How = Literal["reused", "adopted", "drawn"]  # logged earlier; persisted by an interrupted run; drawn now


class Statistic(Frozen):
    """One noisy marginal as persisted in the store: the table, its axes and σ, and the dataset it counts."""

    fingerprint: str
    attributes: list[str]  # axis order of noisy_counts
    shape: list[int]
    sigma: float
    noisy_counts: list[int]
    records: dict[str, Any] | None = Field(default=None, exclude_if=lambda v: v is None)  # a split part's filter


Unit = tuple[str | None, Clique]  # (split part or None, marginal): one statistic an agreement asks for


def statistic_key(fingerprint: str, clique: Clique, sigma: float, records: dict[str, Any] | None = None) -> str:
    """dataset content × attribute *set* × σ (× the records counted, for a part of a split synthesis): the
    identity of one noisy marginal."""
    identity: dict[str, Any] = {"dataset": fingerprint, "attributes": sorted(clique), "sigma": float(sigma)}
    if records is not None:
        identity["records"] = records
    return sha256_json(identity)


def _records(agreement: Agreement, part: str | None) -> dict[str, Any] | None:
    split = agreement.split
    return None if split is None or part is None else split.records(split.part(part))


def statistic_keys(fingerprint: str, agreement: Agreement, plan: PrivacyPlan) -> dict[Unit, str]:
    """Every statistic of this agreement's plan, by (part, marginal)."""
    return {
        (m.part, m.clique): statistic_key(fingerprint, m.clique, m.sigma, _records(agreement, m.part))
        for m in plan.marginals
    }


def _parts(agreement: Agreement) -> list[AgreedPart | None]:
    return [None] if agreement.split is None else list(agreement.split.parts)


@dataclass(frozen=True)
class FirstDraw:
    """Where a statistic was first drawn (the authority's record, or the event that logged it)."""

    time: str
    run_id: str
    registry_id: str


@dataclass(frozen=True)
class Outcome:
    """What the measure stage did: ψ assembled for this release, its plan, and its privacy statement."""

    path: Path  # measurements.json (ψ) in the run directory
    plan: PrivacyPlan
    statement: PrivacyStatement  # also written as privacy_statement.json beside ψ
    how: dict[str, How]  # statistic key → how this run came by it

    @property
    def reused_all(self) -> bool:
        """True when every statistic was reused from an earlier draw: this run drew no noise and adopted none."""
        return all(h == "reused" for h in self.how.values())


def measure_once(
    site: Site,
    agreed: Agreed,
    agreement: Agreement,
    schema: Schema,
    draw: Callable[[list[Clique], dict[Clique, float], AgreedPart | None], list[Measurement]],
) -> Outcome:
    """ψ for this agreement: every statistic already logged is reused, every statistic drawn under the controller's
    budget authority (in another registry) copied, the rest drawn once — budget reserved first across registries,
    policy checked first. ``draw`` is called (once per part of a split synthesis, else once; for the missing
    cliques only) when something is missing: ``draw(cliques, sigmas, part)`` counts the part's records only."""
    run_id = Path(agreed.run_dir).name
    fp, name, n = agreed.data.fingerprint, agreed.data.name, agreed.data.rows
    registry, auth = site.registry, site.authority
    with registry.lock(), auth.lock():
        site.committer()  # the commitment secret the log commits to (made and logged on first use), before any draw
        policy, policy_sha = load_policy(registry.root)
        limits, entry = policy.limits(fp, name)
        plan = planned(limits, agreement)
        check_release(limits, entry, agreement, plan, n, str(registry.root / "policy.yaml"))
        events = registry.verified_events()  # reuse and spends only from a log whose chain and signatures hold
        ledger.check_policy_logged(registry, events)
        ledger.check_authority(registry, auth, events)  # no figure stated from an authority that cannot prove it
        _import_logged(registry, auth, events)  # what this registry drew before the authority knew it
        keys = statistic_keys(fp, agreement, plan)
        rhos = {keys[(m.part, m.clique)]: m.rho or 0.0 for m in plan.marginals}  # noise 'none': nothing to spend
        logged = {k: e for k in keys.values() if (e := logged_statistic(registry, events, k)) is not None}
        how: dict[str, How] = dict.fromkeys(logged, "reused")
        adopted: dict[str, bytes] = {}  # persisted by an interrupted run under this registry's reservation
        copied: dict[str, bytes] = {}  # drawn under the authority for another registry: copied, never drawn again
        new: dict[str, float] = {}
        for key in keys.values():
            if key in logged:
                continue
            reserved = ledger.reservation(events, key) is not None
            shared = _shared(auth, registry, key, fp, plan.noise)
            if shared is not None:
                if reserved:
                    adopted[key], how[key] = shared, "adopted"
                else:
                    copied[key], how[key] = shared, "reused"
                continue
            payload = _adopt_unlogged(registry.measurement_path(key), fp, reserved, plan.noise)
            if payload is not None:
                adopted[key], how[key] = payload, "adopted"
            elif not reserved and plan.noise != "none" and auth.reservation(key) is None:
                new[key] = rhos[key]  # reserved by a dead run in another registry: drawn under its reservation
        acct_before = ledger.account(site, name, fp, events)
        spend = ledger.spend_locked(
            site,
            dataset=name,
            fingerprint=fp,
            statistics=new,
            agreement_sha256=agreed.agreement_sha256,
            run_id=run_id,
            events=events,
        )
        fault_point("after_spend")
        missing = [u for u, k in keys.items() if k not in logged and k not in adopted and k not in copied]
        persisted: dict[str, bytes] = dict(adopted)
        rid = registry.registry_id()
        if missing:
            drawn: list[tuple[str | None, Measurement]] = []
            for part in _parts(agreement):  # every part drawn before any is persisted
                part_name = None if part is None else part.name
                cliques = [c for p, c in missing if p == part_name]
                if cliques:
                    sigmas = {m.clique: m.sigma for m in plan.marginals if m.part == part_name}
                    drawn += [(part_name, m) for m in draw(cliques, sigmas, part)]
            fault_point("after_draw")
            for part_name, m in drawn:
                key = keys[(part_name, m.clique)]
                stat = Statistic(
                    fingerprint=fp,
                    attributes=list(m.clique),
                    shape=list(m.shape),
                    sigma=m.sigma,
                    noisy_counts=m.noisy_counts,
                    records=_records(agreement, part_name),
                )
                persisted[key] = (stat.model_dump_json() + "\n").encode()
                how[key] = "drawn"
        for key, payload in persisted.items():
            # the authority first: the draw's first persistence, seen by every registry (an exact table too: never
            # shared, but every registry's statements see that the dataset was measured exactly)
            auth.record(key, payload, rid, run_id)
            atomic_write_bytes(registry.measurement_path(key), payload)  # persisted before any use
        if missing:
            fault_point("after_persist")
        if persisted:
            note = f"; {len(adopted)} adopted: persisted by an interrupted run before it was logged" if adopted else ""
            registry.append_measured_locked(
                agreed.agreement_sha256,
                run_id,
                {_name(registry, k): sha256_bytes(p) for k, p in sorted(persisted.items())},
                (
                    f"{len(persisted)} exact marginal(s) of dataset {fp[:12]}… (noise: none, no privacy){note}"
                    if plan.noise == "none"
                    else f"{len(persisted)} noisy marginal(s) of dataset {fp[:12]}…, "
                    f"rho={math.fsum(rhos[k] for k in persisted)}{note}"
                ),
            )
        if copied:
            _copy_in(registry, auth, agreed.agreement_sha256, run_id, fp, copied)
        origins = _origins(auth, rid, keys.values(), logged)
        mset = _assemble(registry, fp, agreement, schema, plan, keys)
    out = Path(agreed.run_dir) / "measurements.json"
    atomic_write_bytes(out, (mset.model_dump_json(indent=None) + "\n").encode())
    statement = _statement(
        registry, auth, agreement, plan, keys, how, origins, acct_before, spend, limits.max_epsilon_per_release
    )
    atomic_write_bytes(Path(agreed.run_dir) / STATEMENT, (statement.model_dump_json(indent=2) + "\n").encode())
    return Outcome(path=out, plan=plan, statement=statement, how=how)


STATEMENT = "privacy_statement.json"
"""The privacy statement's file in the run directory (published with the release, beside ψ)."""


def _import_logged(registry: Registry, auth: Authority, events: list[Event]) -> None:
    """Give the authority this registry's logged spends and noisy statistics it lacks (a registry older than the
    authority, or an authority restored from an older backup), so every other registry counts and reuses them; the
    files were checked against the log by :meth:`~sdgov.registry.log.Registry.verified_events`."""
    ledger.import_spends(auth, events, registry)
    known = auth.keys()
    rid = registry.registry_id()
    for e in events:
        for name in e.artifacts if e.event == "measured" else ():
            key = Path(name).stem  # a statistic's key (hex); an AIM round journal's stem has a suffix: not shared
            if not name.startswith("measurements/") or not name.endswith(".json") or "." in key or key in known:
                continue
            payload = (registry.root / name).read_bytes()
            try:
                exact = Statistic.model_validate_json(payload).sigma == 0  # noise: none, exact counts: not a draw
            except ValueError:  # a selection's proposal: not a table, shared all the same
                exact = False
            if not exact:
                auth.record(key, payload, rid, e.run_id, e.time)
            known.add(key)


def _shared(auth: Authority, registry: Registry, key: str, fingerprint: str, noise: str) -> bytes | None:
    """The statistic as drawn under the controller's authority (by another registry, or by an interrupted run of
    this one), or None. A file this registry persisted but never logged must be those very bytes."""
    found = auth.drawn(key) if noise != "none" else None  # exact tables are not draws: measured again, for free
    if found is None:
        return None
    _, payload = found
    if Statistic.model_validate_json(payload).fingerprint != fingerprint:
        raise RegistryError(
            "the budget authority holds another dataset's statistic under this key",
            auth.where,
            "restore the controller's budget authority from its backup",
        )
    path = registry.measurement_path(key)
    if path.exists() and path.read_bytes() != payload:
        raise RegistryError(
            "an unlogged measurement file differs from the statistic the budget authority holds for it",
            str(path),
            "inspect it and move it away deliberately: the authority's draw is the one in use",
        )
    return payload


def _copy_in(
    registry: Registry, auth: Authority, agreement_sha256: str, run_id: str, fingerprint: str, copied: dict[str, bytes]
) -> None:
    """Statistics another registry drew under the controller's authority, persisted here as this registry's and
    logged as ``measured``, naming the authority and each original draw: no new noise, no new spend."""
    origins = []
    for key, payload in sorted(copied.items()):
        atomic_write_bytes(registry.measurement_path(key), payload)
        found = auth.drawn(key)
        assert found is not None
        origins.append(f"{key[:12]}… drawn in registry {found[0].registry_id} run {found[0].run_id} {found[0].time}")
    registry.append_measured_locked(
        agreement_sha256,
        run_id,
        {_name(registry, k): sha256_bytes(p) for k, p in sorted(copied.items())},
        f"{len(copied)} noisy marginal(s) of dataset {fingerprint[:12]}… reused from budget authority "
        f"{auth.authority_id} (no new noise, no new spend): " + "; ".join(origins),
    )


def _origins(auth: Authority, registry_id: str, keys: Iterable[str], logged: dict[str, Event]) -> dict[str, FirstDraw]:
    """Where each statistic was first drawn: the authority's record, else (drawn before the authority knew it) the
    event that logged it here."""
    out: dict[str, FirstDraw] = {}
    for key in keys:
        found = auth.drawn(key)
        if found is not None:
            out[key] = FirstDraw(time=found[0].time, run_id=found[0].run_id, registry_id=found[0].registry_id)
        elif key in logged:
            out[key] = FirstDraw(time=logged[key].time, run_id=logged[key].run_id, registry_id=registry_id)
    return out


def _name(registry: Registry, key: str) -> str:
    return str(registry.measurement_path(key).relative_to(registry.root))


def read_statistic(registry: Registry, key: str, clique: Clique, part: str | None = None) -> Measurement:
    """A stored statistic as a :class:`Measurement` with its axes in ``clique``'s order."""
    stat = Statistic.model_validate_json(registry.measurement_path(key).read_bytes())
    table = np.asarray(stat.noisy_counts, dtype=np.int64).reshape(stat.shape)
    table = np.transpose(table, [stat.attributes.index(a) for a in clique])
    return Measurement(
        clique=clique,
        shape=table.shape,
        sigma=stat.sigma,
        noisy_counts=table.ravel().tolist(),
        statistic=key,
        part=part,
    )


def _assemble(
    registry: Registry,
    fingerprint: str,
    agreement: Agreement,
    schema: Schema,
    plan: PrivacyPlan,
    keys: dict[Unit, str],
    create_secret: bool = True,
) -> MeasurementSet:
    """ψ as published: the dataset and each statistic named by their keyed commitments, never by the unkeyed
    fingerprint or store key (each a function of the records alone: an oracle for a record the reader lacks).
    The measure stage makes the registry's commitment secret if it has none; a re-export never does."""
    commit = commitment.registry_committer(registry, create=create_secret)
    return MeasurementSet(
        agreement_sha256=agreement.sha256(),
        dataset_fingerprint=commit("fingerprint", fingerprint),
        schema_sha256=agreement.schema_sha256,
        attributes=agreement.attributes,
        domain=schema.domain(agreement.attributes),
        noise=plan.noise,
        measurements=[
            read_statistic(registry, keys[(name, c)], c, name).model_copy(
                update={"statistic": commit("statistic", keys[(name, c)])}
            )
            for part in _parts(agreement)
            for name in [None if part is None else part.name]
            for c in (agreement.cliques if part is None else part.cliques)
        ],
    )


def logged_statistic(registry: Registry, events: list[Event], key: str) -> Event | None:
    """The log event of the draw of statistic ``key``, after checking the persisted file still has the logged
    hash; None if it was never drawn."""
    name = _name(registry, key)
    logged = next((e for e in events if e.event == "measured" and name in e.artifacts), None)
    if logged is None:
        return None
    path = registry.measurement_path(key)
    if not path.exists() or sha256_file(path) != logged.artifacts[name]:
        raise RegistryError(
            "persisted measurement does not match the one logged when it was drawn",
            str(path),
            "restore it from DVC/backup; never re-draw noise for the same statistic",
        )
    return logged


def assemble_logged(
    registry: Registry, fingerprint: str, name: str, agreement: Agreement, schema: Schema, where: str
) -> MeasurementSet:
    """ψ from statistics already drawn (``sdgov stage measure``): never draws; RegistryError if one is missing."""
    policy, _ = load_policy(registry.root)
    limits, _ = policy.limits(fingerprint, name)
    plan = planned(limits, agreement)
    events = registry.verified_events()
    keys = statistic_keys(fingerprint, agreement, plan)
    if any(logged_statistic(registry, events, k) is None for k in keys.values()):
        raise RegistryError(
            f"no noisy marginals were drawn for this agreement and data in registry {registry.root}",
            where,
            "run the governed release first ('sdgov release --spec ...' or "
            "'sdgov propose'): noise is drawn only there, once, under the budget ledger",
        )
    return _assemble(registry, fingerprint, agreement, schema, plan, keys, create_secret=False)


def _statement(
    registry: Registry,
    auth: Authority,
    agreement: Agreement,
    plan: PrivacyPlan,
    keys: dict[Unit, str],
    how: dict[str, How],
    origins: dict[str, FirstDraw],
    before: ledger.Account,
    spend: ledger.Spend | None,
    max_epsilon_per_release: float,
) -> PrivacyStatement:
    """The release's privacy statement: its plan's figures, and the dataset's account as this release leaves it — its
    account with the controller's budget authority, over every registry — with where each statistic came from."""
    # this release: the statistics drawn for it — now, or by an interrupted run of it (adopted, or reserved and
    # drawn now); everything else the account holds was spent before
    fresh = [m.rho or 0.0 for m in plan.marginals if how.get(keys[(m.part, m.clique)]) in ("drawn", "adopted")]
    total = before.spent_rho + (spend.rho if spend is not None else 0.0)
    used_by = releases_using(registry, set(keys.values()))
    scales = other_scales(registry, before.fingerprint, set(keys.values()))
    this_registry = registry.registry_id()
    commit = commitment.registry_committer(registry)  # the statement is published: no unkeyed hash
    stats: list[Origin] = []
    for m in plan.marginals:
        key = keys[(m.part, m.clique)]
        src = origins.get(key)
        stats.append(
            Origin(
                part=m.part,
                attributes=list(m.clique),
                sigma=m.sigma,
                rho=None if plan.noise == "none" else m.rho,
                statistic=commit("statistic", key),
                how=how.get(key, "drawn"),
                measured_at=src.time if src else None,
                measured_in_run=src.run_id if src else None,
                # another registry's draw, copied in through the authority (None: drawn in this registry)
                measured_in_registry=src.registry_id if src and src.registry_id != this_registry else None,
                earlier_releases=used_by.get(key, []),
                other_sigmas=scales.get((frozenset(m.clique), sha256_json(_records(agreement, m.part))), []),
            )
        )
    spends = [*before.spends, *([spend] if spend else [])]
    exact = exact_measurements(registry, auth, before.fingerprint)
    # a draft's private selection spends right after its 1-ways (and a proposed spec's release finds that spend in
    # the account): no PLD of discrete Gaussians covers the account, so none is computed (~1.5 CPU s, issue 27)
    selecting = agreement.privacy.selection is not None
    cumulative = dataset_epsilon(registry, auth, spends, total, plan.delta, with_pld=not selecting, exact=bool(exact))
    return make_statement(
        plan,
        dataset=before.dataset,
        fingerprint_hmac=commit("fingerprint", before.fingerprint),
        authority=auth.authority_id,
        # the authority's chain head the cumulative figures were read at: what proves them (the registry's log
        # mirrors it at each charge, and refuses an authority that lacks it); its hash covers rows naming the data's
        # fingerprint, so it is published as a keyed commitment, which the controller opens for an auditor
        authority_head=None
        if (head := head_of(auth.authority_id, auth.rows())) is None
        else AuthorityHead(authority=head.authority, seq=head.seq, hash_hmac=commit("authority_head", head.hash)),
        registries=len({s.registry_id for s in spends}) or 1,
        spent_rho=math.fsum(fresh),
        spent_after_rho=total,
        lifetime_rho=before.lifetime_rho,
        policy_entry=before.policy_entry,
        policy_sha256=before.policy_sha256,
        max_epsilon_per_release=max_epsilon_per_release,
        cumulative=cumulative,
        exact_measurements=exact,
        statistics=stats,
        earlier_releases_sharing=sorted({r for key in keys.values() for r in used_by.get(key, [])}),
    )


def dataset_epsilon(
    registry: Registry,
    auth: Authority,
    spends: list[ledger.Spend],
    total_rho: float,
    delta: float | None,
    with_pld: bool = True,
    exact: bool = False,
) -> Epsilon:
    """The dataset's cumulative ε at ``delta`` over every statistic its account holds (every release in every
    registry of the controller, and any run not released: drawn noise is kept and counts): the zCDP bound of the
    account's ρ, and the privacy-loss-distribution bound of all its discrete Gaussians, each counted once (a
    statistic is drawn once, and reused for free); ∞ when the dataset was ever measured exactly (``exact``). No PLD
    figure when a spend is not a persisted Gaussian marginal (private selection, a legacy or an interrupted spend),
    or ``with_pld`` is false (an agreement with a private selection: its spend is in the account, or follows this
    one): the zCDP bound alone covers it."""
    if exact or delta is None or not with_pld:
        return cumulative_epsilon(total_rho, None, delta, exact)
    sigmas: list[float] = []
    gaussian = True
    for key in dict.fromkeys(k for s in spends for k in s.statistics):
        found = auth.drawn(key)
        try:
            payload = found[1] if found is not None else registry.measurement_path(key).read_bytes()
            sigmas.append(Statistic.model_validate_json(payload).sigma)
        except (OSError, ValueError):  # a selection's proposal, or never persisted
            gaussian = False
    return cumulative_epsilon(total_rho, sigmas if gaussian else None, delta, exact)


def account_privacy(
    site: Site, account: ledger.Account, delta: float | None
) -> tuple[Epsilon, list[ExactMeasurement], list[tuple[str, str, PrivacyStatement]]]:
    """What ``sdgov budget`` states of a dataset's account now (every release, and any run not released): its ε at
    ``delta`` by both accountings — computed as the measure stage computes a statement's cumulative ε — where it
    was measured exactly, and this registry's releases of it with their statements, as (release id, time, statement)."""
    registry, auth = site.registry, site.authority
    exact = exact_measurements(registry, auth, account.fingerprint)
    epsilon = dataset_epsilon(registry, auth, account.spends, account.spent_rho, delta, exact=bool(exact))
    try:  # the statements name the dataset by its keyed commitment
        mine: str | None = commitment.registry_committer(registry, create=False)("fingerprint", account.fingerprint)
    except RegistryError:  # no secret here: by its name label
        mine = None
    releases = []
    for r in registry.releases():
        path = Path(r["path"]) / "artifacts" / STATEMENT
        if path.is_file():
            s = PrivacyStatement.model_validate_json(path.read_bytes())
            if s.fingerprint_hmac == mine or (mine is None and s.dataset == account.dataset):
                releases.append((str(r["release_id"]), str(r["time"]), s))
    return epsilon, exact, releases


def exact_measurements(registry: Registry, auth: Authority, fingerprint: str) -> list[ExactMeasurement]:
    """Where this dataset's statistics were ever measured exactly (``noise: none``), oldest first: in any registry
    of the controller (the budget authority records exact tables too, charging nothing) or in this registry's log
    (an exact measurement made before the authority recorded them). From the first, the dataset's ε is ∞."""
    found: dict[tuple[str, str], ExactMeasurement] = {}
    for key in sorted(auth.keys()):
        if auth.reservation(key) is not None:  # charged: a noisy draw
            continue
        drawn = auth.drawn(key)
        if drawn is None or not _exact_of(drawn[1], fingerprint):
            continue
        d = drawn[0]
        found.setdefault(
            (d.registry_id, d.run_id), ExactMeasurement(time=d.time, run_id=d.run_id, registry_id=d.registry_id)
        )
    rid = registry.registry_id()
    for e in registry.verified_events():
        if e.event != "measured" or "(noise: none" not in e.comment or (rid, e.run_id) in found:
            continue
        for name in e.artifacts:
            path = registry.root / name
            if name.startswith("measurements/") and path.is_file() and _exact_of(path.read_bytes(), fingerprint):
                found[(rid, e.run_id)] = ExactMeasurement(time=e.time, run_id=e.run_id, registry_id=rid)
                break
    return sorted(found.values(), key=lambda x: x.time)


def _exact_of(payload: bytes, fingerprint: str) -> bool:
    """Whether a stored statistic is an exact table (σ = 0) of this dataset."""
    try:
        stat = Statistic.model_validate_json(payload)
    except ValueError:  # a selection's proposal: not a table
        return False
    return stat.sigma == 0 and stat.fingerprint == fingerprint


def other_scales(
    registry: Registry, fingerprint: str, exclude: set[str]
) -> dict[tuple[frozenset[str], str], list[OtherScale]]:
    """(attribute set, hash of the records counted) → every *other* noise scale it was measured at on this dataset
    (σ, when, which run): the same table at two scales is two measurements, and both count in the lifetime ρ."""
    out: dict[tuple[frozenset[str], str], list[OtherScale]] = {}
    for e in registry.verified_events():
        if e.event != "measured":
            continue
        for name in e.artifacts:
            key = Path(name).stem
            path = registry.root / name
            if key in exclude or not name.startswith("measurements/") or not path.is_file():
                continue
            try:
                stat = Statistic.model_validate_json(path.read_bytes())
            except ValueError:  # a measurement persisted before per-statistic keys: not one table
                continue
            if stat.fingerprint == fingerprint:
                out.setdefault((frozenset(stat.attributes), sha256_json(stat.records)), []).append(
                    OtherScale(sigma=stat.sigma, measured_at=e.time, measured_in_run=e.run_id)
                )
    return out


def releases_using(registry: Registry, keys: set[str]) -> dict[str, list[str]]:
    """Statistic key → the published releases whose ψ contains it (read from their immutable artifacts, which name
    it by its commitment; releases published before commitments, by the key itself)."""
    commit = commitment.registry_committer(registry)
    named = {commit("statistic", k): k for k in keys} | {k: k for k in keys}
    out: dict[str, list[str]] = {}
    for r in registry.releases():
        path = Path(r["path"]) / "artifacts" / "measurements.json"
        if not path.is_file():
            continue
        for m in json.loads(path.read_text()).get("measurements", []):
            if m.get("statistic") in named:
                out.setdefault(named[m["statistic"]], []).append(r["release_id"])
    return out


def _adopt_unlogged(path: Path, fingerprint: str, reserved_before: bool, noise: str) -> bytes | None:
    """A statistic a run persisted (atomically, under the lock) but did not live to log.

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
        stat = Statistic.model_validate_json(payload)
    except ValueError:
        raise RegistryError(
            "an unlogged, unreadable measurement file is in the way",
            str(path),
            "inspect it and move it away deliberately",
        ) from None
    if stat.fingerprint != fingerprint:
        raise RegistryError(
            "an unlogged measurement of a different dataset is in the way",
            str(path),
            "inspect it and move it away deliberately",
        )
    return payload


def _no_fault(name: str) -> None:
    """Production: every step of :func:`measure_once` passes."""


FaultHook = Callable[[str], None]
fault_point: FaultHook = _no_fault
"""Called with each step's name (``after_spend``, ``after_draw``, ``after_persist``): the crash tests install a hook
that stops the process there (:mod:`tests.crashing_store`); production never replaces it."""
