"""The spec sections that pre-register an audit check: one line per section, name → its settings model.

A section is written at the top level of a release spec (``audit:``, ``privacy_risk:``) and carried, validated by
its model, into the :class:`~sdgov.agreement.spec.Agreement` — so it is part of the agreement hash, fixed before
anyone sees a result. The spec and the agreement hold them in one ``sections`` mapping but read and write them
as top-level keys (:func:`gather` on the way in, :func:`flatten` on the way out), so an agreement without a section
hashes as it did before the section existed, and one with it hashes as it always has.

The check that runs a section is registered in :data:`sdgov.audits.registry.AUDITS`, which refuses, when imported, a
check whose section is not here and a section here that no check runs: a half-registered check is an error at
start-up, never a section silently not run. The models live in this package because the agreement is below the
audits: reading a spec never imports audit machinery.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails

from sdgov.agreement.sections.decomposability import DecomposabilitySettings
from sdgov.agreement.sections.privacy_risk import PrivacyRiskSettings
from sdgov.base.model import Frozen, line_errors

SECTIONS: dict[str, type[Frozen]] = {
    "audit": DecomposabilitySettings,
    "privacy_risk": PrivacyRiskSettings,
}
"""Every pre-registrable spec section, in the order the agreement writes them."""

S = TypeVar("S", bound=Frozen)


def gather(data: Any) -> tuple[Any, list[InitErrorDetails]]:
    """A spec's or agreement's raw input with its registered top-level sections moved into ``sections``, each
    validated by its model (``null`` is absent, as before), and the errors of those that are not valid, located at
    ``<section>.<field>`` as a field of the spec would be; anything else is left for the model to accept or refuse."""
    if not isinstance(data, Mapping):
        return data, []
    data = dict(data)
    sections = dict(data.pop("sections", None) or {})
    for name in SECTIONS:
        value = data.pop(name, None)
        if value is not None:
            sections[name] = value
    errors: list[InitErrorDetails] = []
    for name, value in list(sections.items()):
        if name not in SECTIONS:
            raise ValueError(f"unknown section {name!r}: registered sections are {list(SECTIONS)}")
        if not isinstance(value, SECTIONS[name]):
            try:
                sections[name] = SECTIONS[name].model_validate(value)
            except ValidationError as exc:
                errors += line_errors(exc, name)
                del sections[name]
    data["sections"] = sections
    return data, errors


def flatten(dumped: dict[str, Any], after: str, absent: bool = False) -> dict[str, Any]:
    """A dumped model with its ``sections`` written back as top-level keys, in registry order, right after the key
    ``after`` (where the fields ``audit`` and ``privacy_risk`` always stood); a section not given is left out, or
    written as ``None`` with ``absent`` (as a spec always wrote them)."""
    sections = dumped.pop("sections", None) or {}
    out: dict[str, Any] = {}
    for key, value in dumped.items():
        out[key] = value
        if key == after:
            out.update((name, sections.get(name)) for name in SECTIONS if absent or name in sections)
    return out


class Sectioned(Frozen):
    """A model that carries the registered sections (the spec, the agreement): read from and written to top-level
    keys right after the field ``_sections_after``; ``sections[name]`` is the section's settings model."""

    _sections_after: ClassVar[str]
    _absent_sections: ClassVar[bool] = False  # write a section not given as None (the spec), or leave it out
    sections: dict[str, SerializeAsAny[Frozen]] = Field(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _gather(cls, data: Any, handler: ModelWrapValidatorHandler[Sectioned]) -> Sectioned:
        """The sections gathered and validated, then the rest; their errors reported together, in the order of the
        keys as written (a section where its field stood), as pydantic reports a model's own fields."""
        data, errors = gather(data)
        try:
            model = handler(data)
        except ValidationError as exc:
            if not errors:
                raise
            errors += line_errors(exc)
        if not errors:
            return model
        fields = {(f.alias or name): None for name, f in cls.model_fields.items()}
        keys = list(flatten(fields, cls._sections_after, absent=True))
        errors.sort(key=lambda e: keys.index(e["loc"][0]) if e["loc"] and e["loc"][0] in keys else len(keys))
        raise ValidationError.from_exception_data(cls.__name__, errors)

    @model_serializer(mode="wrap")
    def _flatten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return flatten(handler(self), self._sections_after, self._absent_sections)

    def section(self, name: str, model: type[S]) -> S | None:
        """The section ``name`` as its settings model, or ``None`` when the spec does not give it."""
        value = self.sections.get(name)
        if value is not None and not isinstance(value, model):
            raise TypeError(f"section {name!r} holds {type(value).__name__}, not {model.__name__}")
        return value
