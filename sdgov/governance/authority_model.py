"""What a budget authority holds and offers — its records and its interface — apart from where it is kept.

:mod:`sdgov.governance.authority` keeps it in SQLite (the embedded default) and chooses the backend;
:mod:`sdgov.governance.authority_pg` keeps it in PostgreSQL. Both implement :class:`Authority` over these records,
and both decide a charge by :func:`decide_charge` (one rule, two stores).

**The rows are hash-chained and signed.** Every charge, every lifetime setting and the authority's binding to the
registry that governs it is also a row of ``chain``: its content (canonical JSON), the hash of the row before, its
own hash, and the Ed25519 signature of the registry that wrote it (the charging registry's own key: a row cannot be
added, edited or re-chained without one). Each registry's log mirrors the chain's head after its charges
(``authority_head`` in ``budget_spent``), so a registry refuses to spend — and to state a cumulative figure — when the
authority it is given lacks what its log mirrors: another file (a swap), an empty one (a reset), rows deleted
(:func:`chain_problems`, :func:`mirror_problems`). An authority written before the chain is sealed as it stands by
its next write; after that a row outside the chain is an insertion.

**One authority in fact: the governed registry's.** The first registry with an approvers registry in force that
charges the authority, or sets a lifetime in it, governs it (a ``governed`` row). From then on a dataset's lifetime
is that registry's: set by its signed policy on its charge, or by a controller's signed act through it (``sdgov budget
lifetime --as --key``), never through another registry, and never unsigned; settings made through other registries
do not count, and another registry's charge on an account the governed registry has not set is refused
(:class:`LifetimeUnset`). A registry without approvers (a sandbox) still spends, under the governed lifetime.

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
from typing import Literal, Protocol

from sdgov.base.errors import BudgetError, RegistryError
from sdgov.base.hashing import canonical_json, sha256_bytes
from sdgov.base.model import Frozen
from sdgov.registry.key import Signer, parse_registry_public_key, signature_ok

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


GENESIS = "0" * 64
CHAIN_DOMAIN = "sdgov-authority-row:v1"


class Row(Frozen):
    """One row of the authority's chain: what it records (``body``: a charge, a lifetime setting, the binding to the
    governing registry), where it is in the chain, and the writing registry's signature of its hash."""

    seq: int  # 1, 2, … in the order written
    kind: Literal["charge", "lifetime", "governed"]
    ref: str  # the charge's ref, the lifetime's seq, the governing registry's id
    body: str  # canonical JSON of what the row records
    prev: str
    hash: str = ""
    registry_id: str
    public_key: str  # the writing registry's key, 'ed25519:<base64>'
    sig: str = ""

    def digest(self) -> str:
        """The row's hash: its place, kind, reference, content and the hash before it."""
        return sha256_bytes(canonical_json(self.model_dump(include={"seq", "kind", "ref", "body", "prev"})))


class Head(Frozen):
    """What a registry's log mirrors of the authority it charged: its id and the chain's last row then."""

    authority: str
    seq: int
    hash: str


class Governor(Frozen):
    """The registry that governs the authority: the only one through which a dataset's lifetime is set."""

    registry_id: str
    public_key: str
    time: str


def body_of(item: Charge | Lifetime | Governor) -> str:
    """The canonical JSON a row records of a stored charge or setting (its table's own order left out)."""
    return canonical_json(item.model_dump(exclude={"seq"} if not isinstance(item, Governor) else set())).decode()


def new_row(prev: Row | None, item: Charge | Lifetime | Governor, signer: Signer) -> Row:
    """The next row of the chain, recording ``item`` (stored: its ref or seq is known), hashed and signed by
    ``signer``."""
    if isinstance(item, Charge):
        kind, ref = "charge", item.ref
    elif isinstance(item, Lifetime):
        kind, ref = "lifetime", str(item.seq)
    else:
        kind, ref = "governed", item.registry_id
    row = Row.model_validate(
        {"seq": 1 if prev is None else prev.seq + 1, "kind": kind, "ref": ref, "body": body_of(item),
         "prev": GENESIS if prev is None else prev.hash, "registry_id": signer.registry_id,
         "public_key": signer.public_key}
    )  # fmt: skip
    digest = row.digest()
    return row.model_copy(update={"hash": digest, "sig": signer.sign(CHAIN_DOMAIN, digest.encode())})


def governor(rows: list[Row]) -> Governor | None:
    """The governing registry, from its ``governed`` row (the first; a second is a problem)."""
    first = next((r for r in rows if r.kind == "governed"), None)
    return None if first is None else Governor.model_validate_json(first.body)


def chain_problems(rows: list[Row], charges: list[Charge], lifetimes: list[Lifetime]) -> list[str]:
    """Why the chain does not vouch for the tables (empty: it does), one line each: a row out of order, edited,
    re-chained or not signed by the key it names; a charge or setting deleted, edited or inserted outside the
    chain; a lifetime set through a registry that does not govern the authority. An authority with no chain yet
    (written before chains) has no problem here: its next write seals it."""
    problems: list[str] = []
    prev = GENESIS
    for i, r in enumerate(rows, start=1):
        at = f"authority row {r.seq}"
        if r.seq != i:
            problems.append(f"{at}: out of order (a row removed or inserted)")
        if r.prev != prev:
            problems.append(f"{at}: the chain is broken (its previous hash is not row {i - 1}'s)")
        if r.hash != r.digest():
            problems.append(f"{at}: its hash does not match its content (edited)")
        try:
            signed = signature_ok(parse_registry_public_key(r.public_key, at), CHAIN_DOMAIN, r.hash.encode(), r.sig)
        except RegistryError:
            signed = False
        if not signed:
            problems.append(f"{at}: its signature does not verify (forged or re-chained)")
        prev = r.hash
    if not rows:
        return problems
    by_ref = {c.ref: c for c in charges}
    by_seq = {str(s.seq): s for s in lifetimes}
    gov = governor(rows)
    for r in rows:
        stored = by_ref.get(r.ref) if r.kind == "charge" else by_seq.get(r.ref) if r.kind == "lifetime" else gov
        if stored is None:
            problems.append(f"authority row {r.seq}: its {r.kind} was deleted (ref {r.ref[:16]})")
        elif body_of(stored) != r.body:
            problems.append(f"authority row {r.seq}: its {r.kind} was edited (ref {r.ref[:16]} differs from the chain)")
        if (
            r.kind == "lifetime"
            and gov is not None
            and r.seq > _governed_at(rows)
            and (r.registry_id != gov.registry_id or r.public_key != gov.public_key)
        ):
            problems.append(f"authority row {r.seq}: a lifetime set through registry {r.registry_id[:8]}, which does "
                            "not govern the authority")  # fmt: skip
    chained = {(r.kind, r.ref) for r in rows}
    problems += [f"charge {c.ref} is not in the chain (inserted outside sdgov)" for c in charges
                 if ("charge", c.ref) not in chained]  # fmt: skip
    problems += [f"lifetime setting {s.seq} is not in the chain (inserted outside sdgov)" for s in lifetimes
                 if ("lifetime", str(s.seq)) not in chained]  # fmt: skip
    if sum(r.kind == "governed" for r in rows) > 1:
        problems.append("the authority names a second governing registry")
    return problems


def _governed_at(rows: list[Row]) -> int:
    return next((r.seq for r in rows if r.kind == "governed"), 0)


def head_of(authority_id: str, rows: list[Row]) -> Head | None:
    """The chain's head as a registry mirrors it; None for an empty chain."""
    return Head(authority=authority_id, seq=rows[-1].seq, hash=rows[-1].hash) if rows else None


def mirror_problems(identity: str | None, rows: list[Row], mirrored: Head | None, charged: dict[str, str]) -> list[str]:
    """Why the authority (``identity``: its id, None when there is none) lacks what a registry's log mirrors: the
    head after its last charge (``mirrored``) and the charges it logged (``charged``: ref → authority id)."""
    named = mirrored.authority if mirrored is not None else next(reversed(charged.values()), None)
    if named is None:
        return []
    if identity != named:
        found = "none" if identity is None else f"{identity[:12]}…"
        return [f"swapped or reset: this registry charged authority {named[:12]}…, the one given is {found}"]
    problems = []
    if mirrored is not None:
        at = rows[mirrored.seq - 1] if 0 < mirrored.seq <= len(rows) else None
        if at is None or at.hash != mirrored.hash:
            problems.append(f"rows deleted or rolled back: it lacks row {mirrored.seq} this registry's log mirrors")
    refs = {r.ref for r in rows if r.kind == "charge"}
    missing = [ref for ref, a in charged.items() if a == identity and ref not in refs]
    if rows and missing:
        problems.append(f"rows deleted: it lacks {len(missing)} charge(s) this registry's log records")
    return problems


class AuthorityBroken(RegistryError):
    """The authority cannot prove its figures: its chain fails, or it lacks what a registry's log mirrors."""


def check_chain(rows: list[Row], charges: list[Charge], lifetimes: list[Lifetime], where: str) -> None:
    """Refuse (one line naming the authority at ``where``) a write to an authority whose chain fails
    (:func:`chain_problems`): the SQLite and PostgreSQL authorities check before every charge or setting."""
    problems = chain_problems(rows, charges, lifetimes)
    if problems:
        raise AuthorityBroken(
            f"the budget authority's chain fails ({problems[0]}); nothing is charged or set",
            where,
            "restore the authority from its backup (and 'sdgov budget' shows what each registry's log records)",
        )


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

    def identity(self) -> str | None:
        """Its id without creating it (None: there is no authority there yet); a reader's way to name it."""
        ...

    def rows(self) -> list[Row]:
        """The chain, in order."""
        ...

    def verify(self) -> list[str]:
        """:func:`chain_problems` over the chain and the tables, read in one transaction."""
        ...

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """One measuring process at a time across the controller, from the budget check to the draw's record."""
        ...

    def charges(self, fingerprint: str, dataset: str) -> list[Charge]:
        """Every charge against the dataset (its content, or its name label), in order."""
        ...

    def charge(
        self, charge: Charge, lifetime_rho: float, source: str, signer: Signer, governs: bool = False
    ) -> tuple[Charge, list[Charge], Head]:
        """Check ``charge`` over the account against the account's lifetime and ``lifetime_rho`` (the spending
        registry's policy; ``source``: its entry), by :func:`decide_charge`, and store it with its chain rows signed
        by ``signer``, in one transaction; returns it stored, the account before it and the chain's new head. A
        first charge sets the account's lifetime; ``governs`` (a registry with approvers in force) binds an
        authority nobody governs yet. :class:`BudgetError` (nothing stored) when it does not fit:
        :class:`Overspend`, :class:`LifetimeAbove`, :class:`LifetimeUnset`; :class:`AuthorityBroken` when the chain
        fails."""
        ...

    def lifetime(self, fingerprint: str, dataset: str) -> Lifetime | None:
        """The account's lifetime (the lowest of the settings of every dataset the account links, by content or by
        name label), adopted from its latest checked charge if none is stored; None for an account never charged."""
        ...

    def accounts(self, dataset: str) -> list[tuple[str, str]]:
        """(fingerprint, name label) of every account known by ``dataset`` (a name label or a fingerprint): those
        charged, and those whose lifetime is set."""
        ...

    def set_lifetime(
        self, settings: list[Lifetime], signer: Signer, governs: bool = False
    ) -> tuple[list[Lifetime], Head]:
        """Store new settings of accounts' lifetimes in one transaction (never updating one: the history stays), each
        a chain row signed by ``signer``, which must govern the authority (``governs``: binding one nobody governs
        yet); returns them stored and the new head. The caller holds :meth:`lock` and has checked them (``sdgov budget
        lifetime``: a controller's signed act)."""
        ...

    def import_charges(self, charges: list[Charge], signer: Signer) -> None:
        """Store charges a registry's log records from before the authority (by ``ref``), chained and signed by
        ``signer``; never checked, never duplicated."""
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


class LifetimeUnset(BudgetError):
    """The authority is governed, and its governing registry has set no lifetime for the dataset: no other registry
    may be the one to set it (the ledger words the refusal)."""

    def __init__(self, governing: Governor) -> None:
        self.governing = governing
        super().__init__("the governed registry has set no lifetime for this dataset", "the budget authority", "")


class LifetimeAbove(BudgetError):
    """The spending registry's policy states a higher lifetime than the account's: a new registry is not a new
    budget (the ledger words the refusal)."""

    def __init__(self, account: Lifetime, policy_rho: float) -> None:
        self.account, self.policy_rho = account, policy_rho
        super().__init__("the policy states a higher lifetime than the dataset's account", "the budget authority", "")


def check_governor(gov: Governor | None, signer: Signer, where: str) -> None:
    """A lifetime is set through the governing registry only (one line naming it otherwise)."""
    if gov is not None and (gov.registry_id != signer.registry_id or gov.public_key != signer.public_key):
        raise LifetimeSetElsewhere(gov, where)


class LifetimeSetElsewhere(RegistryError):
    """A lifetime setting through a registry that does not govern the authority."""

    def __init__(self, gov: Governor, where: str) -> None:
        super().__init__(
            f"the budget authority is governed by registry {gov.registry_id} (since {gov.time[:10]}): a dataset's "
            "lifetime is set through it, by its controller, and through no other registry; nothing set",
            where,
            f"run 'sdgov budget lifetime --as CONTROLLER --key KEY --root <registry {gov.registry_id[:8]}…>'",
        )


def latest_settings(settings: list[Lifetime], gov: Governor | None, fingerprint: str, dataset: str) -> list[Lifetime]:
    """The latest setting of each account (by fingerprint) among those that count (the governing registry's alone
    when the authority is governed), of the accounts that (fingerprint, name label) links."""
    latest: dict[str, Lifetime] = {}
    for s in settings:
        if gov is None or s.registry_id == gov.registry_id:
            latest[s.fingerprint] = s
    return [s for s in latest.values() if s.fingerprint == fingerprint or s.dataset == dataset]


def lowest(settings: list[Lifetime]) -> Lifetime | None:
    """The account's lifetime over the settings it links (by content and by name label): the lowest, the strictest."""
    return min(settings, key=lambda s: s.lifetime_rho, default=None)


def above(policy_rho: float, account: Lifetime | None) -> bool:
    """Whether a policy's lifetime is above the account's (no account: never)."""
    return account is not None and policy_rho > account.lifetime_rho * (1 + TOLERANCE)


def governed_lifetime(settings: list[Lifetime], charges: list[Charge], gov: Governor | None) -> Lifetime | None:
    """The account's lifetime over the settings it links: the lowest — of the governing registry's settings alone
    when the authority is governed — else adopted from its latest checked charge (the governing registry's)."""
    if gov is not None:
        settings = [s for s in settings if s.registry_id == gov.registry_id]
        charges = [c for c in charges if c.registry_id == gov.registry_id]
    return lowest(settings) or adopted(charges)


def decide_charge(
    charge: Charge,
    before: list[Charge],
    account: Lifetime | None,
    policy_rho: float,
    source: str,
    gov: Governor | None = None,
) -> tuple[Charge, Lifetime | None]:
    """The one rule both backends apply inside their charge transaction: the charge as it is stored (with the
    lifetime it was checked against: the lower of the account's and the policy's) and the account's setting to
    store with it (the first charge's, or one adopted from a charge made before lifetimes were kept); raises
    :class:`LifetimeUnset`, :class:`LifetimeAbove` or :class:`Overspend`, and then nothing is stored. In a governed
    authority only the governing registry's charge may set an account's lifetime."""
    if account is None and gov is not None and charge.registry_id != gov.registry_id:
        raise LifetimeUnset(gov)
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
