"""Where sdgov keeps what a later process may reuse: JAX's compiled programs and the generator dry runs' receipts.

``$SDGOV_JAX_CACHE_DIR`` names the folder (empty: nothing is kept, nothing reused), else ``$XDG_CACHE_HOME/sdgov/jax``
(``~/.cache/sdgov/jax``). Nothing kept there is data: compiled code whose keys come from the model's shapes (the public
schema and Φ), and receipts keyed by the spec's public settings. Whoever can write the folder can already change
the code a fit runs, so a receipt there asks for no more trust than the compiled programs beside it.
"""

from __future__ import annotations

from pathlib import Path

from sdgov.base.settings import load_settings


def cache_dir() -> str | None:
    """Where compiled programs are kept: ``$SDGOV_JAX_CACHE_DIR`` (empty: nowhere), else the user's cache dir (the
    process's settings, :mod:`sdgov.base.settings`)."""
    return load_settings().jax_cache_dir()


def dry_run_receipts() -> Path | None:
    """Where the generator dry runs that passed are noted (``dry-runs`` in :func:`cache_dir`); ``None``: not kept."""
    base = cache_dir()
    return Path(base) / "dry-runs" if base else None
