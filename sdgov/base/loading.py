"""Load a YAML/JSON file into a pydantic model, turning any failure into one clear line.

The loader is bounded and reads YAML 1.2 the way people write codes. It builds the document itself in one pass
over libyaml's event stream (PyYAML's constructor would parse twice and apply YAML 1.1), and:

- **caps size, depth and expansion** as it goes: a 140 KB alias bomb (a billion nodes once expanded) or a
  100,000-deep nesting is refused in one line instead of eating gigabytes or the Python stack; an alias counts
  as the whole node it names, so a legitimate anchor costs nothing and a bomb is caught before it is expanded;
- **YAML 1.2 booleans**: only ``true``/``false`` are booleans. PyYAML follows YAML 1.1, where ``NO`` (Norway),
  ``yes``, ``on``, ``off``, ``y`` and ``n`` are booleans too — a category code ``NO`` would silently become
  ``False``. Here they stay strings;
- **YAML 1.2 numbers**: ``012`` is twelve (1.1 reads it as octal ten), ``1:20`` is a string (1.1: the
  sexagesimal 80), ``1e3`` is a float (1.1: a string);
- **plain data only**: a duplicate key in one mapping, a merge key's tag or any non-data tag (``!!python/…``,
  ``!!binary``, ``!!set``) is refused rather than silently resolved;
- a document in **JSON** (a subset of YAML 1.2) is read by the C JSON parser, ten times faster on a schema with
  10^5 categories.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from sdgov.base.errors import SdgovError, shorten

M = TypeVar("M", bound=BaseModel)

MAX_YAML_BYTES = 64 * 1024 * 1024  # a schema of 10^6 categories is ~30 MB
MAX_YAML_DEPTH = 64  # the deepest real file (spec → audit → settings → ...) is under 10
MAX_YAML_NODES = 10_000_000  # nodes after expanding aliases: 10^6 categories are ~4·10^6

_Parser: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's event parser when built with it (C)

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}


_TAG_TYPES: dict[str, type | tuple[type, ...]] = {
    "int": int,
    "float": (int, float),
    "bool": bool,
    "null": type(None),
}


def _plain_scalar(text: str) -> Any:
    """A plain (unquoted) scalar under the YAML 1.2 core schema."""
    if _NULL.match(text):
        return None
    if _BOOL.match(text):
        return text.lower() == "true"
    if _INT.match(text):
        if text.startswith(("0o", "0x")):
            return int(text[2:], 8 if text[1] == "o" else 16)
        return int(text, 10)
    if _FLOAT.match(text):
        low = text.lower()
        if low.endswith((".inf", ".nan")):
            return float(low.replace(".", ""))
        return float(text)
    return text


def _scalar(event: Any) -> Any:
    tag = event.tag
    if tag in (None, "!") and event.implicit[0]:
        return _plain_scalar(event.value)
    if tag in (None, "!", "tag:yaml.org,2002:str"):
        return event.value  # quoted, block, or tagged text
    if tag not in _TAGS:
        raise ValueError(f"the tag {tag!r} is not allowed (plain data only)")
    value = _plain_scalar(event.value)
    kind = tag.rsplit(":", 1)[1]
    expected = _TAG_TYPES.get(kind)
    if expected is None or not isinstance(value, expected) or (kind == "int" and isinstance(value, bool)):
        raise ValueError(f"{event.value!r} is not a valid !!{kind}")
    return float(value) if kind == "float" and isinstance(value, int | float) else value


class _Collection:
    """A mapping or sequence being built from events, and what its expansion costs (for the alias-bomb cap)."""

    __slots__ = ("anchor", "key", "nodes", "value")

    def __init__(self, value: dict[Any, Any] | list[Any], anchor: str | None) -> None:
        self.value, self.anchor, self.nodes, self.key = value, anchor, 1, _NO_KEY

    def add(self, item: Any) -> None:
        if isinstance(self.value, list):
            self.value.append(item)
        elif self.key is _NO_KEY:
            if isinstance(item, (dict, list)):
                raise ValueError("a mapping key must be a plain value")
            if item in self.value:
                raise ValueError(f"the key {item!r} appears twice in one mapping")
            self.key = item
        else:
            self.value[self.key] = item
            self.key = _NO_KEY


_NO_KEY = object()


def _build(text: str) -> Any:
    """YAML text → Python objects in one pass over libyaml's events, bounded as it goes: depth, expanded size
    (an alias counts as the whole node it names), YAML 1.2 core scalars, duplicate keys and non-data tags refused.
    PyYAML's own constructor would parse the text a second time and resolve every scalar with the 1.1 rules."""
    anchors: dict[str, tuple[Any, int]] = {}  # anchor → (value, nodes it expands to)
    stack: list[_Collection] = []
    root: list[Any] = []
    total = 0

    def emit(value: Any, nodes: int) -> None:
        nonlocal total
        total += nodes
        if total > MAX_YAML_NODES:
            raise ValueError(f"expands to more than {MAX_YAML_NODES:,} nodes (aliases included: an alias bomb?)")
        if stack:
            stack[-1].add(value)
            stack[-1].nodes += nodes
        else:
            root.append(value)

    for event in yaml.parse(text, Loader=_Parser):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if event.tag not in (None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"):
                raise ValueError(f"the tag {event.tag!r} is not allowed (plain data only)")
            stack.append(_Collection({} if isinstance(event, yaml.MappingStartEvent) else [], event.anchor))
            if len(stack) > MAX_YAML_DEPTH:
                raise ValueError(f"nested more than {MAX_YAML_DEPTH} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            done = stack.pop()
            total -= done.nodes - 1  # its children were counted as they came; count the whole once, below
            if done.anchor is not None:
                anchors[done.anchor] = (done.value, done.nodes)
            emit(done.value, done.nodes)
        elif isinstance(event, yaml.ScalarEvent):
            value = _scalar(event)
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1)
            emit(value, 1)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                raise ValueError(f"the alias *{event.anchor} names no anchor")
            value, nodes = anchors[event.anchor]
            emit(value, nodes)
        elif isinstance(event, yaml.DocumentStartEvent) and root:
            raise ValueError("more than one YAML document in the file")
    return root[0] if root else None


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
    return _build(text)


def read_yaml(path: str | Path, error: type[SdgovError], what: str) -> object:
    """The parsed content of a YAML (or JSON) file, bounded by :func:`parse_yaml`; a missing, oversized, non-UTF-8,
    malformed or refused file raises ``error`` with one line naming ``what``."""
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
            f"write the {what} as plain YAML data: each key once, no custom tags, no deep nesting or alias bombs",
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
    """The YAML file validated as ``cls``; anything but a mapping that validates raises ``error`` with one line naming
    ``what``."""
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
