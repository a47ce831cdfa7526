"""The privacy-budget ledger: one lifetime zCDP account per confidential dataset, spends composed by addition.

The account belongs to the *content* of the data (:mod:`sdgov.data.fingerprint`), not to a file or a name: renaming
the dataset or re-encoding its file opens no new account. The declared name is a label; a spend still counts
against every dataset sharing its name as well (a new version of the data under the same name mostly describes
the same people), so the link by name can only add spends, never hide one.

The lifetime budget is the controller's (``policy.yaml``, :mod:`sdgov.governance.policy`); without a policy nothing is
spent. Spends are ``budget_spent`` events of the registry's hash-chained log, one per run that draws new noise,
naming every statistic it reserves (:func:`sdgov.measurement.store.statistic_key`: dataset × marginal × σ, and a
split synthesis's part filter) and its ρ. ρ composes by addition (zCDP) over every statistic ever drawn on the
dataset; a statistic already drawn is reused and spends nothing.

Every account is computed from :meth:`~sdgov.registry.log.Registry.verified_events` only: a log whose chain or
signatures fail (a deleted or shrunk ``budget_spent``) refuses every spend with one line
(:class:`~sdgov.registry.log.LogBroken`). The policy's sha256 is logged with each spend, and a spend is refused while
``policy.yaml`` differs from the hash last logged (a lifetime budget raised by editing the file).

Protocol (sdgov/measurement/store.py, all under the registry lock, so concurrent runs cannot overspend):

1. statistics persisted *and* logged → reused, spend nothing;
2. the rest: those a dead run reserved are drawn (or adopted) under that reservation; for the others the budget
   is checked — refused (``budget_refused`` logged, :class:`~sdgov.base.errors.BudgetError`) *before any noise is
   drawn* — and one ``budget_spent`` is appended (fsynced) for all of them;
3. draw, persist each noisy marginal atomically, log ``measured``.

A crash between 2 and 3 leaves a spend and no measurement: the noise drawn in the dead process was never
persisted nor seen, so the re-run draws it (once) under the existing spend — no second spend. A crash after
a file was persisted but before ``measured`` was logged leaves a complete, validated file: the re-run adopts
it as drawn (never re-draws) — but only because a reservation for its key precedes it; an unlogged file with no
reservation was not drawn under the ledger and is refused. Either way the ledger shows one spend.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from sdgov.base.errors import BudgetError, SdgovError
from sdgov.base.model import Frozen
from sdgov.governance.controller import check_controller_files
from sdgov.governance.policy import POLICY_FILE, load_policy, policy_path
from sdgov.registry.log import policy_problems  # the registry checks the policy hash the ledger logs

if TYPE_CHECKING:
    from sdgov.registry.log import Event, Registry

SPENT = "budget_spent"
REFUSED = "budget_refused"
TOLERANCE = 1e-9  # relative: float sums of ρ must not refuse an exact fit


class Spend(Frozen):
    seq: int
    time: str
    dataset: str
    fingerprint: str
    rho: float
    statistics: dict[str, float]  # statistic key → its ρ
    agreement_sha256: str
    run_id: str


class Account(Frozen):
    """What a dataset has spent and may still spend."""

    dataset: str
    fingerprint: str
    lifetime_rho: float
    spent_rho: float
    remaining_rho: float
    spends: list[Spend]
    policy_entry: str  # which part of policy.yaml set the lifetime ('defaults' or 'datasets.<key>')
    policy_sha256: str


def spend_of(e: Event) -> Spend | None:
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
    )


def spends(events: list[Event]) -> list[Spend]:
    """Every spend recorded in ``events``, in log order."""
    return [s for s in map(spend_of, events) if s is not None]


def _mine(events: list[Event], dataset: str, fingerprint: str) -> list[Spend]:
    return [s for s in spends(events) if s.fingerprint == fingerprint or s.dataset == dataset]


def account(registry: Registry, dataset: str, fingerprint: str, events: list[Event] | None = None) -> Account:
    """The dataset's account under the controller's policy (PolicyError when the registry has none)."""
    events = registry.verified_events() if events is None else events
    policy, policy_sha = load_policy(registry.root)
    limits, entry = policy.limits(fingerprint, dataset)
    mine = _mine(events, dataset, fingerprint)
    spent = math.fsum(s.rho for s in mine)
    return Account(
        dataset=dataset,
        fingerprint=fingerprint,
        lifetime_rho=limits.lifetime_rho,
        spent_rho=spent,
        remaining_rho=max(0.0, limits.lifetime_rho - spent),
        spends=mine,
        policy_entry=entry,
        policy_sha256=policy_sha,
    )


def reservation(events: list[Event], key: str) -> Spend | None:
    """The spend already recorded for this statistic (a run reserved it, and perhaps died), if any."""
    return next((s for s in spends(events) if key in s.statistics), None)


def spend_locked(
    registry: Registry,
    *,
    dataset: str,
    fingerprint: str,
    statistics: dict[str, float],
    agreement_sha256: str,
    run_id: str,
    events: list[Event],
) -> Spend | None:
    """Reserve the ρ of new statistics (key → ρ), or refuse them all. Call with the registry lock held, before
    any draw, with only statistics no earlier spend reserved and ``events`` the log as verified under that same
    lock (:meth:`~sdgov.registry.log.Registry.verified_events`: verifying every signature again would find the same
    log). ``None`` when there is nothing to spend."""
    if not statistics:
        return None
    check_policy_logged(registry, events)
    check_controller_files(registry, events)  # the rest of what verify checks: controller files, approval statements
    acct = account(registry, dataset, fingerprint, events)
    rho = math.fsum(statistics.values())
    after = acct.spent_rho + rho
    detail: dict[str, Any] = {
        "dataset": dataset,
        "fingerprint": fingerprint,
        "rho": rho,
        "statistics": statistics,
        "spent_before": acct.spent_rho,
        "spent_after": after,
        "lifetime_rho": acct.lifetime_rho,
        "policy_entry": acct.policy_entry,
    }
    artifacts = {"dataset": fingerprint, POLICY_FILE: acct.policy_sha256}
    if after > acct.lifetime_rho * (1 + TOLERANCE):
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
        refused = BudgetError(
            f"privacy budget exceeded for dataset {dataset!r}: this release needs ρ={rho:.6g} for "
            f"{len(statistics)} new statistic(s), but {acct.spent_rho:.6g} of the lifetime ρ={acct.lifetime_rho:.6g} "
            f"is already spent ({len(acct.spends)} spend(s)); {acct.remaining_rho:.6g} remains. Refused before any "
            "noise was drawn",
            f"{policy_path(registry.root)}: {acct.policy_entry}",
            "lower the budget of this agreement (or reuse statistics already measured) or ask the data controller "
            "to raise the lifetime budget",
        )
        refused.logged = True  # budget_refused, above
        raise refused
    e = registry.append_locked(
        SPENT,
        "sdgov",
        "system",
        agreement_sha256=agreement_sha256,
        run_id=run_id,
        artifacts=artifacts,
        comment=json.dumps(detail, sort_keys=True),
    )
    return spend_of(e)


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


def ledger_summary(registry: Registry) -> list[dict[str, Any]]:
    """Every dataset that has spent, with its account (for ``sdgov budget`` and the trail)."""
    events = registry.verified_events()
    seen: dict[str, str] = {}
    for s in spends(events):
        seen.setdefault(s.fingerprint, s.dataset)
    out = []
    for fingerprint, name in seen.items():
        try:
            out.append(account(registry, name, fingerprint, events).model_dump())
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
