"""Load a YAML/JSON file into a pydantic model, turning any failure into one clear line.

The loader is bounded and reads YAML 1.2 the way people write codes:

- **size, depth and aliases are capped** before anything is built: a 140 KB alias bomb (a billion nodes once
  expanded) or a 100,000-deep nesting is refused in one line instead of eating gigabytes or the Python stack.
  The check walks libyaml's event stream once, counting how many nodes the document *expands* to (an alias
  counts as the whole node it names), so a legitimate anchor costs nothing and a bomb is caught before it
  is expanded;
- **YAML 1.2 booleans**: only ``true``/``false`` are booleans. PyYAML follows YAML 1.1, where ``NO`` (Norway),
  ``yes``, ``on``, ``off``, ``y`` and ``n`` are booleans too — a category code ``NO`` would silently become
  ``False``. Here they stay strings;
- **YAML 1.2 integers**: ``012`` is twelve (1.1 reads it as octal ten) and ``1:20`` is a string (1.1 reads it
  as the sexagesimal 80).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from sdgov.errors import SdgovError, shorten

M = TypeVar("M", bound=BaseModel)

MAX_YAML_BYTES = 64 * 1024 * 1024  # a schema of 10^6 categories is ~30 MB
MAX_YAML_DEPTH = 64  # the deepest real file (spec → audit → settings → ...) is under 10
MAX_YAML_NODES = 10_000_000  # nodes after expanding aliases: 10^6 categories are ~4·10^6

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it (much faster)

_BOOL_TAG = "tag:yaml.org,2002:bool"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_BOOL_12 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_12 = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT_12 = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


class Yaml12Loader(_BaseLoader):  # type: ignore[misc]
    """PyYAML's safe loader with YAML 1.2 (core schema) booleans and integers."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL_TAG, _INT_TAG, _FLOAT_TAG)]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(_BOOL_TAG, _BOOL_12, list("tTfF"))
Yaml12Loader.add_implicit_resolver(_INT_TAG, _INT_12, list("-+0123456789"))
Yaml12Loader.add_implicit_resolver(_FLOAT_TAG, _FLOAT_12, list("-+.0123456789"))


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


def _construct_bool(loader: Any, node: yaml.ScalarNode) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"


Yaml12Loader.add_constructor(_INT_TAG, _construct_int)
Yaml12Loader.add_constructor(_BOOL_TAG, _construct_bool)


def _check_shape(text: str) -> str | None:
    """What makes ``text`` too deep or too big once aliases are expanded, or None. One pass over the events."""
    sizes: dict[str, int] = {}  # anchor → nodes it expands to
    stack: list[list[Any]] = [[None, 0]]  # [anchor, nodes so far] of every open collection (plus the stream)
    for event in yaml.parse(text, Loader=_BaseLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append([event.anchor, 1])
            if len(stack) - 1 > MAX_YAML_DEPTH:
                return f"nested more than {MAX_YAML_DEPTH} levels deep"
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, n = stack.pop()
            if anchor is not None:
                sizes[anchor] = n
            stack[-1][1] += n
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                sizes[event.anchor] = 1
            stack[-1][1] += 1
        elif isinstance(event, yaml.AliasEvent):
            stack[-1][1] += sizes.get(str(event.anchor), 1)
        if stack[-1][1] > MAX_YAML_NODES:
            return f"expands to more than {MAX_YAML_NODES:,} nodes (aliases included: an alias bomb?)"
    return None


def parse_yaml(text: str) -> Any:
    """YAML text → Python objects, bounded (see the module docstring). Raises ``ValueError`` with one line.

    A document in JSON (a subset of YAML 1.2: no aliases, the same scalars) is read by the C JSON parser, ten
    times faster than PyYAML on a schema with 10^5 categories; its depth is capped by Python's recursion limit.
    """
    if len(text) > MAX_YAML_BYTES:
        raise ValueError(f"larger than {MAX_YAML_BYTES // 2**20} MiB")
    if text.lstrip().startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass  # flow-style YAML, not JSON: read as YAML below
        except RecursionError:
            raise ValueError("nested too deeply") from None
    problem = _check_shape(text)
    if problem:
        raise ValueError(problem)
    return yaml.load(text, Loader=Yaml12Loader)  # a safe loader (SafeConstructor), bounded above


def read_yaml(path: str | Path, error: type[SdgovError], what: str) -> object:
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} file not found", str(path), "check the path")
    if path.stat().st_size > MAX_YAML_BYTES:
        raise error(f"{what} file is larger than {MAX_YAML_BYTES // 2**20} MiB", str(path), "is it the right file?")
    try:
        return parse_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"not valid YAML{at}: {problem}", str(path), f"fix the {what} file's syntax") from None
    except UnicodeDecodeError:
        raise error("not UTF-8 text", str(path), f"save the {what} file as UTF-8") from None
    except (ValueError, OverflowError, RecursionError) as exc:
        raise error(
            f"{what} file refused: {shorten(str(exc), 120) or type(exc).__name__}",
            str(path),
            f"write the {what} plainly: no deep nesting, no alias expansions, no huge values",
        ) from None


def validation_message(exc: ValidationError) -> str:
    """The first pydantic error as 'field.path: message' (plus how many more), its values shortened."""
    errs = exc.errors()
    first = errs[0]
    loc = ".".join(shorten(str(p), 40) for p in first["loc"]) or "(top level)"
    msg = shorten(first["msg"].removeprefix("Value error, "), 200)
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
    except RecursionError:
        raise error(f"{what} is nested too deeply", str(path), f"see examples/ for a valid {what}") from None
