"""Generators: fit a model from the noisy marginals only, then hand it to the shared sampler.

Each generator is a :class:`~sdgov.generators.plugin.GeneratorPlugin` registered by name in
:mod:`sdgov.generators.registry`; its fit maps ``(MeasurementSet, GeneratorSpec) -> CliqueModel``. Nothing here
can see records: the measurement set is all a generator is given.

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "CHUNK_ROWS": "sampler",
    "CliqueModel": "model",
    "GENERATORS": "registry",
    "GeneratorSpec": "settings",
    "InferenceParams": "plugin",
    "PART_CHUNKS": "sampler",
    "SynthesisGraph": "graph",
    "arrow_schema_of": "sampler",
    "generator": "registry",
    "graph_svg": "graph",
    "iter_chunks": "sampler",
    "marginal_estimator": "pgm_mbi",
    "registered_names": "registry",
    "sample_to_parquet": "sampler",
    "synthesis_graph": "graph",
}
__all__ = [
    "CHUNK_ROWS",
    "CliqueModel",
    "GENERATORS",
    "GeneratorSpec",
    "InferenceParams",
    "PART_CHUNKS",
    "SynthesisGraph",
    "arrow_schema_of",
    "generator",
    "graph_svg",
    "iter_chunks",
    "marginal_estimator",
    "registered_names",
    "sample_to_parquet",
    "synthesis_graph",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
