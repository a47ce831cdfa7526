"""Private-PGM, the default generator: mbi's mirror descent on the junction tree of Φ (:mod:`.pgm_mbi`).

This module is the registered plugin only; the mbi code (and JAX) is imported on the first fit or size check.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from typing import TYPE_CHECKING

from sdgov.data.schema import Clique
from sdgov.data.structures import ZeroCells
from sdgov.generators.model import CliqueModel
from sdgov.generators.plugin import GeneratorPlugin, InferenceParams

if TYPE_CHECKING:
    from sdgov.data.psi import MeasurementSet
    from sdgov.generators.settings import GeneratorSpec


def _fit_pgm(mset: MeasurementSet, params: GeneratorSpec, zeros: Sequence[ZeroCells] = ()) -> CliqueModel:
    from sdgov.generators.pgm_mbi import fit_pgm

    return fit_pgm(mset, params, zeros)


def _junction_tree_cells(attributes: list[str], cliques: list[Clique], domain: dict[str, int]) -> int:
    from sdgov.generators.pgm_mbi import junction_tree_cells

    return junction_tree_cells(attributes, cliques, domain)


PGM = GeneratorPlugin(
    name="pgm",
    label="Private-PGM, mirror descent",
    version=lambda: f"mbi {version('mbi')}",
    fit=_fit_pgm,
    model_cells=_junction_tree_cells,
    approximate=True,
    fit_with_zeros=_fit_pgm,
    params=InferenceParams,
)
