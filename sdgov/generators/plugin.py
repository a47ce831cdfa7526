"""What a generator is to the rest of sdgov: a name, a card label, a version, a fit and a size check.

The pipeline's generate stage, the spec's limits check, the card and the audits' honest and dishonest variants
all reach a generator only through its :class:`GeneratorPlugin`, looked up by name in
:data:`sdgov.generators.registry.GENERATORS`. A fit sees the noisy marginals only, never records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sdgov.generators.model import CliqueModel
from sdgov.schema import Clique

if TYPE_CHECKING:  # the spec validates generator names against the registry, so it is imported only for types
    from sdgov.measure import MeasurementSet
    from sdgov.spec import GeneratorSpec

Fit = Callable[["MeasurementSet", "GeneratorSpec"], CliqueModel]
ModelCells = Callable[[list[str], list[Clique], dict[str, int]], int]


@dataclass(frozen=True)
class GeneratorPlugin:
    """One generator, as the pipeline, the spec check, the card and the audits see it.

    ``fit(measurements, generator_spec)`` returns the :class:`CliqueModel` the shared sampler draws from.
    ``model_cells(attributes, cliques, domain)`` is the number of cells of the largest table the fit will hold,
    checked against ``limits.max_model_cells`` when the spec is resolved, before any budget is spent.
    ``version()`` names the implementation and its version; the card shows ``implementation()``.
    """

    name: str
    label: str
    version: Callable[[], str]
    fit: Fit
    model_cells: ModelCells
    approximate: bool = False  # fits a Φ whose exact model exceeds the domain limit (``inference: approximate``)

    def implementation(self) -> str:
        """The card's line for this generator, e.g. 'mbi 2.0.1 (Private-PGM, mirror descent)'."""
        return f"{self.version()} ({self.label})"
