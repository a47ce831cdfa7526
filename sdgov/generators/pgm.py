"""Private-PGM, the default generator: mbi's mirror descent on the junction tree of Φ (:mod:`.pgm_mbi`).

This module is the registered plugin only; the mbi code (and JAX) is imported on the first fit or size check.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import TYPE_CHECKING

from sdgov.generators.model import CliqueModel
from sdgov.generators.plugin import GeneratorPlugin
from sdgov.schema import Clique

if TYPE_CHECKING:
    from sdgov.measure import MeasurementSet
    from sdgov.spec import GeneratorSpec


def fit_pgm(mset: MeasurementSet, params: GeneratorSpec) -> CliqueModel:
    from sdgov.generators.pgm_mbi import fit_pgm

    return fit_pgm(mset, params)


def largest_clique_cells(attributes: list[str], cliques: list[Clique], domain: dict[str, int]) -> int:
    from sdgov.generators.pgm_mbi import largest_clique_cells

    return largest_clique_cells(attributes, cliques, domain)


PGM = GeneratorPlugin(
    name="pgm",
    label="Private-PGM, mirror descent",
    version=lambda: f"mbi {version('mbi')}",
    fit=fit_pgm,
    model_cells=largest_clique_cells,
    approximate=True,
)
