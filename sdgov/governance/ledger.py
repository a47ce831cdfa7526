"""The privacy-budget ledger: one lifetime zCDP account per confidential dataset, spends composed by addition, over
every registry the controller runs.

The account belongs to the *content* of the data (:mod:`sdgov.data.fingerprint`), not to a file, a name or a
registry: renaming the dataset, re-encoding its file or publishing in a new registry opens no new account. The
declared name is a label; a spend still counts against every dataset sharing its name as well (a new version of
the data under the same name mostly describes the same people), so the link by name can only add spends, never
hide one.

**One budget per controller.** The account lives in the controller's budget authority
(:mod:`sdgov.governance.authority`: ``$SDGOV_AUTHORITY``, an embedded SQLite file by default), shared by every
registry on the machine, and so do the statistics drawn on the dataset: a second registry asking a statistic
already drawn copies it (no new noise, no new spend), and a new statistic is checked against the lifetime ρ over
the charges of *all* registries, then charged, in one authority transaction. A new registry is not a new budget.
The authority is the check's source of truth; :func:`account` adds the registry's own logged spends the authority
lacks (a registry older than the authority, or an authority restored from an older backup), and every spend
imports them first, so the account never shrinks below what a log records.

The lifetime budget is the controller's, and the account's: set in the authority by the account's first charge from
the spending registry's ``policy.yaml`` (:mod:`sdgov.governance.policy`), bounded by every spending registry's policy
(a lower one is stricter; a higher one is refused, :mod:`sdgov.governance.lifetime`), raised or lowered only by the
controller's explicit act (:func:`set_lifetime`, ``sdgov budget lifetime``) or the policy change of the registry that
set it; each setting is logged in the registry it is made through (``budget_lifetime_changed``). Without a policy
nothing is spent. Each registry's hash-chained log records its spends as ``budget_spent`` events,
one per run that draws new noise, naming every statistic it reserves (:func:`sdgov.measurement.store.statistic_key`:
dataset × marginal × σ, and a split synthesis's part filter), its ρ, the account before and after across all
registries, and the authority's charge; ρ composes by addition (zCDP) over every statistic ever drawn on the
dataset; a statistic already drawn — in this registry or any other — is reused and spends nothing.

Every registry view is computed from :meth:`~sdgov.registry.log.Registry.verified_events` only: a log whose chain
or signatures fail (a deleted or shrunk ``budget_spent``) refuses every spend with one line
(:class:`~sdgov.registry.log.LogBroken`). The policy's sha256 is logged with each spend, and a spend is refused while
``policy.yaml`` differs from the hash last logged (a lifetime budget raised by editing the file).

Protocol (sdgov/measurement/store.py, under the registry lock and then the authority's lock, so concurrent runs —
in one registry or several — cannot overspend nor draw one statistic twice):

1. statistics persisted *and* logged in this registry → reused, spend nothing; drawn under the authority by
   another registry → copied in (logged ``measured``, naming the authority and the original draw), spend nothing;
2. the rest: those a dead run reserved (in the authority or this log) are drawn (or adopted) under that
   reservation; for the others the budget is checked across registries — refused (``budget_refused`` logged,
   :class:`~sdgov.base.errors.BudgetError`) *before any noise is drawn* — and charged in the authority, then one
   ``budget_spent`` is appended (fsynced) for all of them;
3. draw, record each noisy marginal in the authority (its first persistence), persist it in the registry
   atomically, log ``measured``.

A crash between 2 and 3 leaves a spend and no measurement: the noise drawn in the dead process was never
persisted nor seen, so the re-run draws it (once) under the existing spend — no second spend. A crash after
the authority recorded a draw leaves it there: the re-run copies it (never re-draws). A file persisted in the
registry but not logged is adopted as drawn — but only because a reservation for its key precedes it; an unlogged
file with no reservation was not drawn under the ledger and is refused. Either way the ledger shows one spend.
"""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdgov.base.clock import utcnow
from sdgov.base.errors import BudgetError, SdgovError
from sdgov.base.model import Frozen
from sdgov.base.settings import AUTHORITY
from sdgov.governance.approvers import Approver
from sdgov.governance.authority import Authority, Charge, Lifetime, LifetimeAbove, Overspend
from sdgov.governance.authority_model import AuthorityBroken, Head, LifetimeUnset, mirror_problems
from sdgov.governance.controller import check_controller_files, controller_signer
from sdgov.governance.lifetime import COMMAND, LIFETIME, in_force, own_raise, refusal, unset
from sdgov.governance.policy import POLICY_FILE, Policy, load_policy, policy_path
from sdgov.governance.site import Site
from sdgov.identity.keys import key_fingerprint, verifies
from sdgov.identity.statements import LifetimeStatement, encode_statement, signed_bytes
from sdgov.registry.log import policy_problems  # the registry checks the policy hash the ledger logs

if TYPE_CHECKING:
    from sdgov.registry.key import Signer
    from sdgov.registry.log import Event, Registry

SPENT = "budget_spent"
REFUSED = "budget_refused"
TOLERANCE = 1e-9  # relative: float sums of ρ must not refuse an exact fit


class Spend(Frozen):
    seq: int  # the registry log's sequence number, or the authority's order for a charge made in another registry
    time: str
    dataset: str
    fingerprint: str
    rho: float
    statistics: dict[str, float]  # statistic key → its ρ
    agreement_sha256: str
    run_id: str
    registry_id: str = ""
    ref: str = ""  # the authority's charge; '<registry id>:<event hash>' for a spend only a registry log records


class Account(Frozen):
    """What a dataset has spent and may still spend."""

    dataset: str
    fingerprint: str
    lifetime_rho: float
    spent_rho: float
    remaining_rho: float
    spends: list[Spend]  # every registry's, the authority's first
    policy_entry: str  # which part of policy.yaml bounds the lifetime ('defaults' or 'datasets.<key>')
    policy_sha256: str
    registries: int = 1  # how many registries have spent on the dataset
    policy_lifetime_rho: float = 0.0  # what this registry's policy states
    authority_lifetime: Lifetime | None = None  # the account's lifetime in the authority, and where it was set


def spend_of(e: Event, registry_id: str = "") -> Spend | None:
    """The spend a ``budget_spent`` event records, or None for any other event; a legacy spend counts, its file
    hash standing in for the fingerprint and its measurement key for the statistics."""
    if e.event != SPENT:
        return None
    d = json.loads(e.comment)
    # spends logged before statistics were keyed by content (one per agreement × file hash) still
    # count: their file hash stands in for the fingerprint, their measurement key for the statistics
    statistics = d.get("statistics") or {d.get("measurement_key", f"legacy-{e.seq}"): d["rho"]}
    return Spend(
        seq=e.seq,
        time=e.time,
        dataset=d["dataset"],
        fingerprint=d.get("fingerprint") or d.get("dataset_sha256", ""),
        rho=float(d["rho"]),
        statistics={k: float(v) for k, v in statistics.items()},
        agreement_sha256=e.agreement_sha256,
        run_id=e.run_id,
        registry_id=registry_id,
        ref=d.get("authority_charge") or f"{registry_id}:{e.hash}",
    )


def spends(events: list[Event]) -> list[Spend]:
    """Every spend recorded in ``events`` (one registry's log, its genesis first), in log order."""
    rid = events[0].artifacts.get("registry_id", "") if events else ""
    return [s for e in events if (s := spend_of(e, rid)) is not None]


def _spend(c: Charge) -> Spend:
    """An authority charge as a spend of the account."""
    return Spend(
        seq=c.seq,
        time=c.time,
        dataset=c.dataset,
        fingerprint=c.fingerprint,
        rho=c.rho,
        statistics=c.statistics,
        agreement_sha256=c.agreement_sha256,
        run_id=c.run_id,
        registry_id=c.registry_id,
        ref=c.ref,
    )


def _mine(events: list[Event], dataset: str, fingerprint: str) -> list[Spend]:
    return [s for s in spends(events) if s.fingerprint == fingerprint or s.dataset == dataset]


def account(site: Site, dataset: str, fingerprint: str, events: list[Event] | None = None) -> Account:
    """The dataset's account under the site registry's policy (PolicyError when it has none): every charge the
    controller's authority holds, from every registry, plus this registry's logged spends it lacks."""
    registry, authority = site.registry, site.authority
    events = registry.verified_events() if events is None else events
    policy, policy_sha = load_policy(registry.root)
    limits, entry = policy.limits(fingerprint, dataset)
    charged = [_spend(c) for c in authority.charges(fingerprint, dataset)]
    refs = {s.ref for s in charged}
    mine = charged + [s for s in _mine(events, dataset, fingerprint) if s.ref not in refs]
    spent = math.fsum(s.rho for s in mine)
    held = authority.lifetime(fingerprint, dataset)
    lifetime = in_force(held, limits.lifetime_rho, registry.registry_id())
    return Account(
        dataset=dataset,
        fingerprint=fingerprint,
        lifetime_rho=lifetime,
        spent_rho=spent,
        remaining_rho=max(0.0, lifetime - spent),
        spends=mine,
        policy_entry=entry,
        policy_sha256=policy_sha,
        registries=len({s.registry_id for s in mine}),
        policy_lifetime_rho=limits.lifetime_rho,
        authority_lifetime=held,
    )


def import_spends(authority: Authority, events: list[Event], registry: Registry) -> None:
    """Give the authority this registry's logged spends from before the authority it lacks (idempotent; chained,
    signed by ``signer``): a registry older than the authority still counts for every other registry. A spend the
    log records as charged in an authority is never re-imported: an authority that lacks it was reset, swapped or
    had rows deleted, and :func:`check_authority` refuses to spend on it."""
    legacy = [
        Charge(
            ref=s.ref,
            time=s.time,
            dataset=s.dataset,
            fingerprint=s.fingerprint,
            rho=s.rho,
            statistics=s.statistics,
            agreement_sha256=s.agreement_sha256,
            run_id=s.run_id,
            registry_id=s.registry_id,
        )
        for s in spends(events)
        if ":" in s.ref  # '<registry id>:<event hash>': logged before the authority (its charges are uuids)
    ]
    if legacy:
        authority.import_charges(legacy, registry.signer())


def mirrored(events: list[Event]) -> tuple[Head | None, dict[str, str]]:
    """What this registry's log mirrors of the authority it charged: the chain's head after its last charge or
    setting, and every charge it logged (ref → the authority's id)."""
    head: Head | None = None
    charged: dict[str, str] = {}
    for e in events:
        if e.event not in (SPENT, LIFETIME):
            continue
        d = json.loads(e.comment)
        if isinstance(d.get("authority_head"), dict):
            head = Head.model_validate(d["authority_head"])
        if e.event == SPENT and d.get("authority_charge") and d.get("authority"):
            charged[d["authority_charge"]] = d["authority"]
    return head, charged


def authority_problems(authority: Authority, events: list[Event]) -> list[str]:
    """Why the authority cannot prove this registry's figures: it is not the one the log charged (a swap, a
    reset), it lacks a row or a charge the log mirrors (rows deleted, rolled back), or its chain fails."""
    head, charged = mirrored(events)
    if head is None and not charged:
        return authority.verify()
    identity = authority.identity()
    rows = authority.rows() if identity is not None else []
    return mirror_problems(identity, rows, head, charged) or authority.verify()


def check_authority(registry: Registry, authority: Authority, events: list[Event]) -> None:
    """Refuse (logged ``budget_refused``, one line) to spend, or to state a cumulative figure, on an authority that
    cannot prove this registry's spends (:func:`authority_problems`)."""
    problems = authority_problems(authority, events)
    if not problems:
        return
    registry.append_locked(
        REFUSED, "sdgov", "system", decision="reject", comment=json.dumps({"authority_problem": problems[0]})
    )
    raise AuthorityBroken(
        f"{problems[0]}: the budget authority cannot prove this registry's spends; nothing spent or drawn",
        authority.where,
        f"point ${AUTHORITY} at the controller's authority, or restore it from its backup",
    )


def reservation(events: list[Event], key: str) -> Spend | None:
    """The spend already recorded for this statistic (a run reserved it, and perhaps died), if any."""
    return next((s for s in spends(events) if key in s.statistics), None)


def spend_locked(
    site: Site,
    *,
    dataset: str,
    fingerprint: str,
    statistics: dict[str, float],
    agreement_sha256: str,
    run_id: str,
    events: list[Event],
) -> Spend | None:
    """Reserve the ρ of new statistics (key → ρ) in the controller's authority, checked against the lifetime ρ over
    every registry's charges, or refuse them all. Call with the registry lock and the authority's lock held (the
    site's authority; its lock is re-entrant), before any draw, with only
    statistics no earlier spend reserved and ``events`` the log as verified under that same lock
    (:meth:`~sdgov.registry.log.Registry.verified_events`: verifying every signature again would find the same
    log). ``None`` when there is nothing to spend."""
    if not statistics:
        return None
    registry, authority = site.registry, site.authority
    with authority.lock():
        return _spend_locked(registry, dataset, fingerprint, statistics, agreement_sha256, run_id, events, authority)


def _spend_locked(
    registry: Registry,
    dataset: str,
    fingerprint: str,
    statistics: dict[str, float],
    agreement_sha256: str,
    run_id: str,
    events: list[Event],
    authority: Authority,
) -> Spend | None:
    check_policy_logged(registry, events)
    in_force = check_controller_files(registry, events)  # the rest of what verify checks: controller files, statements
    check_authority(registry, authority, events)  # an authority that lacks what this log mirrors: no spend
    governs = in_force is not None  # a registry with approvers in force governs an authority nobody governs yet
    policy, policy_sha = load_policy(registry.root)
    limits, entry = policy.limits(fingerprint, dataset)
    signer = registry.signer()
    import_spends(authority, events, registry)  # this registry's spends from before the authority count first
    rho = math.fsum(statistics.values())
    charge = Charge(
        ref=uuid.uuid4().hex,
        time=utcnow(),
        dataset=dataset,
        fingerprint=fingerprint,
        rho=rho,
        statistics=statistics,
        agreement_sha256=agreement_sha256,
        run_id=run_id,
        registry_id=registry.registry_id(),
    )
    artifacts = {"dataset": fingerprint, POLICY_FILE: policy_sha}
    source = f"{POLICY_FILE} {entry}"
    held = authority.lifetime(fingerprint, dataset)
    if own_raise(held, limits.lifetime_rho, charge.registry_id):  # its own signed policy change: recorded, logged
        pair = [(fingerprint, dataset)]
        _set_locked(registry, authority, policy, policy_sha, pair, limits.lifetime_rho, source, signer, governs)
    try:
        stored, before, head = authority.charge(charge, limits.lifetime_rho, source, signer, governs)
    except (Overspend, LifetimeAbove, LifetimeUnset) as exc:
        over = exc.before if isinstance(exc, Overspend) else authority.charges(fingerprint, dataset)
        spent, n = math.fsum(c.rho for c in over), len(over)
        regs = len({c.registry_id for c in over})
        lifetime = (
            exc.lifetime_rho
            if isinstance(exc, Overspend)
            else exc.account.lifetime_rho
            if isinstance(exc, LifetimeAbove)
            else 0.0
        )
        detail = _detail(dataset, fingerprint, rho, statistics, spent, lifetime, entry, authority, regs)
        registry.append_locked(
            REFUSED,
            "sdgov",
            "system",
            agreement_sha256=agreement_sha256,
            run_id=run_id,
            decision="reject",
            artifacts=artifacts,
            comment=json.dumps(detail, sort_keys=True),
        )
        refused = (
            refusal(dataset, exc.account, exc.policy_rho, entry)
            if isinstance(exc, LifetimeAbove)
            else unset(dataset, exc.governing)
            if isinstance(exc, LifetimeUnset)
            else BudgetError(
                f"privacy budget exceeded for dataset {dataset!r} over this controller's registries: ρ={spent:.6g} of "
                f"its lifetime ρ={lifetime:.6g} spent ({n} spend(s) in {regs} registr{'y' if regs == 1 else 'ies'}), "
                f"{max(0.0, lifetime - spent):.6g} left, this release needs ρ={rho:.6g} for {len(statistics)} "
                "new statistic(s). Refused before any noise was drawn",
                f"{policy_path(registry.root)}: {entry}",
                "lower this agreement's budget, or ask the data controller to raise the lifetime budget",
            )
        )
        refused.logged = True  # budget_refused, above
        raise refused from None
    spent = math.fsum(c.rho for c in before)
    regs = len({c.registry_id for c in [*before, stored]})
    assert stored.lifetime_rho is not None  # checked against
    detail = _detail(dataset, fingerprint, rho, statistics, spent, stored.lifetime_rho, entry, authority, regs)
    e = registry.append_locked(
        SPENT,
        "sdgov",
        "system",
        agreement_sha256=agreement_sha256,
        run_id=run_id,
        artifacts=artifacts,
        comment=json.dumps(
            {**detail, "authority_charge": stored.ref, "authority_head": head.model_dump()}, sort_keys=True
        ),
    )
    return spend_of(e, registry.registry_id())


def set_lifetime(
    site: Site,
    dataset: str,
    rho: float,
    signer: str | None = None,
    key: str | Path | None = None,
) -> list[Lifetime]:
    """``sdgov budget lifetime``: the controller sets the lifetime of every account known by ``dataset`` (a name
    label or a fingerprint) through this registry — recorded in the authority (when, through which registry) and
    logged here (``budget_lifetime_changed``). A controller of the approvers registry in force signs each setting
    (``signer``, ``key``: a :class:`~sdgov.identity.statements.LifetimeStatement` in the event, re-checked by
    ``sdgov registry verify``), through the registry that governs the authority (this one, if nobody governs it
    yet). Refused (one line, nothing written) in a sandbox registry (no approvers registry: never unsigned), through
    a registry that does not govern the authority, while the registry fails verification or its controller files
    differ from their last commit, when the authority cannot prove this registry's spends, for an account the
    authority does not know, for a signer who is not a controller or a key not theirs, and above what this
    registry's policy states for the dataset (the policy bounds every account)."""
    registry, authority = site.registry, site.authority
    registry.require_existing()
    with registry.lock(), authority.lock():
        events = registry.verified_events()
        check_policy_logged(registry, events)
        in_force = check_controller_files(registry, events)
        if in_force is None:
            raise BudgetError(
                "a dataset's lifetime is a controller's signed act through the registry that governs the budget "
                "authority; this registry has no approvers registry (a sandbox): nothing set",
                str(registry.root),
                f"run '{COMMAND} --as CONTROLLER --key KEY --root <the governed registry>'",
            )
        who = controller_signer(in_force, signer, key, registry, COMMAND)
        check_authority(registry, authority, events)
        policy, policy_sha = load_policy(registry.root)
        accounts = authority.accounts(dataset)
        if not accounts:
            raise BudgetError(
                f"no account for dataset {dataset!r} in the controller's budget authority (nothing charged on it)",
                f"{COMMAND} --dataset {dataset}",
                "give the name label or fingerprint that 'sdgov budget' lists; a first charge sets an account's "
                "lifetime from the spending registry's policy",
            )
        return _set_locked(
            registry, authority, policy, policy_sha, accounts, rho, COMMAND, registry.signer(), True, who
        )


def _set_locked(
    registry: Registry,
    authority: Authority,
    policy: Policy,
    policy_sha: str,
    accounts: list[tuple[str, str]],
    rho: float,
    source: str,
    signer: Signer,
    governs: bool,
    who: tuple[str, Path, Approver] | None = None,
) -> list[Lifetime]:
    """Set the accounts' lifetime to ``rho`` (under both locks), bounded by this registry's policy, each signed by
    ``who`` when given (every statement made and checked before anything is written) and chained in the authority by
    ``signer`` (``governs``: binding an authority nobody governs yet), and log each with the chain's new head."""
    rid, now = registry.registry_id(), utcnow()
    settings: list[tuple[Lifetime, Lifetime | None, str, dict[str, str]]] = []
    for fingerprint, name in accounts:
        limits, entry = policy.limits(fingerprint, name)
        if rho > limits.lifetime_rho * (1 + TOLERANCE):
            raise BudgetError(
                f"lifetime ρ={rho:g} for dataset {name!r} is above this registry's policy (ρ={limits.lifetime_rho:g}), "
                "which bounds every account; nothing set",
                f"{POLICY_FILE}: {entry}",
                "raise the policy's lifetime_rho first ('sdgov approvers commit' signs the change), or ask for less",
            )
        new = Lifetime(fingerprint=fingerprint, dataset=name, lifetime_rho=rho, time=now, registry_id=rid,
                       source=source if who is None else f"{source}, signed by {who[0]}")  # fmt: skip
        settings.append((new, authority.lifetime(fingerprint, name), entry, _signed(new, who)))
    stored, head = authority.set_lifetime([s for s, _, _, _ in settings], signer, governs)
    for new, (_, was, entry, signed) in zip(stored, settings, strict=True):
        registry.append_locked(
            LIFETIME,
            "sdgov" if who is None else who[0],
            "system" if who is None else "controller",
            artifacts={"dataset": new.fingerprint, POLICY_FILE: policy_sha, **signed},
            comment=json.dumps(
                {
                    "dataset": new.dataset,
                    "fingerprint": new.fingerprint,
                    "lifetime_rho": new.lifetime_rho,
                    "previous_lifetime_rho": None if was is None else was.lifetime_rho,
                    "previous": None if was is None else was.where(),
                    "how": new.source,
                    "policy_entry": entry,
                    "authority": authority.authority_id,
                    "authority_seq": new.seq,
                    "authority_head": head.model_dump(),
                },
                sort_keys=True,
                ensure_ascii=False,
            ),
        )
    return stored


def _signed(new: Lifetime, who: tuple[str, Path, Approver] | None) -> dict[str, str]:
    """The event's ``statement`` and ``key`` artifacts for a signed setting ({} unsigned); a key that is not the
    signer's registered one is refused here, before anything is written."""
    if who is None:
        return {}
    name, key, approver = who
    stmt = LifetimeStatement(registry_id=new.registry_id, fingerprint=new.fingerprint, lifetime_rho=new.lifetime_rho,
                             signer=name, time=new.time)  # fmt: skip
    token = encode_statement(stmt, key)
    if not verifies(approver.key(), token.rsplit(".", 1)[1], signed_bytes(stmt)):
        raise BudgetError(
            f"{key} is not the key registered for {name!r}",
            str(key),
            "sign with your own key (the one whose public key the approvers registry lists)",
        )
    return {"statement": token, "key": key_fingerprint(approver.key())}


def _detail(
    dataset: str,
    fingerprint: str,
    rho: float,
    statistics: dict[str, float],
    spent: float,
    lifetime: float,
    entry: str,
    authority: Authority,
    registries: int,
) -> dict[str, Any]:
    """What ``budget_spent`` / ``budget_refused`` record: the request and the account across every registry."""
    return {
        "dataset": dataset,
        "fingerprint": fingerprint,
        "rho": rho,
        "statistics": statistics,
        "spent_before": spent,
        "spent_after": spent + rho,
        "lifetime_rho": lifetime,
        "policy_entry": entry,
        "authority": authority.authority_id,
        "registries": registries,
    }


def check_policy_logged(registry: Registry, events: list[Event]) -> None:
    """Refuse to spend under a ``policy.yaml`` that is not the one last logged (edited or deleted since)."""
    problems = policy_problems(registry, events)
    if problems:
        raise BudgetError(
            f"the budget policy {problems[0].split(': ', 1)[1]}: no spend under an unrecorded policy",
            str(policy_path(registry.root)),
            "restore the committed file, or have a data controller sign the change in: "
            "'sdgov approvers commit --as NAME --key KEY'",
        )


def whose_authority(site: Site, events: list[Event]) -> tuple[bool, str]:
    """Whether ``sdgov budget`` may read the site's authority for this registry, and a sentence saying whose it
    reads: the authority this registry's log charged, readable here and proving the log's figures — else (another
    user's account, another file, none at all) the registry's own signed log, said so, never an empty authority
    read as if it were the controller's."""
    authority = site.authority
    head, charged = mirrored(events)
    named = head.authority if head is not None else next(reversed(charged.values()), None)
    try:
        identity = authority.identity()
        problems = authority_problems(authority, events) if identity is not None else []
    except (SdgovError, OSError) as exc:  # another user's authority (owner-only), a database away
        why = exc.one_line() if isinstance(exc, SdgovError) else (exc.strerror or type(exc).__name__)
        identity, problems = None, [f"it cannot be read here ({why})"]
    if named is None and identity is None:
        return False, f"no budget is spent through this registry yet (no budget authority at {authority.where})"
    if identity is not None and not problems and (named is None or identity == named):
        return True, f"budget authority {identity} at {authority.where} (this registry's spends proved in it)"
    which = f"authority {named}" if named else "the controller's authority"
    why = problems[0] if problems else f"there is {'none' if identity is None else 'another'} at {authority.where}"
    return False, (f"read from this registry's signed log (its mirror of {which}), not from an authority: {why}")


def log_summary(events: list[Event]) -> list[dict[str, Any]]:
    """Each dataset's account as this registry's signed log last recorded it (``budget_spent``: the account over every
    registry after its charge; a later lifetime setting): what a reader without the controller's authority sees."""
    out: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.event not in (SPENT, LIFETIME):
            continue
        d = json.loads(e.comment)
        a = out.setdefault(d["fingerprint"], {"dataset": d["dataset"], "fingerprint": d["fingerprint"], "spends": []})
        if e.event == SPENT:
            a.update(spent_rho=d["spent_after"], lifetime_rho=d["lifetime_rho"], policy_entry=d["policy_entry"])
            a["spends"].append(spend_of(e, events[0].artifacts.get("registry_id", "")))
        else:
            a["lifetime_rho"] = d["lifetime_rho"]
        a.update(as_of_line=e.seq + 1, from_log=True)
    for a in out.values():
        a["remaining_rho"] = max(0.0, a.get("lifetime_rho", 0.0) - a.get("spent_rho", 0.0))
        a["spends"] = [s.model_dump() for s in a["spends"]]
    return list(out.values())


def ledger_summary(site: Site, events: list[Event] | None = None) -> list[dict[str, Any]]:
    """Every dataset this registry has spent on or holds statistics of (copied from another registry through the
    controller's authority), with its account over every registry (for ``sdgov budget`` and the trail)."""
    registry, authority = site.registry, site.authority
    events = registry.verified_events() if events is None else events
    seen: dict[str, str] = {}
    for s in spends(events):
        seen.setdefault(s.fingerprint, s.dataset)
    stored = registry.root / "measurements"
    for path in sorted(stored.glob("*.json")) if stored.is_dir() else []:
        charged = authority.reservation(path.stem)
        if charged is not None:
            seen.setdefault(charged.fingerprint, charged.dataset)
    out = []
    for fingerprint, name in seen.items():
        try:
            out.append(account(site, name, fingerprint, events).model_dump())
        except SdgovError as exc:
            mine = _mine(events, name, fingerprint)
            out.append(
                {
                    "dataset": name,
                    "fingerprint": fingerprint,
                    "error": exc.one_line(),
                    "spent_rho": math.fsum(s.rho for s in mine),
                    "spends": [s.model_dump() for s in mine],
                }
            )
    return out
