"""A room's face: the names it offers, loaded on first use (PEP 562).

Each room's ``__init__`` lists what other rooms may use from it (``__all__``) and where each lives. Nothing is
imported until a name is asked for, so ``import sdgov.registry`` costs nothing, a command imports only what it
uses, and a room's face can never create an import cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: name → the submodule (relative) that defines it."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{where[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__
