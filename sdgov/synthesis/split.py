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

The spec resolves (:func:`sdgov.agreement.resolve.resolve`) to one :class:`~sdgov.agreement.spec.Agreement` whose
``split`` holds each
part's Φ, budget and generator settings — in the agreement hash, so the controller signs the split. Each part is
measured on its own records only (the release's measure stage: the engine's grouped scan with the part's filter,
through the draw-once store, whose key holds the part), fitted on its own noisy marginals, and sampled with as
many rows as its share of the noisy record totals (so the parts appear in the data's proportions, up to noise);
the parts' records are concatenated, the split attribute written from the part (:func:`sample_split`). Every
part models the same attributes, so the released file has one set of columns.

**Privacy.** The parts' ρ are *added* (sequential composition, :func:`sdgov.budget.accounting.plan_agreement`) —
conservative: since a record is in exactly one part (the split attribute is a value of the record), parallel
composition would allow the maximum instead, but the sum is what the budget ledger composes everywhere else.

:func:`synthesise_split` runs the same fit and sample from a spec and the data outside the release flow: like
:func:`sdgov.measurement.marginals.measure_agreement` it draws fresh noise *outside* the budget ledger — for
simulations, tests
and
benchmarks, never a release (``sdgov release`` runs a split spec governed, like any other).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sdgov.agreement.load import resolved
from sdgov.agreement.resolve import resolve
from sdgov.agreement.spec import AgreedPart, AgreedSplit, ReleaseSpec
from sdgov.base.errors import SpecError
from sdgov.base.executor import Executor
from sdgov.base.hashing import write_json
from sdgov.base.loading import load_model_file
from sdgov.budget.accounting import PrivacyPlan, part_plan, plan_agreement
from sdgov.data.psi import MeasurementSet
from sdgov.data.schema import Schema, load_schema
from sdgov.data.structures import zeros_within
from sdgov.engines import load_encoded
from sdgov.generators.graph import SynthesisGraph, synthesis_graph
from sdgov.generators.registry import generator
from sdgov.generators.sampler import arrow_schema_of, sample_to_parquet
from sdgov.measurement.marginals import measure_agreement


def load_split_spec(path: str | Path) -> tuple[ReleaseSpec, Schema, Path]:
    """A split spec, its schema and its data path (relative paths resolved from the spec's folder)."""
    path = resolved(path)
    spec = load_model_file(ReleaseSpec, path, SpecError, "release spec")
    if spec.split is None:
        raise SpecError("the spec has no 'split' section", str(path), "run it with 'sdgov release'")
    schema = load_schema(resolved(path.parent / spec.schema_path, f"{path}: schema"))
    return spec, schema, resolved(path.parent / spec.dataset.path, f"{path}: dataset.path")


def resolve_parts(spec: ReleaseSpec, schema: Schema, where: str = "spec") -> list[AgreedPart]:
    """Each part of a split spec as agreed (its own Φ, budget share and cell filter)."""
    split = resolve(spec, schema, where).split
    assert split is not None  # a spec with 'split' resolves to a split agreement
    return list(split.parts)


def privacy_summary(plan: PrivacyPlan) -> dict[str, Any]:
    """A split plan (:func:`sdgov.budget.accounting.plan_agreement`) in brief: the composed ρ and ε, each part's ρ
    (its tables', and with private selection its selection's: the parts' ρ add up to the composed ρ) and σs."""
    parts: dict[str, dict[str, Any]] = {}
    for m in plan.marginals:
        part = parts.setdefault(str(m.part), {"rho": 0.0, "sigmas": []})
        part["rho"] += m.rho or 0.0
        part["sigmas"].append(m.sigma)
    for name, rho in (plan.part_selection_rho or {}).items():
        parts[name]["rho"] += rho
        parts[name]["selection_rho"] = rho
    return {
        "noise": plan.noise,
        "composition": "sequential: the parts' ρ added (parallel composition would allow their maximum)",
        "rho": plan.rho,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
        "parts": parts,
    }


@dataclass(frozen=True)
class SplitResult:
    synthetic: Path
    rows: dict[str, int]  # part → synthetic rows
    privacy: dict[str, Any]
    graphs: list[SynthesisGraph]
    model_info: dict[str, dict[str, Any]]


def synthesise_split(spec_path: str | Path, out_dir: str | Path, fingerprint: str = "") -> SplitResult:
    """Measure (fresh noise, outside the ledger), fit and sample every part of a split spec; write
    ``synthetic.parquet`` (all parts, schema column order), ``model_info.json`` (per part) and ``split.json``
    (rows, privacy, graphs) under ``out_dir``."""
    spec, schema, data_path = load_split_spec(spec_path)
    agreement = resolve(spec, schema, where=str(spec_path))
    split = agreement.split
    assert split is not None
    codes = load_encoded(data_path, schema)
    split_col = codes[split.attribute].to_numpy()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = plan_agreement(agreement)  # outside the ledger and the policy: the fixed default δ
    msets: dict[str, MeasurementSet] = {}
    for p in split.parts:
        mine = codes[np.isin(split_col, p.cells)].reset_index(drop=True)
        msets[p.name] = measure_agreement(mine, schema, agreement.of_part(p), part_plan(plan, p.name), fingerprint)
    rows, info = sample_split(split, msets, schema, spec.rows, spec.seed, out / "synthetic.parquet")
    graphs = split_graphs(split, info)
    privacy = privacy_summary(plan)
    write_json(out / "model_info.json", info)
    write_json(
        out / "split.json",
        {"attribute": split.attribute, "rows": rows, "privacy": privacy, "graphs": [g.model_dump() for g in graphs]},
    )
    return SplitResult(synthetic=out / "synthetic.parquet", rows=rows, privacy=privacy, graphs=graphs, model_info=info)


def sample_split(
    split: AgreedSplit,
    msets: dict[str, MeasurementSet],
    schema: Schema,
    rows: int | None,
    seed: int,
    path: Path,
    executor: Executor | None = None,
) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
    """Fit each part's model to its noisy marginals, sample its rows (``rows`` split by the noisy part totals;
    part ``i`` with seed ``seed + i``) and stream the parts, in order, into one Parquet file at ``path`` — the
    split attribute written from the part when its model does not hold it. Returns rows and model info per
    part."""
    counts = _rows(rows, {p.name: max(msets[p.name].noisy_total(), 0.0) for p in split.parts})
    info: dict[str, dict[str, Any]] = {}
    files: list[tuple[AgreedPart, Path]] = []
    for i, p in enumerate(split.parts):
        plugin = generator(p.generator.name)
        model = plugin.fit_model(msets[p.name], p.generator, zeros_within(schema.zero_cells(), p.attributes))
        part_file = path.with_name(f".{path.name}.part-{p.name}")
        sample_to_parquet(
            model, schema, max(counts[p.name], 1), seed + i, part_file, executor=executor, sampling=p.generator.drawn
        )
        files.append((p, part_file))
        info[p.name] = {
            "generator": p.generator.name,
            "implementation": plugin.implementation(),
            "parameters": p.generator.model_dump(),
            **model.fit_info,
            "model_cliques": [list(c) for c in model.cliques],
            "sampling_order": list(model.order),
            "codes": p.codes,
            "rows": counts[p.name],
        }
    first = pq.ParquetFile(files[0][1]).schema_arrow.names
    names = tuple(c for c in schema.names if c in first or c == split.attribute)
    target = arrow_schema_of(schema, names)
    tmp = path.with_name(f".{path.name}.tmp")
    with pq.ParquetWriter(tmp, target, compression="zstd") as writer:
        for p, part_file in files:
            left = counts[p.name]  # an empty part was sampled one row, to write none
            for batch in pq.ParquetFile(part_file).iter_batches():
                if left <= 0:
                    break
                table = pa.Table.from_batches([batch]).slice(0, left)
                left -= table.num_rows
                if split.attribute not in table.column_names:
                    table = _with_split_column(table, target.field(split.attribute), schema, split, p)
                writer.write_table(table.select(list(names)).cast(target))
            part_file.unlink()
    tmp.replace(path)
    return counts, info


def split_graphs(split: AgreedSplit, info: dict[str, dict[str, Any]]) -> list[SynthesisGraph]:
    """The card's synthesis graph of every part's model, titled by part."""
    graphs = []
    for p in split.parts:
        g = synthesis_graph(info[p.name], f"part {p.name!r} ({split.attribute} ∈ {{{', '.join(p.codes)}}})")
        if g is not None:
            graphs.append(g)
    return graphs


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


def _with_split_column(
    table: pa.Table, field: pa.Field, schema: Schema, split: AgreedSplit, part: AgreedPart
) -> pa.Table:
    code = schema.by_name[split.attribute].codes()[part.cells[0]]
    return table.append_column(field, pa.array([code] * table.num_rows, type=field.type))
