"""What a generator is to the rest of sdgov: a name, a card label, a version, a fit and a size check.

The pipeline's generate stage, the spec's limits check, the card and the audits' honest and dishonest variants
all reach a generator only through its :class:`GeneratorPlugin`, looked up by name in
:data:`sdgov.generators.registry.GENERATORS`. A fit sees the noisy marginals only, never records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from sdgov.base.model import Frozen, unstated_at_default
from sdgov.data.schema import Clique
from sdgov.data.structures import ZeroCells
from sdgov.generators.model import CliqueModel

if TYPE_CHECKING:  # the settings model is validated by the registry, which imports the plug-ins: types only
    from sdgov.data.psi import MeasurementSet
    from sdgov.generators.settings import GeneratorSpec

Fit = Callable[["MeasurementSet", "GeneratorSpec"], CliqueModel]
ModelCells = Callable[[list[str], list[Clique], dict[str, int]], int]
FitWithZeros = Callable[["MeasurementSet", "GeneratorSpec", Sequence[ZeroCells]], CliqueModel]


class InferenceParams(Frozen):
    """The own parameters of a generator that can fit approximately (``approximate=True``): how it infers."""

    inference: Literal["auto", "exact", "approximate"] = unstated_at_default(  # absent: same hash as before
        "auto",
        description="'auto' resolves to approximate when the junction tree exceeds the domain limit "
        "(limits.max_model_cells) or the exact-inference limit (limits.max_exact_cells)",
    )


@dataclass(frozen=True)
class GeneratorPlugin:
    """One generator, as the pipeline, the spec check, the card and the audits see it.

    ``fit(measurements, generator_spec)`` returns the :class:`CliqueModel` the shared sampler draws from.
    ``model_cells(attributes, cliques, domain)`` is the number of cells of the tables the fit will hold (the
    model's domain, ONS's limit), checked against ``limits.max_model_cells`` when the spec is resolved, before
    any budget is spent; ``cliques`` includes the schema's structural zeros, which join the model's graph.
    ``fit_with_zeros`` (optional) fits with the schema's structural zeros as exact zeros of the model; a
    generator without it is fitted with ``fit`` and the sampler redraws any record that falls in a zero.
    ``version()`` names the implementation and its version; the card shows ``implementation()``.
    ``params`` is the pydantic model of the generator's own parameters: a spec writes them beside ``name`` and
    ``iterations`` under ``generator:``, they are validated by this model (an unknown or ill-typed one is refused
    when the spec is read), hashed into the agreement when given, and reach ``fit`` as ``generator_spec.params``.
    A generator with ``approximate=True`` takes :class:`InferenceParams` (or a subclass).
    """

    name: str
    label: str
    version: Callable[[], str]
    fit: Fit
    model_cells: ModelCells
    approximate: bool = False  # fits a Φ whose exact model exceeds the domain limit (``inference: approximate``)
    fit_with_zeros: FitWithZeros | None = None
    params: type[Frozen] = Frozen  # its own parameters (none: any key beside name and iterations is refused)

    def fit_model(self, mset: MeasurementSet, params: GeneratorSpec, zeros: Sequence[ZeroCells] = ()) -> CliqueModel:
        """The fit, told the structural zeros when there are any and the generator can take them."""
        if zeros and self.fit_with_zeros is not None:
            return self.fit_with_zeros(mset, params, zeros)
        return self.fit(mset, params)

    def implementation(self) -> str:
        """The card's line for this generator, e.g. 'mbi 2.0.1 (Private-PGM, mirror descent)'."""
        return f"{self.version()} ({self.label})"
