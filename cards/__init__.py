"""Jinja templates of the generator card (HTML and Markdown). Rendered by :mod:`sdgov.card`."""
