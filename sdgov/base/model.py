"""The two pydantic bases of sdgov's own models: unknown keys are refused, so a misspelt field is an error.

``Frozen`` for everything written, hashed or passed between stages (a spec, a contract, a ledger entry): it
cannot change after validation. ``Strict`` for the few models that are built up in place.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
