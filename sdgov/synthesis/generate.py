"""Generation: fit the registered generator to the noisy marginals and stream synthetic records to Parquet.

The generate stage's one core call. Its input is a :class:`~sdgov.contracts.GenerateInput`, which has no field for
the confidential data: the fit sees the measurement set and the public schema, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sdgov.agreement.spec import AgreedSplit
from sdgov.artifacts import read_measurements, read_schema
from sdgov.base.executor import Executor
from sdgov.base.hashing import write_json
from sdgov.contracts import ArtifactRef, GenerateInput
from sdgov.data.psi import MeasurementSet
from sdgov.data.schema import Schema
from sdgov.data.structures import zeros_within
from sdgov.generators.registry import generator
from sdgov.generators.sampler import CHUNK_ROWS, PART_CHUNKS, sample_to_parquet
from sdgov.synthesis.split import sample_split


def generate_synthetic(
    inp: GenerateInput,
    log: Callable[[str], None],
    executor: Executor | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[ArtifactRef, ArtifactRef, int]:
    """Fit, sample and describe the fit; return (synthetic, model_info, rows). ``log`` gets ~10 progress lines
    (one per batch of parts at scale) and ``on_progress`` every (rows done, rows) the sampler reports (the
    stage's progress bar); the sample's parts run through ``executor`` (the stage's task runner)."""
    mset = read_measurements(inp.measurements)
    schema = read_schema(inp.schema_file)
    if inp.split is not None:
        return _generate_split(inp, inp.split, mset, schema, log, executor)
    plugin = generator(inp.generator.name)
    zeros = zeros_within(schema.zero_cells(), mset.attributes)  # public structure, from the schema
    model = plugin.fit_model(mset, inp.generator, zeros)
    rows = inp.rows if inp.rows is not None else max(1, round(mset.noisy_total()))
    out = Path(inp.out_dir)
    step = max(1, rows // CHUNK_ROWS // 10) * CHUNK_ROWS

    def progress(done: int, total: int) -> None:
        if on_progress:
            on_progress(done, total)
        if done % step == 0 or done == total or done % (PART_CHUNKS * CHUNK_ROWS) == 0:
            log(f"sampled {done} / {total} rows ({100 * done / total:.0f}%)")

    sample_to_parquet(
        model,
        schema,
        rows,
        inp.seed,
        out / "synthetic.parquet",
        progress=progress,
        executor=executor,
        sampling=inp.generator.drawn,
    )
    info = {
        "generator": inp.generator.name,
        "implementation": plugin.implementation(),
        "parameters": inp.generator.model_dump(),
        **model.fit_info,
        "model_cliques": [list(c) for c in model.cliques],  # the tables the sampler draws from (card's graph)
        "sampling_order": list(model.order),
        **_structure(schema, mset.attributes),
    }
    write_json(out / "model_info.json", info)
    return (
        ArtifactRef.of("synthetic", out / "synthetic.parquet"),
        ArtifactRef.of("model_info", out / "model_info.json"),
        rows,
    )


def _generate_split(
    inp: GenerateInput,
    split: AgreedSplit,
    mset: MeasurementSet,
    schema: Schema,
    log: Callable[[str], None],
    executor: Executor | None,
) -> tuple[ArtifactRef, ArtifactRef, int]:
    """A split synthesis: each part's model fitted to its own noisy marginals and sampled, the parts concatenated
    (:func:`sdgov.synthesis.split.sample_split`); ``model_info.json`` holds every part's fit under ``parts``."""
    out = Path(inp.out_dir)
    msets = {p.name: mset.of_part(p.name, p.attributes) for p in split.parts}
    rows, parts = sample_split(split, msets, schema, inp.rows, inp.seed, out / "synthetic.parquet", executor)
    log("sampled " + ", ".join(f"{n} rows of part {name!r}" for name, n in rows.items()))
    info = {
        "generator": inp.generator.name,
        "parameters": inp.generator.model_dump(),
        "fitted_marginals": [
            list(c) for c in dict.fromkeys(tuple(c) for i in parts.values() for c in i["fitted_marginals"])
        ],
        "split": {"attribute": split.attribute, "parts": parts},
        **_structure(schema, mset.attributes),
    }
    write_json(out / "model_info.json", info)
    return (
        ArtifactRef.of("synthetic", out / "synthetic.parquet"),
        ArtifactRef.of("model_info", out / "model_info.json"),
        sum(rows.values()),
    )


def _structure(schema: Schema, attributes: list[str]) -> dict:
    """The schema's public structure this model used, for the card (absent when there is none)."""
    zeros = zeros_within(schema.zero_cells(), attributes)
    lookups = [lk for lk in schema.lookups if lk.source in attributes]
    out: dict = {}
    if zeros:
        out["structural_zeros"] = [
            {
                "attributes": list(z.attributes),
                "description": z.description,
                "cells": int(z.invalid_combinations(schema.domain(z.attributes)).shape[0]),
            }
            for z in zeros
        ]
        out["structural_zero_noise"] = (
            "noisy counts on structurally zero cells discarded (set to 0: publicly known) before the fit; "
            "ρ is that of the whole marginal"
        )
    if lookups:
        out["lookups"] = [{"column": lk.column, "source": lk.source, "description": lk.description} for lk in lookups]
    return out
