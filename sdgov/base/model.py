"""The two pydantic bases of sdgov's own models: unknown keys are refused, so a misspelt field is an error.

``Frozen`` for everything written, hashed or passed between stages (a spec, a contract, a ledger entry): it
cannot change after validation. ``Strict`` for the few models that are built up in place.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import PydanticCustomError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def relocated(exc: ValidationError, *prefix: str | int) -> ValidationError:
    """``exc``'s errors under ``prefix`` (a section's name): raised in a validator, pydantic reports them where that
    validator runs, so a nested model validated by hand is reported at ``audit.K``, as its own field would be."""
    return ValidationError.from_exception_data(
        exc.title,
        [
            {"type": PydanticCustomError(e["type"], e["msg"]), "loc": (*prefix, *e["loc"]), "input": e["input"]}
            for e in exc.errors()
        ],
    )
