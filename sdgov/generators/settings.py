"""The spec's ``generator:`` section as the generator plug-ins receive it: a registered name, the fit's iterations,
and the plug-in's own parameters, validated by the plug-in's ``params`` model.

It lives in the generators' room, beside the registry that validates it, so that a plug-in's input types (this and
ψ, :mod:`sdgov.data.psi`) sit at or below the plug-ins: the agreement above only embeds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import (
    Field,
    PositiveInt,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from sdgov.base.model import Frozen
from sdgov.generators.registry import GENERATORS, registered_names
from sdgov.generators.sampling_default import Sampling

P = TypeVar("P", bound=Frozen)


class GeneratorSpec(Frozen):
    """The spec's ``generator:``: a registered ``name``, the fit's ``iterations`` (every generator has them) and the
    generator's own parameters, written beside them (``inference:`` for pgm) and validated by its plugin's
    ``params`` model — so a new generator's knobs never touch this model (nor the hash of an agreement without
    them)."""

    name: str = Field(default="pgm", description="a generator registered in sdgov.generators.registry")
    iterations: PositiveInt = Field(default=2000, le=1_000_000)
    sampling: Sampling | None = Field(
        default=None,
        exclude_if=lambda v: v is None,  # absent: same hash as before
        description="how the records are drawn from the model: 'iid' (independent draws) or 'round' (each cell "
        "within one record of the model's count, sdgov.generators.sampler); absent from a spec: the sampler's "
        "default, which the agreement states unless it is 'iid'; absent from an agreement: 'iid'",
    )
    params: SerializeAsAny[Frozen] = Field(default_factory=Frozen, description="the plugin's own parameters")

    @model_validator(mode="before")
    @classmethod
    def _own_params(cls, data: Any) -> Any:
        """Every key but ``name``, ``iterations`` and ``sampling`` is the generator's own: validated by its plugin's
        model."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        own = data.pop("params", None)
        if own is None:
            own = {k: data.pop(k) for k in list(data) if k not in ("name", "iterations", "sampling")}
        plugin = GENERATORS.get(data.get("name", "pgm"))
        if plugin is None:  # the name's own error says which names there are; its parameters mean nothing
            return data
        if not isinstance(own, plugin.params):  # its errors are reported at 'generator.<key>', as a field's
            own = plugin.params.model_validate(own)
        return data | {"params": own}

    @field_validator("name")
    @classmethod
    def _registered(cls, name: str) -> str:
        if name not in GENERATORS:
            raise ValueError(f"unknown generator {name!r}: use {registered_names()}")
        return name

    @model_serializer(mode="wrap")
    def _flatten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped = handler(self)
        return dumped | (dumped.pop("params", None) or {})  # name, iterations, then the plugin's own

    def own(self, model: type[P]) -> P:
        """The parameters as the plugin's model (``spec.own(InferenceParams).inference``)."""
        if not isinstance(self.params, model):
            raise TypeError(f"generator {self.name!r} takes {type(self.params).__name__}, not {model.__name__}")
        return self.params

    def with_params(self, **update: object) -> GeneratorSpec:
        """A copy with some of the plugin's own parameters changed (as resolved, e.g. ``inference``)."""
        return self.model_copy(update={"params": self.params.model_copy(update=update)})

    @property
    def drawn(self) -> Sampling:
        """How an agreement's records are drawn: as it states, else i.i.d. — an agreement made before the sampler's
        default could be other than i.i.d. states none, and regenerates as it was released."""
        return self.sampling or "iid"

    def stating_sampling(self, default: Sampling) -> GeneratorSpec:
        """The generator as the agreement holds it: a spec that does not say how to draw gets the sampler's
        ``default`` stated, unless that is i.i.d. (absent: the agreement's hash as before the option existed)."""
        if self.sampling is not None or default == "iid":
            return self
        return self.model_copy(update={"sampling": default})
