"""The decomposability test's settings: one model that is both the spec's pre-registered ``audit:`` section and what
the test runs with (``sdgov audit decomposability`` overrides a few fields on the command line)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, PositiveInt, field_validator

from sdgov.agreement.code_names import validated_name
from sdgov.base.model import Frozen, unstated_at_default

MAX_K = 1_000  # 4·K generator fits (plus as many for the positive control): 2^40 would never end
MAX_ROWS = 1_000_000_000
POPULATION_ROWS = 100_000  # the default pool of confidential records the extremal datasets are built from
EXPLICIT_MAX_CELLS = 20_000  # joint cells up to which Φ⊥ is handled exactly (its interaction decomposition)

Params = dict[str, float | int | str | bool | list[str]]


class DecomposabilitySettings(Frozen):
    """Pre-registered settings of the black-box decomposability test (Houssiau et al. 2022).

    Part of the agreement hash when given (they are fixed before anyone sees a p-value); absent specs hash as before.
    Writing the section pre-registers the test and runs it inside the release's audit stage (it fits the generator
    4·K times, and as often again for the positive control); ``enabled: false`` keeps the settings for the command
    line only.
    """

    enabled: bool = True
    generator: str | None = Field(
        default=None,
        description="a registered audit generator's name (sdgov.agreement.code_names); default: the honest "
        "audit variant of the spec's generator (honest_pgm / honest_ipf)",
    )
    generator_params: Params = Field(
        default_factory=dict, description="default for the shipped variants: the spec's generator iterations"
    )
    alpha: float = Field(0.05, gt=0, lt=1, allow_inf_nan=False, description="pre-registered significance level")
    K: int = Field(10, ge=2, le=MAX_K, description="fits per extremal dataset, in each phase")
    rows: PositiveInt | None = Field(
        None, le=MAX_ROWS, description="synthetic rows per fit; default 10 × the records of D*"
    )
    seed: int = Field(0, ge=0, lt=2**63)
    population_rows: PositiveInt = unstated_at_default(  # unset, it leaves the pre-registered settings' hash unchanged
        POPULATION_ROWS,
        description="confidential records the extremal datasets are built from: all of them up to this many, a "
        "fixed uniform sample beyond (the test is of the generator: at census scale, 10 × 55M rows per fit would "
        "never end, and the sample's Φ marginals serve as well)",
    )
    candidate_basis: PositiveInt = Field(
        1000,
        description="large tables: most cells screened per minimal non-Φ marginal — every set is screened, each "
        "through all its cells up to this many (a larger set through this many seeded cells of its own); "
        "Application 3's 35 three-way sets hold 17,799 cells, the largest 1,040",
    )
    beta_star_alpha: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="family-wise level (Holm) at which the result reports the interaction sets whose phase-1 "
        "response exceeds chance; β* uses the most significant one",
    )
    beta_star_permutations: int = Field(1999, ge=99, description="relabellings of the phase-1 fits per set test")
    move_pool: PositiveInt = Field(200_000, description="most integer moves considered for extremal datasets")
    explicit_max_cells: PositiveInt = Field(
        EXPLICIT_MAX_CELLS,
        description="joint tables up to this many cells use the exact interaction decomposition of Φ⊥ (else the "
        "interaction spaces of the minimal non-Φ marginals)",
    )
    phi_residual: bool = Field(
        True,
        exclude_if=lambda v: v is True,
        description="small tables: test each fit's joint net of its own Φ-only model (the maximum-entropy joint with "
        "its own Φ marginals), so that noise the generator draws outside the audit's seed adds nothing to the null "
        "(issue 37); false: the raw joint, as before",
    )
    positive_control: str | None = Field(
        None, description="a registered name of a dishonest generator run beside (e.g. dishonest_pgm)"
    )
    control_params: Params = Field(default_factory=dict, description="the positive control's generator params")

    @field_validator("generator", "positive_control")
    @classmethod
    def _registered(cls, name: Any) -> Any:
        """Code is named by its registered name, looked up exactly (nothing is imported here)."""
        return validated_name(name)

    @field_validator("generator_params", "control_params")
    @classmethod
    def _registered_base(cls, params: Any) -> Any:
        """A wrapped control's ``base`` generator is code too: a registered name."""
        if isinstance(params, dict) and params.get("base") is not None:
            validated_name(params["base"])
        return params
