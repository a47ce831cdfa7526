"""The data controller's policy: one file, ``policy.yaml`` in the registry root, that every release must obey.

It is the controller's, not the analyst's: nothing in a spec or on the proposer's command line can loosen it.
A registry without one refuses every release (``sdgov init`` writes a sensible default to start from)::

    set_by: {name: Carl Controller, role: controller}
    defaults:                          # every dataset, unless overridden below
      lifetime_rho: 1.0                # zCDP ρ over every measurement ever drawn on the dataset
      max_epsilon_per_release: 2.0     # the ε of one release (all its statistics, reused or new)
      max_delta: null                  # δ of every release (a spec may only lower it); null: 1e-9
      public_max_records: null         # a public bound on the record count: δ = the power of ten below 1/bound
      sigma_floor: 10                  # every marginal gets σ ≥ 10 (raised to it, never refused)
      generators: [ipf, pgm]
      max_rows: 10000000               # synthetic records per release
      record_count_public: false       # N is not public: a spec may not ask for exactly N synthetic rows
      allow_exact_releases: false      # no 'noise: none' release (exact statistics, no DP guarantee)
    datasets:                          # overrides, keyed by the dataset's content fingerprint or its name label
      toyland_census: {lifetime_rho: 0.25}
      3f2a…(64 hex): {max_epsilon_per_release: 1.0}

Why these defaults:

- ``sigma_floor: 10`` — the ONS small-count rule the census examples use: with σ = 10 a count's noise has a
  95% interval of about ±20, so the small cells that carry most disclosure risk are dominated by noise whatever
  ε the analyst asks for; it also caps one marginal at ρ = 1/(2·10²) = 0.005. A floor *raises* σ (spending less),
  so it never refuses a release; the card says when it bound.
- ``lifetime_rho: 1.0`` — about ε ≈ 7.8 at δ = 10⁻⁵ over the dataset's whole life: room for dozens of ε = 1
  releases (the demo spends ρ ≈ 0.02), and since a statistic is measured once per noise scale, re-releases of the
  same tables cost nothing.
- ``max_epsilon_per_release: 2.0`` — twice the demo's ε = 1: one release cannot take a large bite at once.
- δ comes from this policy, never from the data (:meth:`Limits.rule`, the one rule of
  :class:`sdgov.budget.accounting.PrivacyRule`): δ = 10^-ceil(log10 N) would print the record count's order of
  magnitude on the card. By default it is fixed at 10⁻⁹ (below 1/N for any dataset
  under a billion records); ``public_max_records`` — a bound on N that is public anyway (a census's population,
  a register's published size) — gives the largest power of ten below 1/bound instead; ``max_delta`` sets it
  outright. The smallest of those that are set applies, and the card says which. A spec's ``privacy.delta`` may
  only lower it. δ < 1/N is still checked against the true count (a bound set too low is refused, without
  saying N).
- ``max_rows: 10,000,000`` — far above any census extract's size, low enough to stop a typo (10¹²) filling a disk.
- ``record_count_public: false`` — a synthetic file of exactly N rows publishes N, a figure of the confidential data:
  a spec asking for ``rows`` equal to the true record count is refused, unless the controller declares N public
  (a census whose population is published). Leaving ``rows`` out releases the noisy total, a DP figure.
- ``allow_exact_releases: false`` — ``privacy: {noise: none}`` measures the tables exactly: no DP guarantee for that
  release, and none for the dataset ever after (every later card says its privacy is spent, ε = ∞). Only a
  controller who declares the tables public anyway allows it, per dataset.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from pydantic import Field, PositiveFloat, PositiveInt

from sdgov.agreement.spec import Agreement
from sdgov.base.errors import PolicyError, RegistryError
from sdgov.base.hashing import sha256_file
from sdgov.base.loading import load_model_file
from sdgov.base.model import Frozen
from sdgov.budget.accounting import PrivacyPlan, PrivacyRule, plan_agreement
from sdgov.generators.registry import GENERATORS
from sdgov.governance.lifetime import check_lifetime
from sdgov.registry.commitment import ROTATE, secret_problem
from sdgov.registry.log import POLICY_FILE  # one name for the controller's policy file

if TYPE_CHECKING:
    from sdgov.governance.site import Site

DEFAULT_LIFETIME_RHO = 1.0
DEFAULT_MAX_EPSILON = 2.0
DEFAULT_SIGMA_FLOOR = 10.0
DEFAULT_MAX_ROWS = 10_000_000
TOLERANCE = 1e-9  # relative: a plan computed to exactly the cap must not be refused by float rounding


class SetBy(Frozen):
    name: str = Field(min_length=1)
    role: str = "controller"


class Limits(Frozen):
    """The limits that apply to one dataset (every field set)."""

    lifetime_rho: PositiveFloat = Field(description="lifetime zCDP budget ρ over every measurement on the dataset")
    max_epsilon_per_release: PositiveFloat
    max_delta: float | None = Field(
        default=None, gt=0, lt=1, description="δ of every release, the most a spec may ask for (null: 1e-9)"
    )
    public_max_records: PositiveInt | None = Field(
        default=None, description="a public upper bound on the dataset's record count: δ below 1/bound"
    )
    sigma_floor: PositiveFloat = Field(description="every marginal's σ is raised to at least this")
    generators: list[str] = Field(min_length=1)
    max_rows: PositiveInt
    record_count_public: bool = Field(
        default=False, description="the dataset's record count N is public: a spec may ask for exactly N rows"
    )
    allow_exact_releases: bool = Field(
        default=False, description="a spec may ask for noise: none (statistics declared public, no DP guarantee)"
    )

    def rule(self) -> PrivacyRule:
        """What these limits say about every release's privacy figures: the one rule each plan is made under."""
        return PrivacyRule(
            max_delta=self.max_delta, public_max_records=self.public_max_records, sigma_floor=self.sigma_floor
        )


class Override(Frozen):
    """A dataset's exceptions to the defaults (unset fields inherit them)."""

    lifetime_rho: PositiveFloat | None = None
    max_epsilon_per_release: PositiveFloat | None = None
    max_delta: float | None = Field(default=None, gt=0, lt=1)
    public_max_records: PositiveInt | None = None
    sigma_floor: PositiveFloat | None = None
    generators: list[str] | None = Field(default=None, min_length=1)
    max_rows: PositiveInt | None = None
    record_count_public: bool | None = None
    allow_exact_releases: bool | None = None
    note: str = ""


class Policy(Frozen):
    set_by: SetBy
    defaults: Limits
    datasets: dict[str, Override] = Field(default_factory=dict, description="fingerprint or name label → override")

    def limits(self, fingerprint: str, name: str) -> tuple[Limits, str]:
        """The limits for a dataset and which entry set them ('defaults', or the matching key). A fingerprint
        entry wins over a name-label entry: the content is the identity, the name only a label."""
        key = fingerprint if fingerprint in self.datasets else name if name in self.datasets else None
        if key is None:
            return self.defaults, "defaults"
        over = self.datasets[key].model_dump(exclude_none=True, exclude={"note"})
        return self.defaults.model_copy(update=over), f"datasets.{key}"


def policy_path(root: str | Path) -> Path:
    """Where the controller's policy lives, ``ROOT/policy.yaml`` (whether or not it exists)."""
    return Path(root) / POLICY_FILE


def load_policy(root: str | Path) -> tuple[Policy, str]:
    """The controller's policy and its sha256; a registry without one refuses every release."""
    path = policy_path(root)
    if not path.is_file():
        raise PolicyError(
            "no controller policy: this registry has no policy.yaml, so no release may use it",
            str(path),
            f"the data controller runs 'sdgov init --root {Path(root)}' and reviews the policy it writes",
        )
    policy = load_model_file(Policy, path, PolicyError, "controller policy")
    unknown = sorted({g for g in policy.defaults.generators if g not in GENERATORS})
    for entry in policy.datasets.values():
        unknown += sorted({g for g in entry.generators or [] if g not in GENERATORS})
    if unknown:
        raise PolicyError(
            f"the policy allows unknown generator(s) {sorted(set(unknown))}",
            str(path),
            f"list registered generators only: {sorted(GENERATORS)}",
        )
    return policy, sha256_file(path)


def default_policy_text(controller: str) -> str:
    """The policy ``sdgov init`` writes: the defaults above, with a comment on every line."""
    body = {
        "set_by": {"name": controller, "role": "controller"},
        "defaults": {
            "lifetime_rho": DEFAULT_LIFETIME_RHO,
            "max_epsilon_per_release": DEFAULT_MAX_EPSILON,
            "max_delta": None,
            "public_max_records": None,
            "sigma_floor": DEFAULT_SIGMA_FLOOR,
            "generators": sorted(GENERATORS),
            "max_rows": DEFAULT_MAX_ROWS,
            "record_count_public": False,
            "allow_exact_releases": False,
        },
        "datasets": {},
    }
    Policy.model_validate(body)  # what init writes must load
    return (
        "# The data controller's release policy for this registry (see docs/operators.md).\n"
        "# defaults apply to every dataset; 'datasets' overrides them per dataset, keyed by the content fingerprint\n"
        "# ('sdgov budget' prints it) or by the dataset's name label, e.g.\n"
        "#   datasets: {toyland_census: {lifetime_rho: 0.25, note: demo data}}\n"
        "# lifetime_rho: zCDP ρ over every measurement ever drawn on a dataset (1.0 ≈ ε 7.8 at δ=1e-5)\n"
        "# max_epsilon_per_release: ε of one release; max_delta: δ of every release (null: 1e-9, never from N)\n"
        "# public_max_records: a public bound on the record count; δ becomes the power of ten below 1/bound\n"
        "# sigma_floor: every marginal's noise scale is raised to at least this (ONS small-count rule)\n"
        "# record_count_public: the record count N is public, so a spec may ask for exactly N synthetic rows\n"
        "# allow_exact_releases: a spec may ask for noise: none (exact tables, no DP guarantee; every later card of\n"
        "#   the dataset says its privacy is spent) — set it per dataset, for tables that are public anyway\n"
        + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
    )


def init_policy(root: str | Path, controller: str = "Data Controller") -> tuple[Path, bool]:
    """Write the default policy into ``root`` (created if need be); an existing policy is kept as it is.
    Returns the path and whether it was written now."""
    from sdgov.base.atomic import atomic_write_bytes

    path = policy_path(root)
    if path.exists():
        return path, False
    if Path(root).exists() and not Path(root).is_dir():
        raise PolicyError("the registry root is not a directory", str(root), "pass a directory to --root")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, default_policy_text(controller).encode())
    return path, True


def planned(limits: Limits, agreement: Agreement) -> PrivacyPlan:
    """The release's privacy plan under the controller's rule (δ and σ floor): the one plan every stage uses."""
    return plan_agreement(agreement, limits.rule())


def rows_warning(agreement: Agreement, n_records: int) -> str | None:
    """For the data controller only (never the card): a spec asking for exactly N synthetic rows would publish the
    true record count; the default (``rows`` left out) is ψ's noisy total."""
    if agreement.rows is None or agreement.rows != n_records:
        return None
    return (
        f"the spec asks for rows = {agreement.rows:,}, exactly the confidential dataset's true record count: the "
        "published synthetic file would state N. Ask the analyst to leave 'rows' out (the default is the noisy "
        "total of the measured tables) or to choose another number"
    )


def check_release(
    limits: Limits, entry: str, agreement: Agreement, plan: PrivacyPlan, n_records: int, where: str
) -> None:
    """Refuse (one line) a release the policy does not allow. Called before anything is written or drawn, and
    again under the registry lock just before the draw (the policy may have changed in between)."""
    at = f"{where}: {entry}"
    if agreement.generator.name not in limits.generators:
        raise PolicyError(
            f"generator {agreement.generator.name!r} is not allowed by the controller's policy",
            at,
            f"use one of {limits.generators}, or ask the data controller to allow it",
        )
    if agreement.rows is not None and agreement.rows == n_records and not limits.record_count_public:
        raise PolicyError(
            f"rows = {agreement.rows:,} is the confidential dataset's true record count: the synthetic file would "
            "publish it",
            at,
            "leave 'rows' out (the noisy total of the measured tables is released) or ask for another number; or "
            "the data controller declares the count public (record_count_public: true)",
        )
    if plan.noise == "none" and not limits.allow_exact_releases:
        raise PolicyError(
            "privacy noise 'none' measures the tables exactly and releases them with no privacy guarantee; the "
            "controller's policy does not allow exact releases",
            at,
            "give the spec a budget (epsilon, rho or sigma), or ask the data controller to declare these tables "
            "public (allow_exact_releases: true for this dataset)",
        )
    rows = agreement.rows if agreement.rows is not None else n_records  # default: about the noisy total, ≈ N
    if rows > limits.max_rows:
        asked = f"{rows:,} synthetic rows" if agreement.rows is not None else "the noisy total (the default rows)"
        raise PolicyError(
            f"{asked} would exceed the policy's max_rows of {limits.max_rows:,}",
            at,
            "ask for fewer rows, or ask the data controller to raise max_rows",
        )
    if plan.noise == "none":
        return
    assert plan.delta is not None and plan.epsilon is not None  # a noisy plan has both
    max_delta, _ = limits.rule().delta()
    if plan.delta > max_delta * (1 + TOLERANCE):
        raise PolicyError(
            f"δ = {plan.delta:g} exceeds the policy's δ = {max_delta:g}",
            at,
            "leave 'privacy.delta' out (the policy's δ applies) or lower it",
        )
    if plan.delta >= 1.0 / n_records:  # a controller's public bound set below the true count: say so, not N
        raise PolicyError(
            f"δ = {plan.delta:g} is not below 1/N for this dataset (a δ that large allows releasing a record outright)",
            at,
            "the data controller lowers max_delta, or raises public_max_records to a true bound on the record count",
        )
    if plan.epsilon > limits.max_epsilon_per_release * (1 + TOLERANCE):
        raise PolicyError(
            f"this release's ε = {plan.epsilon:.4g} exceeds the policy's max_epsilon_per_release of "
            f"{limits.max_epsilon_per_release:g}",
            at,
            "lower the spec's budget (ε, ρ, or raise σ), or ask the data controller to raise the limit",
        )


def check_plan_allowed(site: Site, agreement: Agreement, fingerprint: str, name: str, n_records: int) -> PrivacyPlan:
    """Everything the policy can refuse, checked before a run writes anything: a registry with no policy, the
    generator, the row count, δ and the release's ε (under the controller's σ floor), and a lifetime above the
    dataset's account in the controller's budget authority (:mod:`sdgov.governance.lifetime`); and a commitment
    secret missing or replaced (:func:`sdgov.registry.commitment.secret_problem`: no release until it is restored
    or rotated). Returns the plan."""
    if (secret := secret_problem(site.registry)) is not None:
        raise RegistryError(
            secret, str(site.keys.secret_path(site.registry.registry_id())), f"restore it, or rotate it: '{ROTATE}'"
        )
    policy, _ = load_policy(site.root)
    limits, entry = policy.limits(fingerprint, name)
    plan = planned(limits, agreement)
    check_release(limits, entry, agreement, plan, n_records, str(policy_path(site.root)))
    if plan.noise != "none":  # exact statistics spend nothing: no account to answer to
        check_lifetime(site.registry, site.authority, fingerprint, name, limits.lifetime_rho, entry)
    return plan
