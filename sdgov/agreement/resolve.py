"""Resolving a spec into its agreement: Φ checked against the schema and canonicalised, one named step at a time.

:func:`resolve` runs the steps of :data:`STEPS` in order on one :class:`Resolution` (the spec, the schema and what
the earlier steps settled): each checks one rule, refusing the spec in one :class:`SpecError` line, or settles one
part of the agreement (Φ's marginals, the modelled attributes, the generator as it will fit). A split spec
(``split:``) is resolved part by part, each part an ordinary agreement on its records (:func:`_resolve_split`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from sdgov.agreement.sections.privacy_risk import PrivacyRiskSettings
from sdgov.agreement.spec import (
    MAX_MARGINALS,
    AgreedPart,
    AgreedSplit,
    Agreement,
    GeneratorSpec,
    ReleaseSpec,
    SplitSpec,
)
from sdgov.agreement.weights import with_cell_weights
from sdgov.base.errors import SpecError
from sdgov.data.schema import Clique, Column, Schema, repeated
from sdgov.data.structures import zeros_within
from sdgov.generators import sampling_default
from sdgov.generators.plugin import InferenceParams
from sdgov.generators.registry import generator


@dataclass
class Resolution:
    """One spec being resolved: its inputs and what the steps have settled so far."""

    spec: ReleaseSpec
    schema: Schema
    where: str
    cliques: list[Clique] = field(default_factory=list)  # Φ, canonical (each in schema column order)
    attributes: list[str] = field(default_factory=list)  # the modelled attributes, in schema order
    generator: GeneratorSpec | None = None  # the spec's, with 'auto' inference resolved

    def __post_init__(self) -> None:
        self.order = {name: i for i, name in enumerate(self.schema.names)}

    @property
    def selected(self) -> bool:
        """Φ is extended by private selection: its 1-ways are measured first (to select) and reused in the fit."""
        return self.spec.privacy.selection is not None

    def canon(self, attrs: list[str] | tuple[str, ...]) -> Clique:
        """``attrs`` as a clique: sorted in schema column order, the canonical form Φ's marginals are compared in."""
        return tuple(sorted(attrs, key=self.order.__getitem__))

    def check_attrs(self, attrs: list[str], ctx: str) -> None:
        """Attributes a spec names: schema columns, each once, modelled (not a lookup column)."""
        schema, where = self.schema, self.where
        unknown = [a for a in attrs if a not in self.order]
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

    def agreement(self) -> Agreement:
        """The ``Agreement`` the steps settled, its marginals in schema column order; only after the generator step."""
        spec, schema = self.spec, self.schema
        assert self.generator is not None  # settled by the last step
        cliques = sorted(self.cliques, key=lambda c: [self.order[a] for a in c])
        return build_agreement(spec, schema, self.attributes, cliques, self.generator)


def build_agreement(
    spec: ReleaseSpec,
    schema: Schema,
    attributes: list[str],
    cliques: list[Clique],
    generator: GeneratorSpec,
    split: AgreedSplit | None = None,
) -> Agreement:
    """The one way an agreement is built from a resolved spec: what the spec states, as written, plus what resolution
    settled (attributes, Φ in schema order, the generator's parameters, a split's parts). Every pre-registered audit
    section is carried as written; absent ones leave the hash unchanged."""
    return Agreement(
        spec_name=spec.name,
        description=spec.description,
        dataset_name=spec.dataset.name,
        schema_name=schema.name,
        schema_sha256=schema.sha256(),
        attributes=attributes,
        cliques=cliques,
        privacy=with_cell_weights(spec.privacy, cliques, schema.domain(attributes)),
        generator=generator,
        rows=spec.rows,
        seed=spec.seed,
        limits=spec.limits,
        sections=spec.sections,
        split=split,
    )


def explicit_marginals(r: Resolution) -> None:
    """``phi.marginals``: each a non-empty set of modelled attributes."""
    assert r.spec.phi is not None  # the spec's validator: 'phi' or 'split'
    for i, m in enumerate(r.spec.phi.marginals):
        r.check_attrs(m, f"phi.marginals[{i}]")
        if not m:
            raise SpecError(f"phi.marginals[{i}] is empty", r.where, "list at least one attribute")
        r.cliques.append(r.canon(m))


def kway_shorthands(r: Resolution) -> None:
    """``phi.all_kway``: every k-subset of the listed attributes."""
    assert r.spec.phi is not None
    for i, kw in enumerate(r.spec.phi.all_kway):
        r.check_attrs(kw.attributes, f"phi.all_kway[{i}]")
        if kw.k > len(kw.attributes):
            raise SpecError(
                f"phi.all_kway[{i}]: k={kw.k} exceeds its {len(kw.attributes)} attributes",
                r.where,
                "lower k or list more attributes",
            )
        r.cliques.extend(r.canon(c) for c in itertools.combinations(kw.attributes, kw.k))


def marginals_distinct(r: Resolution) -> None:
    """No marginal listed twice in Φ (a shorthand may already generate one listed explicitly)."""
    seen: set[Clique] = set()
    for c in r.cliques:
        if c in seen:
            raise SpecError(
                f"marginal {_fmt(c)} is listed twice in Φ",
                r.where,
                "remove the duplicate (check shorthands that already generate it)",
            )
        seen.add(c)


def marginals_within_count(r: Resolution) -> None:
    """Φ resolves to at most ``MAX_MARGINALS`` marginals."""
    if len(r.cliques) > MAX_MARGINALS:
        raise SpecError(
            f"Φ resolves to {len(r.cliques):,} marginals, over the limit of {MAX_MARGINALS:,}",
            r.where,
            "agree fewer marginals (check all_kway shorthands)",
        )


def marginals_not_nested(r: Resolution) -> None:
    """No marginal implied by another (measuring it again only spends budget) — except, with private selection,
    the 1-ways, which are measured first to select and reused in the fit: nested, but paid once."""
    nested = _nested_pair([c for c in r.cliques if not (r.selected and len(c) == 1)])
    if nested is not None:
        a, b = nested
        raise SpecError(
            f"marginal {_fmt(a)} is nested in {_fmt(b)} (it is implied by it)",
            r.where,
            f"remove {_fmt(a)}: measuring it again only spends budget",
        )


def marginals_within_cell_limit(r: Resolution) -> None:
    """Every marginal has at most ``limits.max_marginal_cells`` cells."""
    limit = r.spec.limits.max_marginal_cells
    for c in r.cliques:
        cells = r.schema.cells(c)
        if cells > limit:
            raise SpecError(
                f"marginal {_fmt(c)} has {cells:,} cells, over the limit of {limit:,}",
                r.where,
                "coarsen the attributes or split the marginal",
            )


def modelled_attributes(r: Resolution) -> None:
    """The spec's ``attributes`` (which must hold Φ's), or Φ's own; in schema order."""
    in_phi = {a for c in r.cliques for a in c}
    if r.spec.attributes is None:
        r.attributes = sorted(in_phi, key=r.order.__getitem__)
        return
    r.check_attrs(r.spec.attributes, "attributes")
    outside = sorted(in_phi - set(r.spec.attributes), key=r.order.__getitem__)
    if outside:
        raise SpecError(
            f"Φ uses attribute(s) {outside} not listed in 'attributes'",
            r.where,
            "add them to 'attributes' or drop them from Φ",
        )
    r.attributes = sorted(r.spec.attributes, key=r.order.__getitem__)


def selection_has_every_one_way(r: Resolution) -> None:
    """With private selection, Φ holds the 1-way marginal of every modelled attribute (the selection measures all)."""
    if not r.selected:
        return
    ones = {c[0] for c in r.cliques if len(c) == 1}
    lacking = [a for a in r.attributes if a not in ones]
    if lacking:
        raise SpecError(
            f"privacy.selection measures the 1-way marginal of every attribute, but Φ lacks {lacking}",
            r.where,
            "list every modelled attribute as a 1-way marginal (phi.all_kway with k: 1)",
        )


def weights_name_marginals(r: Resolution) -> None:
    """Every key of ``privacy.weights`` (written ``'A,B'``) names a marginal in Φ."""
    phi = set(r.cliques)
    for key in r.spec.privacy.weights:
        names = [s.strip() for s in key.split(",")]
        if any(n not in r.order for n in names) or r.canon(names) not in phi:
            raise SpecError(
                f"privacy.weights names {key!r}, which is not a marginal in Φ",
                r.where,
                "write weights as 'A,B' for an agreed marginal (A, B)",
            )


def sensitive_attribute_released(r: Resolution) -> None:
    """The privacy-risk audit's attribute-inference target is a released attribute."""
    risk = r.spec.sections.get("privacy_risk")
    sensitive = risk.settings.sensitive if isinstance(risk, PrivacyRiskSettings) else None
    if sensitive is not None and sensitive not in r.attributes:
        raise SpecError(
            f"privacy_risk.settings.sensitive names {sensitive!r}, which is not released",
            r.where,
            f"choose one of {r.attributes}",
        )


def generator_within_domain_limit(r: Resolution) -> None:
    """The model the generator will fit is within ``limits.max_model_cells``; a generator that can fit
    approximately does so (``inference: auto``) when the exact model is over the domain or exact-inference limit."""
    spec, schema = r.spec, r.schema
    plugin, gen = generator(spec.generator.name), spec.generator
    # the structural zeros join the model's graph (mbi adds each as a clique), so they count in its size
    phi = set(r.cliques)
    zero_cliques = [r.canon(z.attributes) for z in zeros_within(schema.zero_cells(), r.attributes)]
    model_cells = plugin.model_cells(
        r.attributes, r.cliques + [z for z in zero_cliques if z not in phi], schema.domain(r.attributes)
    )
    over_domain = model_cells > spec.limits.max_model_cells
    over_exact = model_cells > spec.limits.exact_cells()
    if plugin.approximate:
        inference = gen.own(InferenceParams).inference
        if (over_domain and inference != "exact") or (over_exact and inference == "auto"):
            # dense Φ: approximate inference holds only Φ's own tables (and a sampled model within the limit)
            gen = gen.with_params(inference="approximate")
            model_cells = max(schema.cells(c) for c in r.cliques)
    if model_cells > spec.limits.max_model_cells:
        raise SpecError(
            f"the {spec.generator.name} model needs {model_cells:,} cells, over the model domain limit "
            f"of {spec.limits.max_model_cells:,}",
            r.where,
            "use a generator with smaller tables (IPF holds the full joint, PGM the junction-tree cliques), "
            "fewer attributes, smaller marginals, or coarser categories",
        )
    r.generator = gen.stating_sampling(sampling_default.SAMPLING)


STEPS: tuple[Callable[[Resolution], None], ...] = (
    explicit_marginals,
    kway_shorthands,
    marginals_distinct,
    marginals_within_count,
    marginals_not_nested,
    marginals_within_cell_limit,
    modelled_attributes,
    selection_has_every_one_way,
    weights_name_marginals,
    sensitive_attribute_released,
    generator_within_domain_limit,
)
"""The resolution of a one-model spec, in order: the first rule a spec breaks is the one line it is refused with."""


def resolve(spec: ReleaseSpec, schema: Schema, where: str = "spec") -> Agreement:
    """Check Φ against the schema and canonicalise it (schema column order, sorted cliques)."""
    if spec.split is not None:
        return _resolve_split(spec, spec.split, schema, where)
    resolution = Resolution(spec, schema, where)
    for step in STEPS:
        step(resolution)
    return resolution.agreement()


def _resolve_split(spec: ReleaseSpec, split: SplitSpec, schema: Schema, where: str) -> Agreement:
    """Each part resolved as an ordinary agreement on its records (its ρ the part's share), then checked together:
    the split itself against the schema, and every part modelling the same attributes (one released file). With
    ``privacy.selection`` each part is a draft (or a selected Φ) of its own: its selection runs on its records at its
    share of ρ, exactly as an unsplit draft's at the whole ρ."""
    if spec.privacy.epsilon is not None:
        raise SpecError(
            "a split synthesis takes its budget as 'rho' (split by share) or 'sigma' (every part), not 'epsilon'",
            where,
            "convert ε at your δ to ρ (sdgov validate prints both) and give privacy.rho",
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
    attributes = sorted(modelled | {split.attribute}, key=order.__getitem__)
    return build_agreement(
        spec,
        schema,
        attributes,
        cliques,
        spec.generator.stating_sampling(sampling_default.SAMPLING),
        AgreedSplit(attribute=split.attribute, parts=parts),
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
