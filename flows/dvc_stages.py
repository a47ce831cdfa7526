"""The stages as plain functions, for ``dvc repro`` (``sdgov stage measure|generate|utility``): the use cases of
``sdgov stage``, each calling what the release flow runs.

``measure`` never draws noise: it exports ψ, the noisy marginals the release flow's measure stage drew under the
signed agreement, the controller's policy and the budget ledger (:func:`export_psi`). ``generate`` is the flow's
generate stage, ψ in, synthetic data out (:func:`generate_from_psi`); ``utility`` summarises a synthetic file
against the real data (:func:`utility_of`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sdgov.contracts import ArtifactRef, Generated
    from sdgov.data.psi import MeasurementSet
    from sdgov.governance.site import Site


def export_psi(site: Site, spec: str, out: str | Path) -> tuple[MeasurementSet, Path, str]:
    """Export ψ — the noisy marginals the governed flow drew for this agreement and data — from the registry to
    ``out``, and return them, where they went and the agreement's hash. A different file already at ``out`` is one
    line: a second copy of ψ under DVC is the same bytes, so it leaks nothing more, and noise is drawn once."""
    from sdgov.agreement.load import load_spec
    from sdgov.base.atomic import atomic_write_bytes
    from sdgov.base.errors import RegistryError
    from sdgov.intake.inputs import validated_data
    from sdgov.measurement.store import assemble_logged

    loaded = load_spec(spec)
    data = validated_data(loaded.data_path, loaded.schema_, loaded.spec.engine)
    ag = loaded.agreement
    mset = assemble_logged(site.registry, data.fingerprint, ag.dataset_name, ag, loaded.schema_, str(loaded.spec_path))
    payload = (mset.model_dump_json(indent=None) + "\n").encode()
    path = Path(out)
    if path.exists() and path.read_bytes() != payload:
        raise RegistryError(
            "a different measurement is already there",
            str(path),
            "move it away deliberately; noise for one statistic is drawn once",
        )
    atomic_write_bytes(path, payload)
    return mset, path, ag.sha256()


def generate_from_psi(spec: str, measurements: str, out_dir: str) -> Generated:
    """The release flow's generate stage on its own: the spec's generator fitted to ψ (``measurements``) alone, its
    synthetic data written under ``out_dir``."""
    from sdgov.agreement.load import load_spec
    from sdgov.contracts import ArtifactRef, GenerateInput
    from sdgov.tasks.generate import generate

    loaded = load_spec(spec)
    return generate.fn(
        GenerateInput(
            measurements=ArtifactRef.of("measurements", measurements),
            schema_file=ArtifactRef.of("schema", loaded.schema_file),
            generator=loaded.agreement.generator,
            rows=loaded.agreement.rows,
            seed=loaded.agreement.seed,
            out_dir=str(Path(out_dir).resolve()),
            split=loaded.agreement.split,
            engine=loaded.spec.engine,
        )
    )


def utility_of(spec: str, synthetic: str, out: str) -> ArtifactRef:
    """The utility summary of the ``synthetic`` Parquet file against the spec's real data (every Φ marginal), written
    to ``out``."""
    from sdgov.agreement.load import load_spec
    from sdgov.artifacts import synthetic_records
    from sdgov.base.hashing import write_json
    from sdgov.contracts import ArtifactRef
    from sdgov.engines.recordset import ParquetRecords
    from sdgov.intake.inputs import validated_data
    from sdgov.utility.summary import utility_summary

    loaded = load_spec(spec)
    agreement, schema = loaded.agreement, loaded.schema_
    real = validated_data(loaded.data_path, schema, loaded.spec.engine)
    attrs = agreement.attributes
    with synthetic_records(ArtifactRef.of("synthetic", synthetic), schema, attrs) as records:
        summary = utility_summary(
            ParquetRecords(real.codes_path, schema, attrs), records, attrs, [tuple(c) for c in agreement.cliques]
        )
    write_json(out, summary.model_dump(mode="json"))
    return ArtifactRef.of("utility", out)
