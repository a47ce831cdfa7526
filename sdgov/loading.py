"""Load a YAML/JSON file into a pydantic model, turning any failure into one clear line."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from sdgov.errors import SdgovError

M = TypeVar("M", bound=BaseModel)


def read_yaml(path: str | Path, error: type[SdgovError], what: str) -> object:
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} file not found", str(path), "check the path")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"not valid YAML{at}: {problem}", str(path), f"fix the {what} file's syntax") from None
    except UnicodeDecodeError:
        raise error("not UTF-8 text", str(path), f"save the {what} file as UTF-8") from None


def validation_message(exc: ValidationError) -> str:
    """The first pydantic error as 'field.path: message' (plus how many more)."""
    errs = exc.errors()
    first = errs[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
    msg = first["msg"].removeprefix("Value error, ")
    more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
    return f"{loc}: {msg}{more}"


def load_model_file(cls: type[M], path: str | Path, error: type[SdgovError], what: str) -> M:
    raw = read_yaml(path, error, what)
    if not isinstance(raw, dict):
        raise error(
            f"{what} must be a mapping (key: value), got {type(raw).__name__}",
            str(path),
            f"see examples/ for a valid {what}",
        )
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        raise error(
            f"invalid {what}: {validation_message(exc)}", str(path), f"see examples/ for a valid {what}"
        ) from None
