"""Generators: fit a model from the noisy marginals only, then hand it to the shared sampler.

Each generator is a :class:`~sdgov.generators.plugin.GeneratorPlugin` registered by name in
:mod:`sdgov.generators.registry`; its fit maps ``(MeasurementSet, GeneratorSpec) -> CliqueModel``. Nothing here
can see records: the measurement set is all a generator is given.
"""
