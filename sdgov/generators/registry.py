"""The registered generators: one line per generator, shared by the spec check, the pipeline, the card and audits.

Adding a generator is one module defining a :class:`~sdgov.generators.plugin.GeneratorPlugin` and one
``register(...)`` line below (see docs/extending.md, "Adding a generator").
"""

from __future__ import annotations

from sdgov.base.errors import InternalError, SpecError
from sdgov.generators.ipf import IPF
from sdgov.generators.pgm import PGM
from sdgov.generators.plugin import GeneratorPlugin

GENERATORS: dict[str, GeneratorPlugin] = {}


def register(plugin: GeneratorPlugin) -> GeneratorPlugin:
    """Add ``plugin`` under its name; a second plugin of the same name is a bug, not an override."""
    if plugin.name in GENERATORS:
        raise InternalError(f"generator {plugin.name!r} is registered twice")
    GENERATORS[plugin.name] = plugin
    return plugin


def registered_names() -> str:
    """The registered names as a user reads them: "'pgm' or 'ipf'"."""
    quoted = [repr(n) for n in GENERATORS]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def generator(name: str) -> GeneratorPlugin:
    """The plugin registered as ``name``; an unknown name is one clear line listing the registered ones."""
    try:
        return GENERATORS[name]
    except KeyError:
        raise SpecError(f"unknown generator {name!r}", "generator.name", f"use one of {registered_names()}") from None


register(PGM)
register(IPF)
