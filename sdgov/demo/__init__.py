"""The demo: made-up "Toyland census" inputs shipped as package data, so ``sdgov demo`` runs from an installed
wheel in an empty directory (no clone, no census extract).

``spec.yaml``, ``schema.yaml`` and ``approvals.yaml`` sit beside this file; :func:`inputs` returns the folder
holding them, read through :mod:`importlib.resources` (never a path computed from a source checkout).
"""

from __future__ import annotations

from importlib.resources import as_file, files
from pathlib import Path

__all__ = ["inputs"]


def inputs() -> Path:
    """The folder holding the demo's spec, schema and standing approvals (read-only package data)."""
    with as_file(files(__name__)) as folder:  # an installed package is a real folder: as_file returns it as is
        return Path(folder)


# --- the rest of the room's face, loaded on first use (sdgov.base.face)
from sdgov.base.face import lazy_face  # noqa: E402

_WHERE = {
    "signed_demo_approval": "people",
    "write_demo_data": "data",
}
__all__ += [
    "signed_demo_approval",
    "write_demo_data",
]
__getattr__, _ = lazy_face(__name__, _WHERE)
