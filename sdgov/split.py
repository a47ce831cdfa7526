"""Split synthesis: one model per part of the data, each with its own Φ and budget share, concatenated.

ONS synthesised census-only and linked-mortality records as two separate models ("the impact … was enormous"):
records that differ in kind are better served by a Φ each than by one Φ that must fit both. A spec declares it
with ``split:`` instead of ``phi:``::

    split:
      attribute: Student                # a categorical schema column; every record is in exactly one part
      parts:
        - {name: students, codes: [1], share: 1, phi: {all_kway: [{k: 2, attributes: [Age, Sex, Health]}]}}
        - {name: others, codes: [2], share: 3, phi: {marginals: [[Age, Sex], [Age, Health], [Sex, Health]]}}
    privacy: {rho: 0.5}                 # split across the parts by share (a fixed sigma applies to every part)

Each part is resolved into an ordinary :class:`~sdgov.spec.Agreement` (its own Φ, the same schema, limits and
generator), measured on its own records only, fitted on its own noisy marginals, and sampled with as many rows
as its share of the noisy record totals (so the parts appear in the data's proportions, up to noise); the
parts' records are concatenated, the split attribute written from the part. Every part models the same
attributes, so the released file has one set of columns.

**Privacy.** The parts' ρ are *added* (sequential composition) — conservative: since a record is in exactly one
part (the split attribute is a value of the record), parallel composition would allow the maximum instead, but
the sum is what the budget ledger composes everywhere else. δ is the ONS default for the whole dataset.

**Status.** This module runs a split synthesis end to end from a spec and the data (measure → fit → sample →
concatenate, with the card's synthesis graph of every part). Like :func:`sdgov.measure.measure` it draws fresh
noise *outside* the budget ledger — for simulations, tests and benchmarks, never a governed release. The release
flow (``sdgov release``) does not run it yet — it refuses a split spec in one line — because the draw-once
store keys a statistic by dataset, attributes and σ, and a part's marginal needs the part in that key before its
noise can be charged to the ledger, logged and reused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sdgov.engines import load_encoded
from sdgov.errors import SpecError
from sdgov.generators.registry import generator
from sdgov.hashing import write_json
from sdgov.loading import load_model_file
from sdgov.measure import MeasurementSet, measure
from sdgov.privacy import PrivacyPlan, default_delta, epsilon_of_rho, plan_privacy
from sdgov.sampler import sample_to_parquet
from sdgov.schema import Schema, load_schema
from sdgov.spec import Agreement, PrivacySpec, ReleaseSpec, SplitSpec, resolve, resolved
from sdgov.structures import zeros_within
from sdgov.synthesis_graph import SynthesisGraph, synthesis_graph


@dataclass(frozen=True)
class Part:
    name: str
    cells: list[int]  # the split attribute's cell indices of this part
    agreement: Agreement


def load_split_spec(path: str | Path) -> tuple[ReleaseSpec, Schema, Path]:
    """A split spec, its schema and its data path (relative paths resolved from the spec's folder)."""
    path = resolved(path)
    spec = load_model_file(ReleaseSpec, path, SpecError, "release spec")
    if spec.split is None:
        raise SpecError("the spec has no 'split' section", str(path), "run it with 'sdgov release'")
    schema = load_schema(resolved(path.parent / spec.schema_path, f"{path}: schema"))
    return spec, schema, resolved(path.parent / spec.dataset.path, f"{path}: dataset.path")


def resolve_parts(spec: ReleaseSpec, schema: Schema, where: str = "spec") -> list[Part]:
    """Each part as an ordinary agreement; the split itself checked against the schema first."""
    split = spec.split
    assert split is not None
    if spec.privacy.epsilon is not None:
        raise SpecError(
            "a split synthesis takes its budget as 'rho' (split by share) or 'sigma' (every part), not 'epsilon'",
            where,
            "convert ε at your δ to ρ (sdgov validate prints both) and give privacy.rho",
        )
    _check_split(split, schema, where)
    col = schema.by_name[split.attribute]
    keys = [str(c.code) for c in col.categories or []]
    total_share = math.fsum(p.share for p in split.parts)
    parts = []
    for part in split.parts:
        privacy = spec.privacy
        if privacy.rho is not None:
            privacy = privacy.model_copy(update={"rho": privacy.rho * part.share / total_share})
        part_spec = spec.model_copy(
            update={"name": f"{spec.name}.{part.name}", "phi": part.phi, "split": None, "privacy": privacy}
        )
        agreement = resolve(part_spec, schema, where=f"{where}: split part {part.name!r}")
        parts.append(Part(part.name, [keys.index(str(c).strip()) for c in part.codes], agreement))
    modelled = {a for p in parts for a in p.agreement.attributes} - {split.attribute}
    for p in parts:
        if set(p.agreement.attributes) - {split.attribute} != modelled:
            raise SpecError(
                f"split part {p.name!r} models {sorted(p.agreement.attributes)}, the others {sorted(modelled)}",
                where,
                "let every part's Φ cover the same attributes (the parts' records are released as one file)",
            )
        if len(p.cells) > 1 and split.attribute not in p.agreement.attributes:
            raise SpecError(
                f"split part {p.name!r} holds several codes of {split.attribute!r} but its Φ does not measure it",
                where,
                f"add a marginal with {split.attribute!r} to that part's Φ, or give the part one code",
            )
    return parts


def _check_split(split: SplitSpec, schema: Schema, where: str) -> None:
    col = schema.by_name.get(split.attribute)
    if col is None or col.kind != "categorical" or split.attribute in schema.derived:
        raise SpecError(
            f"split.attribute {split.attribute!r} is not a modelled categorical column of schema {schema.name!r}",
            where,
            "split on a categorical column declared in the schema",
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


def compose(plans: dict[str, PrivacyPlan], privacy: PrivacySpec, n_records: int) -> dict[str, Any]:
    """The release's privacy: the parts' ρ added (sequential composition), ε at the release's δ."""
    if privacy.noise == "none":
        return {"noise": "none", "rho": None, "epsilon": None, "delta": None, "parts": {}}
    delta = privacy.delta if privacy.delta is not None else default_delta(n_records)
    rho = math.fsum(p.rho or 0.0 for p in plans.values())
    return {
        "noise": "gaussian",
        "composition": "sequential: the parts' ρ added (parallel composition would allow their maximum)",
        "rho": rho,
        "epsilon": epsilon_of_rho(rho, delta),
        "delta": delta,
        "parts": {name: {"rho": p.rho, "sigmas": [m.sigma for m in p.marginals]} for name, p in plans.items()},
    }


@dataclass(frozen=True)
class SplitResult:
    synthetic: Path
    rows: dict[str, int]  # part → synthetic rows
    privacy: dict[str, Any]
    graphs: list[SynthesisGraph]
    model_info: dict[str, dict[str, Any]]


def synthesise_split(spec_path: str | Path, out_dir: str | Path, fingerprint: str = "") -> SplitResult:
    """Measure, fit and sample every part of a split spec; write ``synthetic.parquet`` (all parts, schema column
    order), ``model_info.json`` (per part) and ``split.json`` (rows, privacy, graphs) under ``out_dir``."""
    spec, schema, data_path = load_split_spec(spec_path)
    assert spec.split is not None
    parts = resolve_parts(spec, schema, where=str(spec_path))
    codes = load_encoded(data_path, schema)
    split_col = codes[spec.split.attribute].to_numpy()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    msets: dict[str, MeasurementSet] = {}
    plans: dict[str, PrivacyPlan] = {}
    for p in parts:
        mine = codes[np.isin(split_col, p.cells)].reset_index(drop=True)
        if len(mine) == 0:  # the measurement of an empty part is still noisy; measured as any other
            mine = codes.iloc[:0]
        plans[p.name] = plan_privacy(p.agreement.privacy, p.agreement.cliques, len(codes))
        msets[p.name] = measure(mine, schema, p.agreement, plans[p.name], fingerprint)
    totals = {name: max(m.noisy_total(), 0.0) for name, m in msets.items()}
    rows = _rows(spec.rows, totals)
    info: dict[str, dict[str, Any]] = {}
    graphs: list[SynthesisGraph] = []
    tables = []
    for i, p in enumerate(parts):
        plugin = generator(p.agreement.generator.name)
        model = plugin.fit_model(
            msets[p.name], p.agreement.generator, zeros_within(schema.zero_cells(), p.agreement.attributes)
        )
        part_file = out / f".part-{p.name}.parquet"
        sample_to_parquet(model, schema, max(rows[p.name], 1), spec.seed + i, part_file)
        table = pq.read_table(part_file).slice(0, rows[p.name])
        part_file.unlink()
        if spec.split.attribute not in table.column_names:
            table = _with_split_column(table, schema, spec.split.attribute, p.cells[0])
        tables.append(table)
        info[p.name] = {
            "generator": p.agreement.generator.name,
            "implementation": plugin.implementation(),
            "fitted_marginals": [list(c) for c in p.agreement.cliques],
            "model_cliques": [list(c) for c in model.cliques],
            "sampling_order": list(model.order),
            "rows": rows[p.name],
        }
        g = synthesis_graph(info[p.name], f"part {p.name!r} ({spec.split.attribute} ∈ {_codes(schema, spec, p)})")
        if g is not None:
            graphs.append(g)
    names = [c for c in schema.names if c in tables[0].column_names]
    synthetic = out / "synthetic.parquet"
    pq.write_table(pa.concat_tables([t.select(names) for t in tables]), synthetic, compression="zstd")
    privacy = compose(plans, spec.privacy, len(codes))
    write_json(out / "model_info.json", info)
    write_json(
        out / "split.json",
        {
            "attribute": spec.split.attribute,
            "rows": rows,
            "privacy": privacy,
            "graphs": [g.model_dump() for g in graphs],
        },
    )
    return SplitResult(synthetic=synthetic, rows=rows, privacy=privacy, graphs=graphs, model_info=info)


def _rows(requested: int | None, totals: dict[str, float]) -> dict[str, int]:
    """Rows per part: the requested total split by the parts' noisy record totals (largest remainders), or each
    part's noisy total when no total is requested."""
    if requested is None:
        return {name: max(round(t), 0) for name, t in totals.items()}
    whole = math.fsum(totals.values())
    shares = {n: (t / whole if whole > 0 else 1 / len(totals)) * requested for n, t in totals.items()}
    rows = {n: math.floor(s) for n, s in shares.items()}
    for n in sorted(shares, key=lambda n: rows[n] - shares[n])[: requested - sum(rows.values())]:
        rows[n] += 1
    return rows


def _with_split_column(table: pa.Table, schema: Schema, attribute: str, cell: int) -> pa.Table:
    code = schema.by_name[attribute].codes()[cell]
    values = pa.array([code] * table.num_rows, type=pa.int64() if isinstance(code, int) else pa.string())
    return table.append_column(pa.field(attribute, values.type, nullable=False), values)


def _codes(schema: Schema, spec: ReleaseSpec, part: Part) -> str:
    assert spec.split is not None
    codes = schema.by_name[spec.split.attribute].codes()
    return "{" + ", ".join(str(codes[c]) for c in part.cells) + "}"
