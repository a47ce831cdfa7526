"""Jinja templates of the generator card and the utility report (installed as ``sdgov.cards``).

:func:`environment` is the one way to load them: templates are package data read through
:mod:`importlib.resources`, and every ``*.html.j2`` template is autoescaped (``select_autoescape(["html"])``
would not match ``card.html.j2``: Jinja compares the full final extension).
"""

from __future__ import annotations

from importlib.resources import files

from jinja2 import Environment, FileSystemLoader, select_autoescape

AUTOESCAPED = ("html.j2", "htm.j2", "svg.j2", "xml.j2", "html")


def environment(**options) -> Environment:
    """A Jinja environment over this package's templates, autoescaping every HTML/SVG/XML template."""
    return Environment(
        loader=FileSystemLoader(str(files(__name__))),
        autoescape=select_autoescape(list(AUTOESCAPED), default_for_string=True),
        **options,
    )
