"""The code a spec may name: audit generators and controls, by their **registered names** — never by import path.

A spec (and the audit commands' ``--generator``/``--control``) names the generator an audit fits, its positive
control and a wrapped control's ``base`` generator. Those names come from a proposal, i.e. from outside; so a name
is looked up *exactly* among the names the controller's installation registers, and only a registered name is ever
resolved to code (issue 38 item 4: a string-prefix check on ``module:attr`` paths let a signed proposal make the
worker import and call ``subprocess.getoutput`` and the CLI's ``main``). Registered are:

* the shipped audit generators and controls (:data:`SHIPPED`: ``sdgov.audits.generators`` and
  ``sdgov.audits.privacy.leaky``),
* ``honest_<name>`` / ``dishonest_<name>`` for every pipeline generator of :mod:`sdgov.generators.registry`,
* the factories a plug-in installed on the controller's machine declares as Python entry points in the group
  :data:`ENTRY_POINT_GROUP` (``[project.entry-points."sdgov.audit_generators"] my_gen = "my_pkg.gen:factory"``;
  docs/extending.md), and
* those registered in code by :func:`register_audit_generator` (a plug-in module imported by the installation),

and, as exact aliases of the shipped names, the spellings they had before (:func:`legacy_aliases`), so that what was
pre-registered with them still loads and verifies.

:func:`check_code_name` is the one check — the spec sections' validators (``validate``, ``release``, ``propose``, the
release flows), the worker before it writes a proposal (:func:`named_code` on the raw spec) and the audits' loader
(:func:`sdgov.audits.generator_protocol.load_generator`) all call it — and it imports nothing: listing entry points
reads installed metadata only, and a shipped name is resolved (imported) by the audits room, after the check.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from sdgov.base.errors import SpecError

ENTRY_POINT_GROUP = "sdgov.audit_generators"

SHIPPED: tuple[str, ...] = (  # sdgov.audits.generators
    "honest_pgm",
    "honest_ipf",
    "independent",
    "dishonest_pgm",
    "dishonest_ipf",
    "blend_ipf",
    "blend2_ipf",
    "blend5_ipf",
    "blend10_ipf",
    "camo_ipf",
    "camo2_ipf",
    "camo5_ipf",
    "camo2u_ipf",
) + (  # sdgov.audits.privacy.leaky
    "memoriser",
    "memoriser_1pct",
    "memoriser_2pct",
    "copier",
    "exact_marginal",
    "category_leak",
    "qi_copier",
    "thin_copier",
)
LEAKY: frozenset[str] = frozenset(SHIPPED[SHIPPED.index("memoriser") :])  # defined in sdgov.audits.privacy.leaky

_IN_CODE: dict[str, Callable[..., Any]] = {}
_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def register_audit_generator(name: str, factory: Callable[..., Any]) -> None:
    """Register ``factory`` under ``name`` for this process (a plug-in module the installation imports; tests). A
    name that is already registered is a bug, not an override."""
    from sdgov.base.errors import InternalError

    if name in audit_generator_names():
        raise InternalError(f"audit generator {name!r} is registered twice")
    _IN_CODE[name] = factory


def in_code(name: str) -> Callable[..., Any] | None:
    """The factory registered in code as ``name`` (None: not registered that way)."""
    return _IN_CODE.get(name)


def entry_point(name: str) -> Any | None:
    """Where the registered name ``name`` is defined, as an entry point (not loaded): sdgov's own generators are
    registered exactly as a plug-in's are — by an entry-point value ``module:attr`` — and loaded the same way, only
    after the exact name lookup; then the installed entry points of :data:`ENTRY_POINT_GROUP`. None: neither."""
    from importlib.metadata import EntryPoint, entry_points

    if is_shipped(name):
        module = "sdgov.audits.privacy.leaky" if name in LEAKY else "sdgov.audits.generators"
        return EntryPoint(name=name, value=f"{module}:{name}", group=ENTRY_POINT_GROUP)
    return next((ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name), None)


def is_shipped(name: str) -> bool:
    """Whether ``name`` is one of sdgov's own audit generators (shipped, or a pipeline generator's variant): those
    take the plan's σ and the spec's iterations by default; a plug-in's get only its params."""
    from sdgov.generators.registry import GENERATORS

    return name in SHIPPED or any(name in (f"honest_{g}", f"dishonest_{g}") for g in GENERATORS)


def audit_generator_names() -> list[str]:
    """Every registered audit generator name: shipped, the pipeline generators' variants, in code, entry points."""
    from importlib.metadata import entry_points

    from sdgov.generators.registry import GENERATORS

    names = list(SHIPPED)
    names += [f"{h}_{g}" for g in GENERATORS for h in ("honest", "dishonest") if f"{h}_{g}" not in SHIPPED]
    names += [n for n in _IN_CODE if n not in names]
    names += [ep.name for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in names]
    return names


def legacy_aliases() -> dict[str, str]:
    """The spellings sdgov's own generators had before issue 38 (``sdgov.audits.generators:honest_pgm``, …) → their
    registered names: kept as exact aliases — fixed strings, never parsed or imported — so that agreements
    pre-registered with them (stored in releases, in the agreement hash) still load and verify."""
    from sdgov.generators.registry import GENERATORS

    variants = [f"{h}_{g}" for g in GENERATORS for h in ("honest", "dishonest")]
    names = [n for n in SHIPPED if n not in LEAKY] + [v for v in variants if v not in SHIPPED]
    aliases = {f"sdgov.audits.generators:{n}": n for n in names}
    aliases.update({f"sdgov.audits.privacy.leaky:{n}": n for n in LEAKY})
    return aliases


def canonical(name: str) -> str:
    """The registered name ``name`` stands for (itself, or the name of a legacy alias)."""
    return legacy_aliases().get(name, name)


def name_problem(name: Any) -> tuple[str, str] | None:
    """Why ``name`` is not a registered audit generator name, as (what, fix); None when it is one. Imports nothing."""
    if isinstance(name, str) and (name in audit_generator_names() or name in legacy_aliases()):
        return None
    shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:77] + "…"
    plugin = f"plug-ins: entry points '{ENTRY_POINT_GROUP}'"
    if isinstance(name, str) and _PATH.match(name.strip()):
        attr = name.strip().rsplit(":", 1)[1]
        hint = f"write {attr!r}" if attr in audit_generator_names() else "name a registered one, e.g. 'honest_pgm'"
        return f"import path {shown} refused: code is named by its registered name", f"{hint} ({plugin})"
    return f"{shown} is not a registered audit generator", f"name one, e.g. 'honest_pgm' ({plugin})"


def check_code_name(name: Any, where: str) -> str:
    """``name`` itself when it is a registered audit generator name; otherwise one :class:`SpecError` line naming
    ``where`` — before anything is imported or called."""
    problem = name_problem(name)
    if problem is not None:
        raise SpecError(problem[0], where, problem[1])
    return canonical(str(name))


def validated_name(name: Any) -> Any:
    """For a settings model's validator: ``name`` unchanged when None or registered, else a ValueError whose short
    text pydantic places at the field (the spec's error line adds the file and the field: it must stay short)."""
    if name is None or name_problem(name) is None:
        return name
    shown = repr(name) if len(repr(name)) <= 60 else repr(name)[:57] + "…"
    attr = name.strip().rsplit(":", 1)[1] if isinstance(name, str) and _PATH.match(name.strip()) else None
    if attr is None:
        raise ValueError(f"{shown} is not a registered audit generator (e.g. 'honest_pgm'; docs/extending.md)")
    hint = repr(attr) if attr in audit_generator_names() else "a registered name, e.g. 'honest_pgm'"
    raise ValueError(f"import path {shown} refused: write {hint} (code is named, never imported by path)")


def named_code(spec: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Where a raw spec (a mapping, before it is parsed) names code, and the names: the audit sections' generators,
    positive control and the ``base`` of a wrapped control in their params."""
    found: list[tuple[str, Any]] = []
    nested = spec.get("sections")
    for section, fields in (("audit", ("generator", "positive_control")), ("privacy_risk", ("generator",))):
        values = spec.get(section)
        if values is None and isinstance(nested, Mapping):  # the agreement's own form: sections: {audit: …}
            values = nested.get(section)
        if not isinstance(values, Mapping):
            continue
        found += [(f"{section}.{f}", values[f]) for f in fields if values.get(f) is not None]
        for params in ("generator_params", "control_params"):
            p = values.get(params)
            if isinstance(p, Mapping) and p.get("base") is not None:
                found.append((f"{section}.{params}.base", p["base"]))
    return found


def check_named_code(spec: Mapping[str, Any]) -> None:
    """:func:`check_code_name` for every place a raw spec names code (:func:`named_code`): the first unregistered
    one is the one line."""
    for where, name in named_code(spec):
        check_code_name(name, where)
