"""``sdgov budget``: the privacy budget per dataset under the controller's policy — spent and remaining ρ, the
account's lifetime in the controller's budget authority, and its ε over every release and each release's, the
privacy statements' figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sdgov.governance.policy import Policy
    from sdgov.governance.site import Site


@dataclass(frozen=True)
class BudgetOverview:
    """The controller's policy (and its sha256), where the accounts were read (``from_authority``: the controller's
    budget authority; else what this registry's log says), and one summary per dataset's account (with its
    ``privacy`` where the authority was readable)."""

    policy: Policy
    policy_sha256: str
    source: str
    from_authority: bool
    datasets: list[dict[str, Any]]


def budget_overview(site: Site) -> BudgetOverview:
    """Every dataset's account of the site's registry: from the budget authority where this process may read it
    (never an empty authority read as the controller's), with each one's ε over every release by the zCDP bound and
    by PLD at the policy's δ and its releases' statements; else as the registry's log recorded the spends. A registry
    without a policy is one line."""
    from sdgov.governance.ledger import ledger_summary, log_summary, whose_authority

    policy, sha = site.policy()
    events = site.registry.verified_events()
    readable, source = whose_authority(site, events)  # never an empty authority read as the controller's
    accounts = ledger_summary(site, events) if readable else log_summary(events)
    for a in accounts:
        if readable and "error" not in a:  # the ε figures need the controller's authority
            a["privacy"] = account_privacy_summary(site, policy, a)
    return BudgetOverview(policy, sha, source, readable, accounts)


def account_privacy_summary(site: Site, policy: Policy, a: dict[str, Any]) -> dict[str, Any]:
    """A dataset's ε now and its releases', as ``sdgov budget --json`` gives them (the statements' figures)."""
    from sdgov.governance.ledger import Account
    from sdgov.measurement.store import account_privacy

    account = Account.model_validate(a)
    delta, source = policy.limits(account.fingerprint, account.dataset)[0].rule().delta()
    epsilon, exact, releases = account_privacy(site, account, delta)
    return {
        "delta": delta,
        "delta_source": source,
        "epsilon": epsilon.model_dump(),
        "exact_measurements": [e.model_dump() for e in exact],
        "releases": [
            {"release_id": rid, "time": time, "statement": s.model_dump(mode="json")} for rid, time, s in releases
        ],
    }
