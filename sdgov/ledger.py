"""The privacy-budget ledger: lifetime zCDP budgets per confidential dataset, spends composed by addition.

Policy — ``budgets.yaml`` in the registry root, written by the data controller::

    # Lifetime zCDP budgets (ρ) per confidential dataset, set by the data controller.
    set_by: {name: Carl Controller, role: controller}
    datasets:
      toyland_census: {rho: 2.5}                       # every version of the data under this declared name
      census2011_teaching: {rho: 1.0, sha256: 3f2a…}   # optional: pin the content this budget was set for
    # default_rho: 0.5       # budget for datasets not listed (absent: an unlisted dataset is refused)

No ``budgets.yaml`` at all means *no lifetime limit is enforced* (the demo's default), but every spend is still
recorded, so a policy added later sees the whole history.

Spends are events of the registry's hash-chained log (``budget_spent``), one per measurement key (agreement ×
data content). A spend counts against a dataset when it carries the same declared name **or** the same content
hash: renaming a dataset does not reset its budget, and a new version of the data under the same name (which
mostly describes the same people) keeps spending from the same budget. ρ composes by addition (zCDP).

Every account is computed from :meth:`~sdgov.registry.Registry.verified_events` only: a log whose chain or
signatures fail (a deleted or shrunk ``budget_spent``) refuses every spend with one line
(:class:`~sdgov.registry.LogBroken`). The policy's sha256 is logged with each spend, and a spend is refused while
``budgets.yaml`` differs from the hash last logged (a lifetime budget raised by editing the file).

Protocol (sdgov/measurement_store.py, all under the registry lock, so concurrent runs cannot overspend):

1. measurement persisted *and* logged → reuse it, spend nothing;
2. otherwise find this key's spend; if there is none, check the budget — refused (``budget_refused`` logged,
   :class:`~sdgov.errors.BudgetError`) *before any noise is drawn* — and append ``budget_spent`` (fsynced);
3. draw, persist the noisy marginals atomically, log ``measured``.

A crash between 2 and 3 leaves a spend and no measurement: the noise drawn in the dead process was never
persisted nor seen, so the re-run draws it (once) under the existing spend — no second spend. A crash after
the file was persisted but before ``measured`` was logged leaves a complete, validated file: the re-run adopts
it as drawn (never re-draws) — but only because a reservation for its key precedes it; an unlogged file with no
reservation was not drawn under the ledger and is refused. Either way the ledger shows one spend.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, PositiveFloat

from sdgov.errors import BudgetError, SpecError
from sdgov.hashing import sha256_file
from sdgov.model import Frozen
from sdgov.registry import POLICY_FILE, policy_problems  # the registry checks the policy hash the ledger logs

if TYPE_CHECKING:
    from sdgov.registry import Event, Registry

SPENT = "budget_spent"
REFUSED = "budget_refused"
TOLERANCE = 1e-9  # relative: float sums of ρ must not refuse an exact fit


class SetBy(Frozen):
    name: str = Field(min_length=1)
    role: str = "controller"


class DatasetBudget(Frozen):
    rho: PositiveFloat = Field(description="lifetime zCDP budget ρ for this dataset")
    sha256: str | None = Field(default=None, description="optional: the content hash this budget was set for")
    note: str = ""


class BudgetPolicy(Frozen):
    set_by: SetBy | None = None
    datasets: dict[str, DatasetBudget] = Field(default_factory=dict)
    default_rho: PositiveFloat | None = None


class Spend(Frozen):
    seq: int
    time: str
    dataset: str
    dataset_sha256: str
    rho: float
    measurement_key: str
    agreement_sha256: str
    run_id: str


class Account(Frozen):
    """What a dataset has spent and may still spend."""

    dataset: str
    dataset_sha256: str
    lifetime_rho: float | None  # None: no policy → no limit enforced
    spent_rho: float
    remaining_rho: float | None
    spends: list[Spend]
    policy_sha256: str | None


def policy_path(registry: Registry) -> Path:
    return registry.root / POLICY_FILE


def load_policy(registry: Registry) -> tuple[BudgetPolicy | None, str | None]:
    """The controller's policy and its sha256, or (None, None) when the registry has none."""
    path = policy_path(registry)
    if not path.exists():
        return None, None
    from sdgov.loading import load_model_file

    return load_model_file(BudgetPolicy, path, SpecError, "budget policy"), sha256_file(path)


def lifetime_for(policy: BudgetPolicy | None, dataset: str, dataset_sha256: str, where: str) -> float | None:
    if policy is None:
        return None
    b = policy.datasets.get(dataset)
    if b is None:
        if policy.default_rho is None:
            raise BudgetError(
                f"no lifetime privacy budget is set for dataset {dataset!r}",
                where,
                f"the data controller must add '{dataset}: {{rho: ...}}' under 'datasets' (or a 'default_rho')",
            )
        return float(policy.default_rho)
    if b.sha256 and b.sha256 != dataset_sha256:
        raise BudgetError(
            f"the budget for {dataset!r} was set for content {b.sha256[:12]}…, but the data now hashes "
            f"to {dataset_sha256[:12]}…",
            where,
            "the data controller must review the new version and update (or remove) 'sha256'",
        )
    return float(b.rho)


def spend_of(e: Event) -> Spend | None:
    if e.event != SPENT:
        return None
    d = json.loads(e.comment)
    return Spend(
        seq=e.seq,
        time=e.time,
        dataset=d["dataset"],
        dataset_sha256=d["dataset_sha256"],
        rho=float(d["rho"]),
        measurement_key=d["measurement_key"],
        agreement_sha256=e.agreement_sha256,
        run_id=e.run_id,
    )


def spends(events: list[Event]) -> list[Spend]:
    return [s for s in map(spend_of, events) if s is not None]


def account(registry: Registry, dataset: str, dataset_sha256: str, events: list[Event] | None = None) -> Account:
    events = registry.verified_events() if events is None else events
    policy, policy_sha = load_policy(registry)
    lifetime = lifetime_for(policy, dataset, dataset_sha256, str(policy_path(registry)))
    mine = [s for s in spends(events) if s.dataset == dataset or s.dataset_sha256 == dataset_sha256]
    spent = math.fsum(s.rho for s in mine)
    return Account(
        dataset=dataset,
        dataset_sha256=dataset_sha256,
        lifetime_rho=lifetime,
        spent_rho=spent,
        remaining_rho=None if lifetime is None else max(0.0, lifetime - spent),
        spends=mine,
        policy_sha256=policy_sha,
    )


def reservation(registry: Registry, measurement_key: str) -> Spend | None:
    """The spend already recorded for this measurement key (a run reserved it, and perhaps died), if any."""
    return next((s for s in spends(registry.verified_events()) if s.measurement_key == measurement_key), None)


def spend_locked(
    registry: Registry,
    *,
    dataset: str,
    dataset_sha256: str,
    rho: float | None,
    measurement_key: str,
    agreement_sha256: str,
    run_id: str,
) -> Spend | None:
    """Reserve ``rho`` for one measurement key, or refuse. Call with the registry lock held, before any draw.

    Returns the (new or existing) spend; ``None`` when nothing is spent (``noise: none``). Idempotent per key.
    """
    events = registry.verified_events()
    check_policy_logged(registry, events)
    existing = [s for s in spends(events) if s.measurement_key == measurement_key]
    if existing:
        return existing[0]
    if rho is None:
        return None
    acct = account(registry, dataset, dataset_sha256, events)
    after = acct.spent_rho + rho
    detail: dict[str, Any] = {
        "dataset": dataset,
        "dataset_sha256": dataset_sha256,
        "rho": rho,
        "measurement_key": measurement_key,
        "spent_before": acct.spent_rho,
        "spent_after": after,
        "lifetime_rho": acct.lifetime_rho,
    }
    artifacts = {"dataset": dataset_sha256, **({POLICY_FILE: acct.policy_sha256} if acct.policy_sha256 else {})}
    if acct.lifetime_rho is not None and after > acct.lifetime_rho * (1 + TOLERANCE):
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
        raise BudgetError(
            f"privacy budget exceeded for dataset {dataset!r}: this release needs ρ={rho:.6g}, "
            f"but {acct.spent_rho:.6g} "
            f"of the lifetime ρ={acct.lifetime_rho:.6g} is already spent ({len(acct.spends)} measurement(s)); "
            f"{acct.remaining_rho:.6g} remains. Refused before any noise was drawn",
            str(policy_path(registry)),
            "lower the budget of this agreement or ask the data controller to raise the lifetime budget",
        )
    e = registry.append_locked(
        SPENT,
        "sdgov",
        "system",
        agreement_sha256=agreement_sha256,
        run_id=run_id,
        decision="approve",
        artifacts=artifacts,
        comment=json.dumps(detail, sort_keys=True),
    )
    return spend_of(e)


def check_policy_logged(registry: Registry, events: list[Event]) -> None:
    """Refuse to spend under a ``budgets.yaml`` that is not the one last logged (edited or deleted since)."""
    problems = policy_problems(registry, events)
    if problems:
        raise BudgetError(
            f"the budget policy {problems[0].split(': ', 1)[1]}: no spend under an unrecorded policy",
            str(policy_path(registry)),
            "restore the logged budgets.yaml, or have the data controller record the change "
            "(approve the budget retry in the flow, or 'sdgov budget --record-policy --as NAME')",
        )


def record_policy(registry: Registry, actor: str, role: str, comment: str = "") -> str | None:
    """Log the current ``budgets.yaml`` hash ("" when there is none) as the controller's policy from now on."""
    _, sha = load_policy(registry)  # refuses a malformed policy
    registry.append("budget_policy_recorded", actor, role, artifacts={POLICY_FILE: sha or ""}, comment=comment)
    return sha


def ledger_summary(registry: Registry) -> list[dict[str, Any]]:
    """Every dataset that has spent, with its account (for ``sdgov budget`` and the trail)."""
    events = registry.verified_events()
    seen: dict[tuple[str, str], None] = {}
    for s in spends(events):
        seen.setdefault((s.dataset, s.dataset_sha256), None)
    out = []
    for name, sha in seen:
        try:
            out.append(account(registry, name, sha, events).model_dump())
        except BudgetError as exc:
            out.append(
                {
                    "dataset": name,
                    "dataset_sha256": sha,
                    "error": exc.one_line(),
                    "spent_rho": math.fsum(
                        s.rho for s in spends(events) if s.dataset == name or s.dataset_sha256 == sha
                    ),
                }
            )
    return out
