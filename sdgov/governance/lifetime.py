"""Which lifetime ρ a registry's spend is checked against: the account's in the controller's budget authority, bounded
by the spending registry's policy — and the one-line refusal when a policy states more than the account.

A dataset's lifetime is its account's (:mod:`sdgov.governance.authority_model`), set by its first charge from the
spending registry's policy. A registry whose policy states less spends under the less (stricter); one whose policy
states more is refused, before anything is written or drawn, naming the account's lifetime, where it was set and how
the controller raises it (``sdgov budget lifetime``, :func:`sdgov.governance.ledger.set_lifetime`). One exception
keeps the single-registry way of raising a lifetime working: the registry through which the account's lifetime was
last set raises it by its own policy change (signed into its log, ``policy_changed``); its next spend records the
new lifetime in the authority and logs it (``budget_lifetime_changed``), as the command does.
"""

from __future__ import annotations

from sdgov.base.errors import BudgetError
from sdgov.governance.authority import Authority, Lifetime
from sdgov.governance.authority_model import Governor, above
from sdgov.registry.log import POLICY_FILE, Registry

LIFETIME = "budget_lifetime_changed"  # the registry's log event: an account's lifetime set through it
COMMAND = "sdgov budget lifetime"


def own_raise(account: Lifetime | None, policy_rho: float, registry_id: str) -> bool:
    """Whether this registry raises the account by its own policy: it set the account's lifetime last, and its
    policy now states more."""
    return account is not None and above(policy_rho, account) and account.registry_id == registry_id


def in_force(account: Lifetime | None, policy_rho: float, registry_id: str) -> float:
    """The lifetime a spend from this registry is checked against (a refused one: the account's)."""
    if account is None or own_raise(account, policy_rho, registry_id):
        return policy_rho
    return min(policy_rho, account.lifetime_rho)


def refusal(dataset: str, account: Lifetime, policy_rho: float, entry: str) -> BudgetError:
    """The one line (it fits the CLI's 300 characters) for a policy that states more than the dataset's account:
    the account's lifetime, when and through which registry it was set (``sdgov budget`` says how), and the
    controller's command that raises it."""
    return BudgetError(
        f"the account's lifetime ρ={account.lifetime_rho:.6g} (set {account.time[:10]}, registry "
        f"{account.registry_id[:8]}) is under this policy's {policy_rho:.6g}: a new registry is no new budget; "
        "refused before any draw",
        f"{POLICY_FILE}: {entry}",
        f"'{COMMAND} --dataset {dataset} --rho {policy_rho:g} --as NAME --key KEY', governed registry",
    )


def unset(dataset: str, governing: Governor) -> BudgetError:
    """The one line for a charge, from a registry that does not govern the authority, on an account whose lifetime
    the governing registry has not set."""
    return BudgetError(
        f"dataset {dataset!r} has no lifetime set through registry {governing.registry_id[:8]}, which governs the "
        "budget authority: no other registry sets it; refused before any draw",
        "the budget authority",
        f"a release through registry {governing.registry_id[:8]} sets it from its signed policy, or there "
        f"'{COMMAND} --dataset {dataset} --rho R --as CONTROLLER --key KEY'",
    )


def check_lifetime(
    registry: Registry, authority: Authority, fingerprint: str, name: str, policy_rho: float, entry: str
) -> None:
    """The pre-flight (:func:`sdgov.governance.policy.check_plan_allowed`): refuse (one line) a run whose registry's
    policy (``policy_rho``, from its ``entry``) states a higher lifetime than the dataset's account, before anything
    is written; the charge's own transaction checks it again."""
    account = authority.lifetime(fingerprint, name)
    rid = registry.registry_id()  # '' for a registry not created yet: it never set an account
    if above(policy_rho, account) and not own_raise(account, policy_rho, rid):
        assert account is not None
        raise refusal(name, account, policy_rho, entry)
