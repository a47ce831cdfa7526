"""Generators: fit a model from the noisy marginals only, then hand it to the shared sampler.

Each generator maps ``(MeasurementSet, GeneratorSpec) -> CliqueModel``. Nothing here can see records: the
measurement set is all a generator is given.
"""

from __future__ import annotations

from collections.abc import Callable

from sdgov.generators.model import CliqueModel
from sdgov.measure import MeasurementSet
from sdgov.spec import GeneratorSpec

Fit = Callable[[MeasurementSet, GeneratorSpec], CliqueModel]


def get_generator(name: str) -> Fit:
    if name == "pgm":
        from sdgov.generators.pgm import fit_pgm

        return fit_pgm
    if name == "ipf":
        from sdgov.generators.ipf import fit_ipf

        return fit_ipf
    raise ValueError(f"unknown generator {name!r}")


def generator_version(name: str) -> str:
    from importlib.metadata import version

    return f"mbi {version('mbi')} (Private-PGM, mirror descent)" if name == "pgm" else "sdgov IPF (numpy)"


__all__ = ["CliqueModel", "Fit", "get_generator", "generator_version"]
