"""The release spec and the agreement it resolves to: the models, validated and hashable.

A spec names the dataset and its schema, the agreed marginals Φ (explicit attribute sets and "all k-way"
shorthands), the privacy budget, the generator, the row count, the public sampling seed and the audits it
pre-registers. :func:`sdgov.agreement.load.load_spec` reads one; :func:`sdgov.agreement.resolve.resolve` checks it
against the schema and canonicalises it into an :class:`Agreement`, whose sha256 identifies the agreement in every
artifact, log entry and card.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

from pydantic import (
    ConfigDict,
    Field,
    PositiveInt,
    field_validator,
    model_validator,
)

from sdgov.agreement.sections import Sectioned
from sdgov.agreement.sections.tasks import TaskSpec
from sdgov.base.hashing import sha256_json
from sdgov.base.model import Frozen
from sdgov.data.schema import Clique, nfc
from sdgov.generators.settings import GeneratorSpec

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_CELL_LIMIT = 1_000_000  # ONS: no agreed table above a million cells
DEFAULT_SELECTION_SHARE = 0.2  # of ρ, 1-ways + selection (issue 40: measured against 2/3, 0.1 and 0.3)
DEFAULT_EXTRA = 48  # MST's extra rounds, at most: on the census the model bound ends them first (issue 40)
DEFAULT_PAIR_SCORE = "debiased_one_ways"  # MST's pair score when a draft states none (issue 40: Adult's accuracy)
DEFAULT_SELECTION_MODEL_CELLS = 250_000  # the extras' model bound: an exact fit of seconds (issue 16)
DEFAULT_CELLS_EXPONENT = 1 / 3  # MST's Φ: a marginal's weight is its cells^(1/3) (issue 40: against 0, 1/4, 1/2, 2/3)
DEFAULT_DOMAIN_LIMIT = 2_000_000_000  # ONS: cells of every table the model holds (PGM cliques / IPF joint)
MAX_ROWS = 1_000_000_000  # synthetic rows a spec may ask for (10^12 would run for days after the spend)
MAX_MARGINALS = 10_000  # agreed marginals (the nesting check is quadratic in them)

PositiveFinite = Annotated[float, Field(gt=0, le=1e12, allow_inf_nan=False)]
"""A privacy number (ρ, ε, σ, a weight): positive and finite — NaN, ±inf and 1e300 are refused at load."""


class DatasetRef(Frozen):
    name: str = Field(min_length=1, description="Declared name of the confidential dataset (the budget ledger key)")
    path: str = Field(min_length=1, description="CSV path, relative to the spec file")

    @field_validator("name")
    @classmethod
    def _nfc(cls, name: str) -> str:
        return nfc(name)

    @field_validator("path")
    @classmethod
    def _plain_path(cls, path: str) -> str:
        if any(ord(c) < 32 for c in path):
            raise ValueError("the path holds a control character (a NUL or a line break)")
        return path


class KWay(Frozen):
    k: PositiveInt
    attributes: list[str] = Field(min_length=1)

    @field_validator("attributes")
    @classmethod
    def _nfc(cls, names: list[str]) -> list[str]:
        return [nfc(n) for n in names]


class PhiSpec(Frozen):
    marginals: list[list[str]] = Field(default_factory=list, max_length=MAX_MARGINALS)
    all_kway: list[KWay] = Field(default_factory=list)

    @field_validator("marginals")
    @classmethod
    def _nfc(cls, marginals: list[list[str]]) -> list[list[str]]:
        return [[nfc(n) for n in m] for m in marginals]

    @model_validator(mode="after")
    def _nonempty(self) -> PhiSpec:
        if not self.marginals and not self.all_kway:
            raise ValueError("Φ is empty: give 'marginals' and/or 'all_kway'")
        return self


class SelectionSpec(Frozen):
    """Private selection of Φ (MST or AIM): a declared share of the release's ρ measures the 1-way marginals of Φ
    and picks the marginals to add with the exponential mechanism (:mod:`sdgov.measurement.selection.mst`,
    :mod:`sdgov.measurement.selection.aim`). In the agreement hash, so the 1-ways' σ — which the measurement stage must
    reuse,
    not draw again — is fixed by the agreement."""

    method: Literal["mst", "aim"] = "mst"
    share: float = Field(
        default=DEFAULT_SELECTION_SHARE, gt=0, lt=1, description="share of ρ: 1-way measurements + selection"
    )
    one_way: float = Field(default=0.5, gt=0, lt=1, description="part of the share spent measuring the 1-ways")
    scores: float = Field(
        default=0.1, ge=0, lt=1, description="part of the rest spent on the noisy scores shown to reviewers"
    )
    extra: int | None = Field(
        default=None,
        ge=0,
        le=1000,
        exclude_if=lambda v: v is None,
        description=f"MST: cliques selected beyond the spanning tree, at most (default {DEFAULT_EXTRA}; pairs, then "
        "triples; within the model bound; the triple rounds stop once no triple pays for its noise)",
    )
    force: list[list[str]] = Field(default_factory=list, description="pairs always in Φ (stakeholders' knowledge)")
    exclude: list[list[str]] = Field(default_factory=list, description="pairs never in Φ")
    triples: bool = Field(
        default=True,
        description="triples are candidates too (AIM: in every round; MST: in the rounds after the tree), within the "
        "cell limit and none holding an excluded pair",
    )
    pair_score: Literal["noisy_one_ways", "exact_margins", "debiased_one_ways"] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,  # absent: same hash as before; the selection then scores as DEFAULT_PAIR_SCORE
        description="MST: a pair's score, the L1 distance of its exact table from independence — the product of the "
        "noisy 1-ways (sensitivity 1; their noise inflates the score of a pair with many sparse cells), that less "
        "the noise the 1-ways' σ is expected to add (debiased_one_ways, the default: released figures only), or "
        "the product of the table's own exact margins (sensitivity 4, paid in the mechanism)",
    )
    model_cells: PositiveInt = Field(
        default=DEFAULT_SELECTION_MODEL_CELLS,
        description="MST: the extra cliques keep the model within this many cells (and within limits), so the fit "
        "stays exact and cheap",
    )
    weigh_by_cells: float | None = Field(
        default=None,
        ge=0,
        le=1,
        exclude_if=lambda v: v is None,  # absent: the method's default (:attr:`cells_exponent`)
        description="each selected marginal's weight (its share of the measurement budget) is its cells to this "
        f"power: 0 gives every marginal the same σ; absent: {DEFAULT_CELLS_EXPONENT:.3g} for MST, 0 for AIM; the "
        "agreement states the weights in privacy.weights",
    )
    rounds: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        exclude_if=lambda v: v is None,  # absent: same hash as before
        description="AIM: the rounds its budget is first planned for (default 16 × attributes; annealing ends sooner)",
    )

    @field_validator("force", "exclude")
    @classmethod
    def _pairs(cls, edges: list[list[str]]) -> list[list[str]]:
        if any(len(e) != 2 or e[0] == e[1] for e in edges):
            raise ValueError("each edge is a pair of two different attributes")
        return [[nfc(n) for n in e] for e in edges]

    @model_validator(mode="after")
    def _method_options(self) -> SelectionSpec:
        if self.method == "mst" and self.rounds is not None:
            raise ValueError("'rounds' is AIM's option: give method: aim, or drop it")
        if self.method == "aim" and self.extra:
            raise ValueError("'extra' is MST's option (pairs beyond the tree): AIM picks rounds until its budget ends")
        if self.method == "aim" and self.pair_score is not None:
            raise ValueError("'pair_score' is MST's option: AIM scores candidates by its model's error")
        return self

    @property
    def pair_scoring(self) -> str:
        """MST's pair score: ``pair_score``, or :data:`DEFAULT_PAIR_SCORE` when not given."""
        return self.pair_score or DEFAULT_PAIR_SCORE

    @property
    def cells_exponent(self) -> float:
        """The power of its cells that weighs each selected marginal: ``weigh_by_cells``, or by method when not
        given — :data:`DEFAULT_CELLS_EXPONENT` for MST, 0 (equal σ) for AIM, whose rounds measured at their own σ."""
        if self.weigh_by_cells is not None:
            return self.weigh_by_cells
        return DEFAULT_CELLS_EXPONENT if self.method == "mst" else 0.0

    @property
    def extra_rounds(self) -> int:
        """MST's rounds after the tree, at most: ``extra``, or :data:`DEFAULT_EXTRA` when not given."""
        return DEFAULT_EXTRA if self.extra is None else self.extra


class PrivacySpec(Frozen):
    """Exactly one of ``rho``, ``epsilon`` or ``sigma`` with ``noise: gaussian``; none with ``noise: none``."""

    noise: Literal["gaussian", "none"] = "gaussian"
    rho: PositiveFinite | None = None
    epsilon: PositiveFinite | None = None
    delta: float | None = Field(default=None, gt=0, lt=1, allow_inf_nan=False)
    sigma: PositiveFinite | None = Field(default=None, description="fixed noise scale for every marginal")
    sigma_floor: PositiveFinite | None = Field(default=None, description="ONS small-count rule: σ ≥ floor")
    weights: dict[str, Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)]] = Field(
        default_factory=dict, description="'A,B' → share of the budget (each at most 10^6: a ratio, not a count)"
    )
    selection: SelectionSpec | None = Field(default=None, exclude_if=lambda v: v is None)  # absent: same hash

    @model_validator(mode="after")
    def _one_budget(self) -> PrivacySpec:
        given = [k for k in ("rho", "epsilon", "sigma") if getattr(self, k) is not None]
        if self.noise == "none":
            if given or self.sigma_floor is not None:
                raise ValueError(f"noise 'none' takes no budget, but {given or ['sigma_floor']} given")
        elif len(given) != 1:
            raise ValueError(f"give exactly one of rho, epsilon, sigma (got {given or 'none'})")
        if self.sigma is not None and self.weights:
            raise ValueError("'weights' split a budget; with a fixed 'sigma' there is none to split")
        if self.selection is not None and (self.noise == "none" or self.sigma is not None):
            raise ValueError("'selection' spends a share of a budget: give rho or epsilon, not sigma or noise none")
        return self


class SplitPart(Frozen):
    """One part of a split synthesis: the records whose split attribute holds one of ``codes``, with its own Φ."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    codes: list[int | str] = Field(min_length=1, description="the split attribute's codes of this part")
    phi: PhiSpec
    share: PositiveFinite = Field(default=1.0, description="share of a ρ budget (a fixed σ applies to every part)")


class SplitSpec(Frozen):
    """Split synthesis (ONS: census-only and linked records as two models): one model per part, concatenated."""

    attribute: str = Field(min_length=1)
    parts: list[SplitPart] = Field(min_length=2, max_length=100)

    @field_validator("attribute")
    @classmethod
    def _nfc(cls, name: str) -> str:
        return nfc(name)


class LimitsSpec(Frozen):
    max_marginal_cells: PositiveInt = DEFAULT_CELL_LIMIT
    max_model_cells: PositiveInt = DEFAULT_DOMAIN_LIMIT
    max_exact_cells: PositiveInt | None = Field(
        default=None,
        exclude_if=lambda v: v is None,  # absent: same hash as before
        description="the fit's time budget, as a model size: above it, 'auto' inference resolves to approximate "
        "(a size, not seconds, so the choice is the same on every machine and recorded in the agreement)",
    )

    def exact_cells(self) -> int:
        """The largest model fitted exactly: what private selection's extra pairs stay within."""
        return min(self.max_model_cells, self.max_exact_cells or self.max_model_cells)


Text = Annotated[str, Field(min_length=1, max_length=2000, pattern=r"\S")]


class ModelCardSpec(Frozen):
    """What the card must state about who answers for a release and what it is for (a model card's fields).

    Required for a release (:func:`sdgov.intake.preflight.check_model_card` refuses one without it, before any noise is
    drawn), not for the checks and reports that never publish. Not part of the agreement hash: it describes the
    release, it does not change what is measured. The plain-language reading of ε is written by sdgov from the
    privacy plan, so it always matches the guarantee."""

    contact: Text = Field(description="responsible contact for questions about the release (name, e-mail)")
    data_controller: Text = Field(description="the organisation that controls the confidential data")
    licence: Text = Field(description="the licence under which the synthetic data is released")
    intended_users: Text = Field(description="who the synthetic data is for")
    out_of_scope: list[Text] = Field(min_length=1, description="uses the synthetic data must not be put to")
    review_by: date = Field(description="expiry / review date: the release is to be reviewed or withdrawn by then")


class ReleaseSpec(Sectioned):
    """A release spec as written. The audits it pre-registers (``audit:``, ``privacy_risk:``: every section of
    :data:`sdgov.agreement.sections.SECTIONS`) are top-level keys, held in ``sections``."""

    _sections_after: ClassVar[str] = "approvals"
    _absent_sections: ClassVar[bool] = True
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    dataset: DatasetRef
    schema_path: str = Field(alias="schema", min_length=1, pattern=r"^[^\x00-\x1f]+$")
    attributes: list[str] | None = Field(default=None, description="modelled columns; default all in Φ")
    phi: PhiSpec | None = None  # None only with 'split', where each part has its own Φ
    split: SplitSpec | None = Field(default=None, exclude_if=lambda v: v is None, description="sdgov.synthesis.split")
    privacy: PrivacySpec
    generator: GeneratorSpec = GeneratorSpec()
    rows: PositiveInt | None = Field(default=None, le=MAX_ROWS, description="synthetic rows; default: the noisy total")
    seed: int = Field(ge=0, lt=2**63, description="public sampling seed (recorded; unlike the noise, which has none)")
    limits: LimitsSpec = LimitsSpec()
    engine: Literal["duckdb", "dask"] = Field(
        default="duckdb",
        description="what reads and counts the data: embedded DuckDB, or Dask on a cluster (sdgov.engines); "
        "the counts are the same bits, so it is not part of the agreement",
    )
    approvals: str | None = Field(
        default=None, pattern=r"^[^\x00-\x1f]+$", description="standing-approval file, relative to the spec"
    )
    model_card: ModelCardSpec | None = Field(default=None, description="contact, controller, licence, uses, review")
    selection_review: str | None = Field(
        default=None,
        pattern=r"^[^\x00-\x1f]+$",
        exclude_if=lambda v: v is None,
        description="the reviewed private selection this Φ came from (sdgov propose --select), drawn on the card",
    )
    tasks: list[TaskSpec] = Field(
        default_factory=list,
        description="named utility tasks the analyst agreed with the controller (evaluated in the utility report)",
    )
    """``tasks`` are deliberately NOT part of the :class:`Agreement` (nor its hash): they say how the release will be
    *judged*, not what is measured or released. Φ, the noise and the synthetic data do not depend on them, and the
    noise for one agreement is drawn only once — so adding or refining a task must not turn into a new agreement
    that re-spends budget. They are bound instead to the utility report, which records them with their own
    ``tasks_sha256`` beside the agreement hash (and the spec file's hash is in the provenance)."""

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("attributes")
    @classmethod
    def _nfc(cls, names: list[str] | None) -> list[str] | None:
        return None if names is None else [nfc(n) for n in names]

    @model_validator(mode="after")
    def _phi_or_split(self) -> ReleaseSpec:
        if (self.phi is None) == (self.split is None):
            raise ValueError("give 'phi' (one model) or 'split' (one model per part, each with its own phi), not both")
        return self


class AgreedPart(Frozen):
    """One part of a split agreement: the records whose split attribute is in ``codes`` (cell indices ``cells``),
    with their own Φ, budget share and generator settings — an ordinary agreement on those records."""

    name: str
    codes: list[str]  # the split attribute's codes, as the schema writes them
    cells: list[int]  # their cell indices (the filter the measure stage scans with)
    attributes: list[str]
    cliques: list[Clique]
    privacy: PrivacySpec
    generator: GeneratorSpec


class AgreedSplit(Frozen):
    """A split synthesis as agreed: one model per part of the records, concatenated on release."""

    attribute: str
    parts: list[AgreedPart]

    def records(self, part: AgreedPart) -> dict[str, object]:
        """The part's defining filter, as the draw-once store keys its statistics by."""
        return {"attribute": self.attribute, "codes": sorted(part.codes)}

    def part(self, name: str) -> AgreedPart:
        """The part named ``name``; ``StopIteration`` if the split has none."""
        return next(p for p in self.parts if p.name == name)


class Agreement(Sectioned):
    """The canonical, resolved Φ agreement. Its hash is what everybody signs.

    A split agreement (``split``) holds one Φ per part; ``cliques`` is then the union of the parts' Φ and
    ``attributes`` every released column (the parts' and the split attribute). The pre-registered audit sections
    (``sections``) are written after ``limits``, each under its own key and only when given: absent, same hash."""

    _sections_after: ClassVar[str] = "limits"

    spec_name: str
    description: str
    dataset_name: str
    schema_name: str
    schema_sha256: str
    attributes: list[str]
    cliques: list[Clique]
    privacy: PrivacySpec
    generator: GeneratorSpec
    rows: int | None
    seed: int
    limits: LimitsSpec
    split: AgreedSplit | None = Field(default=None, exclude_if=lambda v: v is None)  # absent: same hash

    def sha256(self) -> str:
        """Hex SHA-256 of the agreement's canonical JSON: the hash every sign-off binds (absent sections: the same)."""
        return sha256_json(self.model_dump(mode="json"))

    def records_of(self, part: str | None, codes: pd.DataFrame) -> pd.DataFrame:
        """The encoded records part ``part`` of a split synthesis counts, in memory (all of ``codes`` for one model,
        ``part`` None): what that part's selection and its standalone audits read, and nothing else."""
        from sdgov.data.tables import records_where

        if self.split is None or part is None:
            return codes
        return records_where(codes, self.split.attribute, self.split.part(part).cells)

    def of_part(self, part: AgreedPart) -> Agreement:
        """The ordinary agreement of one part of a split (its Φ, budget share and generator, on its records): what
        that part's model is fitted to, and what each pre-registered audit tests for that part."""
        return self.model_copy(
            update={
                "spec_name": f"{self.spec_name}.{part.name}",
                "attributes": part.attributes,
                "cliques": part.cliques,
                "privacy": part.privacy,
                "generator": part.generator,
                "split": None,
            }
        )
