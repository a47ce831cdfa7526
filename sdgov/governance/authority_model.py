"""What a budget authority holds and offers — its records and its interface — apart from where it is kept.

:mod:`sdgov.governance.authority` keeps it in SQLite (the embedded default) and chooses the backend;
:mod:`sdgov.governance.authority_pg` keeps it in PostgreSQL. Both implement :class:`Authority` over these records.
"""

from __future__ import annotations

import contextlib
from typing import Protocol

from sdgov.base.errors import BudgetError
from sdgov.base.model import Frozen

ENV = "SDGOV_AUTHORITY"
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

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """One measuring process at a time across the controller, from the budget check to the draw's record."""
        ...

    def charges(self, fingerprint: str, dataset: str) -> list[Charge]:
        """Every charge against the dataset (its content, or its name label), in order."""
        ...

    def charge(self, charge: Charge, lifetime_rho: float) -> tuple[Charge, list[Charge]]:
        """Check ``charge`` against ``lifetime_rho`` over the account and store it, in one transaction; returns it
        stored and the account before it. :class:`BudgetError` (nothing stored) when it does not fit."""
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

    def __init__(self, before: list[Charge], spent: float) -> None:
        self.before, self.spent = before, spent
        super().__init__("the charge exceeds the dataset's lifetime budget", "the budget authority", "")
