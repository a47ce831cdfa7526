"""What a budget authority holds and offers — its records and its interface — apart from where it is kept.

:mod:`sdgov.governance.authority` keeps it in SQLite (the embedded default) and chooses the backend;
:mod:`sdgov.governance.authority_pg` keeps it in PostgreSQL. Both implement :class:`Authority` over these records,
and both decide a charge by :func:`decide_charge` (one rule, two stores).

**The account's lifetime.** A dataset's lifetime ρ is a property of its account here, not of whichever registry
spends: otherwise a registry ``sdgov init``-ed with a bigger policy would be a bigger budget, and no other registry's
log would show that the dataset's cap was raised. The first charge of an account sets it from the spending
registry's policy; a charge from a registry whose policy states less is checked against the less (stricter, the
account's stays); one whose policy states more is refused (:class:`LifetimeAbove`) until the controller raises the
account explicitly (``sdgov budget lifetime``, logged in the registry it is done through). Every setting is a row of
its own (``lifetimes``: never updated, so the account's history is kept); an account charged before lifetimes were
kept adopts the lifetime its latest checked charge was checked against.
"""

from __future__ import annotations

import contextlib
import math
from typing import Protocol

from sdgov.base.errors import BudgetError
from sdgov.base.model import Frozen

TOLERANCE = 1e-9  # relative: float sums of ρ must not refuse an exact fit


class Charge(Frozen):
    """One charge against a dataset's account: the statistics it reserved (key → ρ) and who made it."""

    seq: int = 0  # the authority's order of charges (0: not yet stored)
    ref: str  # unique: a uuid for a charge made through the authority; '<registry id>:<event hash>' if imported
    time: str
    dataset: str
    fingerprint: str
    rho: float
    statistics: dict[str, float]
    agreement_sha256: str = ""
    run_id: str = ""
    registry_id: str = ""
    lifetime_rho: float | None = None  # the lifetime it was checked against (None: imported from a registry log)


class Lifetime(Frozen):
    """One setting of a dataset's lifetime ρ in the authority: the value, and when, through which registry and how
    it was set."""

    seq: int = 0  # the authority's order of settings (0: not stored: adopted from a charge made before lifetimes)
    fingerprint: str
    dataset: str
    lifetime_rho: float
    time: str
    registry_id: str
    source: str  # how: the spending registry's policy entry, 'sdgov budget lifetime', or the charge it was adopted from

    def where(self) -> str:
        """Where it was set, in words: for the refusal, the budget view and the log."""
        return f"set {self.time} through registry {self.registry_id} ({self.source})"


class Drawn(Frozen):
    """A statistic drawn under the authority: its bytes' hash and where it was first drawn."""

    key: str
    sha256: str
    registry_id: str
    run_id: str
    time: str


class Authority(Protocol):
    """What a budget authority offers; :class:`SqliteAuthority` is the embedded one."""

    @property
    def authority_id(self) -> str:
        """A random id, fixed when the authority is created: what cards and logs name it by."""
        ...

    @property
    def where(self) -> str:
        """Where it is, as a one-line error names it (a file, or a database URL without its password)."""
        ...

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """One measuring process at a time across the controller, from the budget check to the draw's record."""
        ...

    def charges(self, fingerprint: str, dataset: str) -> list[Charge]:
        """Every charge against the dataset (its content, or its name label), in order."""
        ...

    def charge(self, charge: Charge, lifetime_rho: float, source: str) -> tuple[Charge, list[Charge]]:
        """Check ``charge`` over the account against the account's lifetime and ``lifetime_rho`` (the spending
        registry's policy; ``source``: its entry), by :func:`decide_charge`, and store it, in one transaction;
        returns it stored and the account before it. A first charge sets the account's lifetime. :class:`BudgetError`
        (nothing stored) when it does not fit: :class:`Overspend`, or :class:`LifetimeAbove`."""
        ...

    def lifetime(self, fingerprint: str, dataset: str) -> Lifetime | None:
        """The account's lifetime (the lowest of the settings of every dataset the account links, by content or by
        name label), adopted from its latest checked charge if none is stored; None for an account never charged."""
        ...

    def accounts(self, dataset: str) -> list[tuple[str, str]]:
        """(fingerprint, name label) of every account known by ``dataset`` (a name label or a fingerprint): those
        charged, and those whose lifetime is set."""
        ...

    def set_lifetime(self, settings: list[Lifetime]) -> list[Lifetime]:
        """Store new settings of accounts' lifetimes in one transaction (never updating one: the history stays);
        returns them stored. The caller holds :meth:`lock` and has checked them (``sdgov budget lifetime``)."""
        ...

    def import_charges(self, charges: list[Charge]) -> None:
        """Store charges a registry's log records and the authority lacks (by ``ref``); never checked, never
        duplicated."""
        ...

    def reservation(self, key: str) -> Charge | None:
        """The charge that reserved statistic ``key``, if any."""
        ...

    def drawn(self, key: str) -> tuple[Drawn, bytes] | None:
        """The statistic ``key`` as drawn (its record and bytes), or None."""
        ...

    def record(self, key: str, payload: bytes, registry_id: str, run_id: str, time: str | None = None) -> Drawn:
        """Store a drawn statistic, before any registry uses it (``time``: when it was drawn, if before now); a key
        already stored keeps its first bytes (a different payload is refused: one statistic is drawn once)."""
        ...

    def keys(self) -> set[str]:
        """Every statistic key stored."""
        ...


class Overspend(BudgetError):
    """The charge does not fit the dataset's lifetime ρ over every registry (the ledger words the refusal)."""

    def __init__(self, before: list[Charge], spent: float, lifetime_rho: float) -> None:
        self.before, self.spent, self.lifetime_rho = before, spent, lifetime_rho
        super().__init__("the charge exceeds the dataset's lifetime budget", "the budget authority", "")


class LifetimeAbove(BudgetError):
    """The spending registry's policy states a higher lifetime than the account's: a new registry is not a new
    budget (the ledger words the refusal)."""

    def __init__(self, account: Lifetime, policy_rho: float) -> None:
        self.account, self.policy_rho = account, policy_rho
        super().__init__("the policy states a higher lifetime than the dataset's account", "the budget authority", "")


LATEST_LIFETIMES = (
    "SELECT seq, fingerprint, dataset, lifetime_rho, time, registry_id, source FROM lifetimes "
    "WHERE seq IN (SELECT MAX(seq) FROM lifetimes GROUP BY fingerprint) AND (fingerprint = $1 OR dataset = $2) "
    "ORDER BY seq"
)
"""The latest setting of each account that a (fingerprint, name label) links, in both backends' SQL."""


def lowest(settings: list[Lifetime]) -> Lifetime | None:
    """The account's lifetime over the settings it links (by content and by name label): the lowest, the strictest."""
    return min(settings, key=lambda s: s.lifetime_rho, default=None)


def above(policy_rho: float, account: Lifetime | None) -> bool:
    """Whether a policy's lifetime is above the account's (no account: never)."""
    return account is not None and policy_rho > account.lifetime_rho * (1 + TOLERANCE)


def decide_charge(
    charge: Charge, before: list[Charge], account: Lifetime | None, policy_rho: float, source: str
) -> tuple[Charge, Lifetime | None]:
    """The one rule both backends apply inside their charge transaction: the charge as it is stored (with the
    lifetime it was checked against: the lower of the account's and the policy's) and the account's setting to
    store with it (the first charge's, or one adopted from a charge made before lifetimes were kept); raises
    :class:`LifetimeAbove` or :class:`Overspend`, and then nothing is stored."""
    if above(policy_rho, account):
        assert account is not None
        raise LifetimeAbove(account, policy_rho)
    new = None
    if account is None:
        new = Lifetime(fingerprint=charge.fingerprint, dataset=charge.dataset, lifetime_rho=policy_rho,
                       time=charge.time, registry_id=charge.registry_id, source=source)  # fmt: skip
    elif account.seq == 0:
        new = account  # adopted: stored now, so the next read need not derive it again
    lifetime = policy_rho if account is None else min(policy_rho, account.lifetime_rho)
    spent = math.fsum(c.rho for c in before)
    if spent + charge.rho > lifetime * (1 + TOLERANCE):
        raise Overspend(before, spent, lifetime)
    return charge.model_copy(update={"lifetime_rho": lifetime}), new


def adopted(charges: list[Charge]) -> Lifetime | None:
    """An account charged before lifetimes were kept: the lifetime its latest checked charge was checked against
    (an imported charge was never checked: it names none)."""
    checked = [c for c in charges if c.lifetime_rho is not None]
    if not checked:
        return None
    c = checked[-1]
    assert c.lifetime_rho is not None
    return Lifetime(fingerprint=c.fingerprint, dataset=c.dataset, lifetime_rho=c.lifetime_rho, time=c.time,
                    registry_id=c.registry_id, source=f"adopted from its charge {c.ref}")  # fmt: skip
