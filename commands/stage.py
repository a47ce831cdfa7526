"""``sdgov stage measure|generate|utility``: the stages as plain commands, for ``dvc repro``."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Any

from sdgov.commands._common import Parents, command, emit, site_of


def cmd_stage(args: argparse.Namespace) -> int:
    """The stages as plain commands, for ``dvc repro``: they call the very task functions the flow runs."""
    from sdgov.agreement.load import load_spec
    from sdgov.contracts import ArtifactRef, GenerateInput

    loaded = load_spec(args.spec)
    schema_ref = ArtifactRef.of("schema", loaded.schema_file)
    if args.which == "measure":
        return _stage_measure(args, loaded)
    if args.which == "generate":
        from sdgov.tasks.generate import generate

        out = generate.fn(
            GenerateInput(
                measurements=ArtifactRef.of("measurements", args.measurements),
                schema_file=schema_ref,
                generator=loaded.agreement.generator,
                rows=loaded.agreement.rows,
                seed=loaded.agreement.seed,
                out_dir=str(Path(args.out).resolve()),
                split=loaded.agreement.split,
                engine=loaded.spec.engine,
            )
        )
        emit(
            args,
            {"synthetic": out.synthetic.path, "sha256": out.synthetic.sha256},
            f"wrote {out.rows} rows to {out.synthetic.path}",
        )
        return 0
    from sdgov.artifacts import synthetic_records
    from sdgov.base.hashing import write_json
    from sdgov.engines.recordset import ParquetRecords
    from sdgov.intake.inputs import validated_data
    from sdgov.utility.summary import utility_summary

    agreement, schema = loaded.agreement, loaded.schema_
    real = validated_data(loaded.data_path, schema, loaded.spec.engine)
    attrs = agreement.attributes
    with synthetic_records(ArtifactRef.of("synthetic", args.synthetic), schema, attrs) as synthetic:
        summary = utility_summary(
            ParquetRecords(real.codes_path, schema, attrs), synthetic, attrs, [tuple(c) for c in agreement.cliques]
        )
    write_json(args.out, summary.model_dump(mode="json"))
    ref = ArtifactRef.of("utility", args.out)
    emit(args, {"utility": ref.path, "sha256": ref.sha256}, f"wrote {ref.path}")
    return 0


def _stage_measure(args: argparse.Namespace, loaded: Any) -> int:
    """Export ψ — the noisy marginals the governed flow drew for this agreement and data — from the registry.

    It never draws noise: drawing happens only in the release flow's measure stage, under the signed agreement,
    the controller's policy and the budget ledger. A second copy of ψ under DVC is the same bytes, so it leaks
    nothing more.
    """
    from sdgov.base.atomic import atomic_write_bytes
    from sdgov.base.errors import RegistryError
    from sdgov.intake.inputs import validated_data
    from sdgov.measurement.store import assemble_logged

    registry = site_of(args).registry
    data = validated_data(loaded.data_path, loaded.schema_, loaded.spec.engine)
    ag = loaded.agreement
    mset = assemble_logged(registry, data.fingerprint, ag.dataset_name, ag, loaded.schema_, str(loaded.spec_path))
    payload = (mset.model_dump_json(indent=None) + "\n").encode()
    out = Path(args.out)
    if out.exists() and out.read_bytes() != payload:
        raise RegistryError(
            "a different measurement is already there",
            str(out),
            "move it away deliberately; noise for one statistic is drawn once",
        )
    atomic_write_bytes(out, payload)
    emit(
        args,
        {"measurements": str(out), "statistics": [m.statistic for m in mset.measurements]},
        f"exported the noisy marginals drawn for agreement {ag.sha256()[:12]}… → {out}",
    )
    return 0


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``stage measure|generate|utility`` (the commands dvc.yaml runs)."""
    add = functools.partial(command, subparsers, parents)
    s = add(
        "stage",
        cmd_stage,
        "run one stage outside the flow (used by dvc.yaml); 'measure' exports the noisy "
        "marginals the release flow drew — it never draws noise",
        [parents.spec, parents.root],
    )
    s.add_argument("which", choices=["measure", "generate", "utility"])
    s.add_argument("--measurements", help="generate: the noisy-marginal file")
    s.add_argument("--synthetic", help="utility: the synthetic Parquet file")
    s.add_argument("--out", required=True, help="measure: file; generate: directory; utility: file")
