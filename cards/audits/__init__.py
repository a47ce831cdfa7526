"""Card sections of the registered audit checks: ``<check name>.html.j2`` and ``.md.j2`` (templates only)."""
