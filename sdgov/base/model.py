"""The two pydantic bases of sdgov's own models: unknown keys are refused, so a misspelt field is an error.

``Frozen`` for everything written, hashed or passed between stages (a spec, a contract, a ledger entry): it
cannot change after validation. ``Strict`` for the few models that are built up in place.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def unstated_at_default(default: Any, **field: Any) -> Any:
    """A field added to a model that is written and hashed after some of it already was: left out of the dump while
    it holds ``default``, so every earlier pre-registered section keeps its hash, and written (and hashed) once set
    to anything else. The default is named once, so the two cannot drift apart."""
    return Field(default, exclude_if=lambda v: v == default, **field)


def line_errors(exc: ValidationError, *prefix: str | int) -> list[InitErrorDetails]:
    """``exc``'s errors, each under ``prefix`` (a section's name), as they can be raised again together with others:
    type, message and input kept."""
    return [
        {"type": PydanticCustomError(e["type"], e["msg"]), "loc": (*prefix, *e["loc"]), "input": e["input"]}
        for e in exc.errors()
    ]
