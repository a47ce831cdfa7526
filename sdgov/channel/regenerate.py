"""Reproduce a release's synthetic data from its public folder: ψ, the public schema, the agreement's generator
settings, row count and public seed — the generate stage's only inputs (:class:`sdgov.contracts.GenerateInput`).
What ``dvc repro`` runs in the release repository and what ``sdgov verify-release`` compares bit for bit."""

from __future__ import annotations

from pathlib import Path

from sdgov.base.errors import SpecError
from sdgov.channel.folder import AGREEMENT, PSI, SCHEMA, read_agreement
from sdgov.contracts import ArtifactRef, GenerateInput
from sdgov.synthesis.generate import generate_synthetic


def regenerate(folder: Path, out_dir: Path) -> tuple[Path, Path]:
    """Generate ``folder``'s synthetic data again into ``out_dir``; returns (synthetic.parquet, model_info.json)."""
    try:
        agreement = read_agreement(folder / AGREEMENT)
    except (OSError, ValueError, KeyError):
        raise SpecError("not a release's agreement", str(folder / AGREEMENT), "give a release folder") from None
    out = generate_synthetic(
        GenerateInput(
            measurements=ArtifactRef.of("measurements", folder / PSI),
            schema_file=ArtifactRef.of("schema", folder / SCHEMA),
            generator=agreement.generator,
            rows=agreement.rows,
            seed=agreement.seed,
            out_dir=str(out_dir.resolve()),
            split=agreement.split,
        ),
        lambda _line: None,
    )
    synthetic, model_info, _rows = out
    return Path(synthetic.path), Path(model_info.path)
