"""The release spec: the agreement Φ between analyst and data controller, as a validated, hashable object.

A spec names the dataset and its schema, the agreed marginals Φ (explicit attribute sets and "all k-way"
shorthands), the privacy budget, the generator, the row count and the public sampling seed. ``resolve_spec``
checks it against the schema and canonicalises it into an :class:`Agreement` whose sha256 identifies the
agreement in every artifact, log entry and card.
"""

from __future__ import annotations

import itertools
from datetime import date
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

from sdgov.agreement.sections.decomposability import DecomposabilitySettings
from sdgov.agreement.sections.privacy_risk import PrivacyRiskSettings
from sdgov.agreement.sections.tasks import TaskSpec, check_tasks
from sdgov.base.errors import SpecError
from sdgov.base.hashing import sha256_json
from sdgov.base.loading import load_model_file
from sdgov.base.model import Frozen
from sdgov.data.schema import Clique, Column, Schema, load_schema, nfc, repeated
from sdgov.data.structures import zeros_within
from sdgov.generators.registry import GENERATORS, generator, registered_names

DEFAULT_CELL_LIMIT = 1_000_000  # ONS: no agreed table above a million cells
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
    share: float = Field(default=2 / 3, gt=0, lt=1, description="share of ρ: 1-way measurements + selection")
    one_way: float = Field(default=0.5, gt=0, lt=1, description="part of the share spent measuring the 1-ways")
    scores: float = Field(
        default=0.1, ge=0, lt=1, description="part of the rest spent on the noisy scores shown to reviewers"
    )
    extra: int = Field(
        default=0, ge=0, le=1000, description="pairs selected beyond the spanning tree (within the domain limit)"
    )
    force: list[list[str]] = Field(default_factory=list, description="pairs always in Φ (stakeholders' knowledge)")
    exclude: list[list[str]] = Field(default_factory=list, description="pairs never in Φ")
    triples: bool = Field(
        default=False,
        exclude_if=lambda v: not v,  # absent: same hash as before
        description="AIM: triples are candidates too (within the cell limit, none holding an excluded pair)",
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
        if self.method == "mst" and (self.triples or self.rounds is not None):
            raise ValueError("'triples' and 'rounds' are AIM's options: give method: aim, or drop them")
        if self.method == "aim" and self.extra:
            raise ValueError("'extra' is MST's option (pairs beyond the tree): AIM picks rounds until its budget ends")
        return self


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


class GeneratorSpec(Frozen):
    name: str = Field(default="pgm", description="a generator registered in sdgov.generators.registry")
    iterations: PositiveInt = Field(default=2000, le=1_000_000)
    inference: Literal["auto", "exact", "approximate"] = Field(
        default="auto",
        exclude_if=lambda v: v == "auto",  # absent: same hash as before
        description="pgm: 'auto' resolves to approximate when the junction tree exceeds the domain limit "
        "(limits.max_model_cells) or the exact-inference limit (limits.max_exact_cells)",
    )

    @field_validator("name")
    @classmethod
    def _registered(cls, name: str) -> str:
        if name not in GENERATORS:
            raise ValueError(f"unknown generator {name!r}: use {registered_names()}")
        return name


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


class ReleaseSpec(Frozen):
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
    audit: DecomposabilitySettings | None = Field(default=None, description="pre-registered decomposability test")
    privacy_risk: PrivacyRiskSettings | None = Field(default=None, description="pre-registered privacy-risk audit")
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
        return next(p for p in self.parts if p.name == name)


class Agreement(Frozen):
    """The canonical, resolved Φ agreement. Its hash is what everybody signs.

    A split agreement (``split``) holds one Φ per part; ``cliques`` is then the union of the parts' Φ and
    ``attributes`` every released column (the parts' and the split attribute)."""

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
    audit: DecomposabilitySettings | None = Field(default=None, exclude_if=lambda v: v is None)  # absent: same hash
    privacy_risk: PrivacyRiskSettings | None = Field(default=None, exclude_if=lambda v: v is None)
    split: AgreedSplit | None = Field(default=None, exclude_if=lambda v: v is None)  # absent: same hash

    def sha256(self) -> str:
        return sha256_json(self.model_dump(mode="json"))


class LoadedSpec(BaseModel):
    """A spec with its files resolved: what the agree stage works from."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)
    spec: ReleaseSpec
    spec_path: Path
    schema_: Schema = Field(alias="schema")
    schema_file: Path
    data_path: Path
    approvals_path: Path | None
    agreement: Agreement

    @property
    def selection_review_path(self) -> Path | None:
        """The reviewed selection's record (relative to the spec), if the spec names one."""
        sel = self.spec.selection_review
        return None if sel is None else resolved(self.spec_path.parent / sel, f"{self.spec_path}: selection_review")


def resolved(path: str | Path, where: str = "") -> Path:
    """``path`` made absolute; a symlink loop or an unusable name is one :class:`SpecError` line."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: Python 3.11's "Symlink loop from ..."
        raise SpecError(
            f"the path cannot be resolved ({getattr(exc, 'strerror', None) or exc})",
            where or str(path),
            "check the path (a symlink loop? a name too long?)",
        ) from None


def load_spec(path: str | Path) -> LoadedSpec:
    path = resolved(path)
    spec = load_model_file(ReleaseSpec, path, SpecError, "release spec")
    base = path.parent
    schema_file = resolved(base / spec.schema_path, f"{path}: schema")
    schema = load_schema(schema_file)
    agreement = resolve(spec, schema, where=str(path))
    check_tasks(spec.tasks, schema, agreement.attributes, where=str(path))
    approvals = resolved(base / spec.approvals, f"{path}: approvals") if spec.approvals else None
    return LoadedSpec(
        spec=spec,
        spec_path=path,
        schema=schema,
        schema_file=schema_file,
        data_path=resolved(base / spec.dataset.path, f"{path}: dataset.path"),
        approvals_path=approvals,
        agreement=agreement,
    )


def resolve(spec: ReleaseSpec, schema: Schema, where: str = "spec") -> Agreement:
    """Check Φ against the schema and canonicalise it (schema column order, sorted cliques)."""
    order = {name: i for i, name in enumerate(schema.names)}

    def check_attrs(attrs: list[str], ctx: str) -> None:
        unknown = [a for a in attrs if a not in order]
        if unknown:
            raise SpecError(
                f"{ctx} names unknown attribute(s) {unknown}",
                where,
                f"use column names from schema {schema.name!r}: {schema.names}",
            )
        dup = repeated(attrs)
        if dup:
            raise SpecError(f"{ctx} repeats attribute(s) {dup}", where, "name each attribute once")
        derived = [a for a in attrs if a in schema.derived]
        if derived:
            raise SpecError(
                f"{ctx} names lookup column(s) {derived}: they are attached after sampling, never modelled",
                where,
                f"use their source column(s) {sorted({schema.derived[a] for a in derived})} instead",
            )

    def canon(attrs: list[str] | tuple[str, ...]) -> Clique:
        return tuple(sorted(attrs, key=order.__getitem__))

    if spec.split is not None:
        return _resolve_split(spec, spec.split, schema, where)
    assert spec.phi is not None  # the spec's validator: 'phi' or 'split'
    cliques: list[Clique] = []
    for i, m in enumerate(spec.phi.marginals):
        check_attrs(m, f"phi.marginals[{i}]")
        if not m:
            raise SpecError(f"phi.marginals[{i}] is empty", where, "list at least one attribute")
        cliques.append(canon(m))
    for i, kw in enumerate(spec.phi.all_kway):
        check_attrs(kw.attributes, f"phi.all_kway[{i}]")
        if kw.k > len(kw.attributes):
            raise SpecError(
                f"phi.all_kway[{i}]: k={kw.k} exceeds its {len(kw.attributes)} attributes",
                where,
                "lower k or list more attributes",
            )
        cliques.extend(canon(c) for c in itertools.combinations(kw.attributes, kw.k))

    seen: dict[Clique, int] = {}
    for c in cliques:
        if c in seen:
            raise SpecError(
                f"marginal {_fmt(c)} is listed twice in Φ",
                where,
                "remove the duplicate (check shorthands that already generate it)",
            )
        seen[c] = 1
    if len(cliques) > MAX_MARGINALS:
        raise SpecError(
            f"Φ resolves to {len(cliques):,} marginals, over the limit of {MAX_MARGINALS:,}",
            where,
            "agree fewer marginals (check all_kway shorthands)",
        )
    # with private selection the 1-ways are measured first (to select) and reused in the fit: nested, but paid once
    selected = spec.privacy.selection is not None
    nested = _nested_pair([c for c in cliques if not (selected and len(c) == 1)])
    if nested is not None:
        a, b = nested
        raise SpecError(
            f"marginal {_fmt(a)} is nested in {_fmt(b)} (it is implied by it)",
            where,
            f"remove {_fmt(a)}: measuring it again only spends budget",
        )
    for c in cliques:
        cells = schema.cells(c)
        if cells > spec.limits.max_marginal_cells:
            raise SpecError(
                f"marginal {_fmt(c)} has {cells:,} cells, over the limit of {spec.limits.max_marginal_cells:,}",
                where,
                "coarsen the attributes or split the marginal",
            )

    in_phi = {a for c in cliques for a in c}
    if spec.attributes is not None:
        check_attrs(spec.attributes, "attributes")
        outside = sorted(in_phi - set(spec.attributes), key=order.__getitem__)
        if outside:
            raise SpecError(
                f"Φ uses attribute(s) {outside} not listed in 'attributes'",
                where,
                "add them to 'attributes' or drop them from Φ",
            )
        attributes = sorted(spec.attributes, key=order.__getitem__)
    else:
        attributes = sorted(in_phi, key=order.__getitem__)

    if selected:
        ones = {c[0] for c in cliques if len(c) == 1}
        lacking = [a for a in attributes if a not in ones]
        if lacking:
            raise SpecError(
                f"privacy.selection measures the 1-way marginal of every attribute, but Φ lacks {lacking}",
                where,
                "list every modelled attribute as a 1-way marginal (phi.all_kway with k: 1)",
            )

    for key in spec.privacy.weights:
        names = [s.strip() for s in key.split(",")]
        if any(n not in order for n in names) or canon(names) not in seen:
            raise SpecError(
                f"privacy.weights names {key!r}, which is not a marginal in Φ",
                where,
                "write weights as 'A,B' for an agreed marginal (A, B)",
            )

    risk = spec.privacy_risk
    if risk is not None and risk.settings.sensitive is not None and risk.settings.sensitive not in attributes:
        raise SpecError(
            f"privacy_risk.settings.sensitive names {risk.settings.sensitive!r}, which is not released",
            where,
            f"choose one of {attributes}",
        )

    plugin, gen = generator(spec.generator.name), spec.generator
    # the structural zeros join the model's graph (mbi adds each as a clique), so they count in its size
    zero_cliques = [canon(z.attributes) for z in zeros_within(schema.zero_cells(), attributes)]
    model_cells = plugin.model_cells(
        attributes, cliques + [z for z in zero_cliques if z not in seen], schema.domain(attributes)
    )
    over_domain = model_cells > spec.limits.max_model_cells
    over_exact = model_cells > spec.limits.exact_cells()
    if plugin.approximate and ((over_domain and gen.inference != "exact") or (over_exact and gen.inference == "auto")):
        # dense Φ: approximate inference holds only Φ's own tables (and a sampled model within the limit)
        gen = gen.model_copy(update={"inference": "approximate"})
        model_cells = max(schema.cells(c) for c in cliques)
    if model_cells > spec.limits.max_model_cells:
        raise SpecError(
            f"the {spec.generator.name} model needs {model_cells:,} cells, over the model domain limit "
            f"of {spec.limits.max_model_cells:,}",
            where,
            "use a generator with smaller tables (IPF holds the full joint, PGM the junction-tree cliques), "
            "fewer attributes, smaller marginals, or coarser categories",
        )

    return Agreement(
        spec_name=spec.name,
        description=spec.description,
        dataset_name=spec.dataset.name,
        schema_name=schema.name,
        schema_sha256=schema.sha256(),
        attributes=attributes,
        cliques=sorted(cliques, key=lambda c: [order[a] for a in c]),
        privacy=spec.privacy,
        generator=gen,
        rows=spec.rows,
        seed=spec.seed,
        limits=spec.limits,
        audit=spec.audit,
        privacy_risk=spec.privacy_risk,
    )


def check_unsplit(loaded: LoadedSpec, what: str) -> None:
    """Refuse a split spec (one line) for a tool that fits one model to Φ on all records."""
    if loaded.agreement.split is not None:
        raise SpecError(
            f"{what} is not available for a split synthesis (it refits one model to Φ on all records; a split has "
            "one model per part)",
            str(loaded.spec_path),
            "run it on a spec with one 'phi' (docs/structures.md, split synthesis)",
        )


def _resolve_split(spec: ReleaseSpec, split: SplitSpec, schema: Schema, where: str) -> Agreement:
    """Each part resolved as an ordinary agreement on its records (its ρ the part's share), then checked together:
    the split itself against the schema, and every part modelling the same attributes (one released file)."""
    if spec.privacy.epsilon is not None:
        raise SpecError(
            "a split synthesis takes its budget as 'rho' (split by share) or 'sigma' (every part), not 'epsilon'",
            where,
            "convert ε at your δ to ρ (sdgov validate prints both) and give privacy.rho",
        )
    if spec.privacy.selection is not None:
        raise SpecError(
            "private selection of Φ is not available for a split synthesis",
            where,
            "give each part its Φ, or drop privacy.selection",
        )
    if spec.audit is not None or spec.privacy_risk is not None:
        # both fit the generator again to Φ measured on the whole data (resamples, shadow models): a split
        # release would need one test per part, with its own budget for the audit's own noise — not built
        raise SpecError(
            "the decomposability and privacy-risk audits are not available for a split synthesis "
            "(they refit one model to Φ on all records; a split has one model per part)",
            where,
            "drop 'audit' and 'privacy_risk' from a split spec (the structural checks still run), or give one 'phi'",
        )
    col = _check_split(split, schema, where)
    keys = [str(c.code) for c in col.categories or []]
    total_share = sum(p.share for p in split.parts)
    parts = []
    for part in split.parts:
        privacy = spec.privacy
        if privacy.rho is not None:
            privacy = privacy.model_copy(update={"rho": privacy.rho * part.share / total_share})
        part_spec = spec.model_copy(
            update={"name": f"{spec.name}.{part.name}", "phi": part.phi, "split": None, "privacy": privacy}
        )
        ag = resolve(part_spec, schema, where=f"{where}: split part {part.name!r}")
        codes = [str(c).strip() for c in part.codes]
        parts.append(
            AgreedPart(
                name=part.name,
                codes=codes,
                cells=[keys.index(c) for c in codes],
                attributes=ag.attributes,
                cliques=ag.cliques,
                privacy=ag.privacy,
                generator=ag.generator,
            )
        )
    modelled = {a for p in parts for a in p.attributes} - {split.attribute}
    for p in parts:
        if set(p.attributes) - {split.attribute} != modelled:
            raise SpecError(
                f"split part {p.name!r} models {sorted(p.attributes)}, the others {sorted(modelled)}",
                where,
                "let every part's Φ cover the same attributes (the parts' records are released as one file)",
            )
        if len(p.cells) > 1 and split.attribute not in p.attributes:
            raise SpecError(
                f"split part {p.name!r} holds several codes of {split.attribute!r} but its Φ does not measure it",
                where,
                f"add a marginal with {split.attribute!r} to that part's Φ, or give the part one code",
            )
    order = {name: i for i, name in enumerate(schema.names)}
    cliques = sorted({c for p in parts for c in p.cliques}, key=lambda c: [order[a] for a in c])
    return Agreement(
        spec_name=spec.name,
        description=spec.description,
        dataset_name=spec.dataset.name,
        schema_name=schema.name,
        schema_sha256=schema.sha256(),
        attributes=sorted(modelled | {split.attribute}, key=order.__getitem__),
        cliques=cliques,
        privacy=spec.privacy,
        generator=spec.generator,
        rows=spec.rows,
        seed=spec.seed,
        limits=spec.limits,
        split=AgreedSplit(attribute=split.attribute, parts=parts),
    )


def _check_split(split: SplitSpec, schema: Schema, where: str) -> Column:
    col = schema.by_name.get(split.attribute)
    if col is None or col.kind != "categorical" or split.attribute in schema.derived:
        raise SpecError(
            f"split.attribute {split.attribute!r} is not a modelled categorical column of schema {schema.name!r}",
            where,
            "split on a categorical column declared in the schema",
        )
    if col.nullable:
        raise SpecError(
            f"split.attribute {split.attribute!r} is nullable: a record with it missing would be in no part",
            where,
            "split on a column that is never missing (or map its missing values to a declared category)",
        )
    keys = [str(c.code) for c in col.categories or []]
    seen: list[str] = []
    for part in split.parts:
        unknown = [c for c in part.codes if str(c).strip() not in keys]
        if unknown:
            raise SpecError(
                f"split part {part.name!r}: code(s) {unknown[:5]} are not declared for {split.attribute!r}",
                where,
                f"use codes of {split.attribute!r}: {keys[:20]}",
            )
        seen += [str(c).strip() for c in part.codes]
    twice = sorted({c for c in seen if seen.count(c) > 1})
    missing = [k for k in keys if k not in seen]
    if twice or missing:
        raise SpecError(
            f"split parts must hold every code of {split.attribute!r} exactly once: "
            + (f"{twice[:5]} in several parts" if twice else f"{missing[:5]} in none"),
            where,
            "give each record exactly one part",
        )
    names = [p.name for p in split.parts]
    if len(set(names)) != len(names):
        raise SpecError("split parts need distinct names", where, "rename the parts")
    return col


def _nested_pair(cliques: list[Clique]) -> tuple[Clique, Clique] | None:
    """A marginal nested in another one, or None — in about linear time: a small marginal's proper subsets are
    looked up in a set (2^k of them), a large one is compared with every marginal (rare)."""
    by_set = {frozenset(c): c for c in cliques}
    for b in cliques:
        if 2 ** len(b) <= len(cliques):
            for k in range(1, len(b)):
                for sub in itertools.combinations(b, k):
                    if frozenset(sub) in by_set:
                        return by_set[frozenset(sub)], b
        else:
            big = frozenset(b)
            for a in cliques:
                if frozenset(a) < big:
                    return a, b
    return None


def _fmt(c: Clique) -> str:
    return "(" + ", ".join(c) + ")"
