"""The import graph of the house: no cycles, stages independent of each other, the core never reaching up, each floor
above it importing only the floors below (nothing imports a command).

Built from the source with ``ast`` (nothing is imported), over ``sdgov/`` plus ``commands/``, ``flows/``, ``tasks/``,
``cards/`` under the names they install as (``commands/__init__.py`` is ``sdgov.commands``). Imports inside functions
count: they run too, and a lazy import is how a cycle hides. Imports under ``if TYPE_CHECKING:`` do not, as they
never run.
"""

from __future__ import annotations

import ast

from tests.fixtures.house import FLOORS, ROOMS, floor_of, module_files, room_of

# The stages' shared toolkit (logger, provenance record), not a stage: every stage may import it.
STAGE_TOOLKIT = {"sdgov.tasks", "sdgov.tasks.common", "sdgov.tasks.executor"}  # shared stage plumbing, not stages


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool, type_only: bool = False) -> set[str]:
    """Every module name an import statement in ``tree`` names (``from a import b`` names ``a`` and ``a.b``); those
    under ``if TYPE_CHECKING:`` too when ``type_only``."""
    names: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_only:
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return names


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    """Module → the modules it imports (at runtime; with ``type_only``, for its type hints too)."""
    files = module_files()
    graph = {}
    for module, path in files.items():
        named = _imports(ast.parse(path.read_text(), str(path)), module, path.name == "__init__.py", type_only)
        graph[module] = {n for n in named if n in files and n != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One concrete cycle per strongly connected component (Tarjan), each as a closed path a → … → a."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_closed_path(graph, component) for component in components]


def _closed_path(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """The shortest cycle through the component's first module, found breadth-first inside the component."""
    start = min(component)
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [*reversed(path), start]
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle in component {component}")


def _is_stage(module: str) -> bool:
    return module.startswith("sdgov.tasks.") and module not in STAGE_TOOLKIT


def _is_core(module: str) -> bool:
    """A module of the core's rooms (``sdgov.cards`` among them: templates the core reads as package data)."""
    return floor_of(module) is None


def _is_orchestration(module: str) -> bool:
    """A module on a floor above the core: a command, a flow, the plumbing or a stage."""
    return floor_of(module) is not None


def test_the_graph_sees_the_house() -> None:
    graph = import_graph()
    assert "sdgov.commands" in graph and "sdgov.tasks.generate" in graph and "sdgov.registry.log" in graph
    assert "sdgov.governance.site" in graph["sdgov.tasks.agree_phi"]  # absolute imports resolve to modules
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles:\n" + "\n".join(" → ".join(c) for c in found)


def test_no_stage_imports_another_stage() -> None:
    graph = import_graph()
    bad = sorted(f"{m} → {t}" for m in graph if _is_stage(m) for t in graph[m] if _is_stage(t))
    assert bad == [], "stages importing stages:\n" + "\n".join(bad)


def test_the_core_never_imports_commands_flows_or_stages() -> None:
    graph = import_graph()
    bad = sorted(f"{m} → {t}" for m in graph if _is_core(m) for t in graph[m] if _is_orchestration(t))
    assert bad == [], "core importing commands/flows/plumbing/tasks:\n" + "\n".join(bad)


def _off_the_floors(graph: dict[str, set[str]]) -> list[str]:
    """Each edge from a module to a floor the table (``FLOORS``) does not place below the module's own (the core:
    none), as a line — a command imported by anything but a command among them."""
    bad = []
    for module, targets in graph.items():
        floor = floor_of(module)
        for target in targets:
            other = floor_of(target)
            if other is not None and other != floor and (floor is None or other not in FLOORS[floor]):
                bad.append(f"{module} ({floor or 'core'}) → {target} ({other})")
    return sorted(bad)


def test_the_floor_check_catches_a_command_imported_below_it() -> None:
    """The positive control: the core, a flow or the plumbing importing a command is caught, and so are the plumbing
    importing a flow and a command importing a stage; a command importing a flow, the plumbing or the core is not."""
    graph = {
        "sdgov.governance.site": {"sdgov.commands.approve"},
        "sdgov.flows.governed": {"sdgov.commands._common", "sdgov.flows.plumbing.pending"},
        "sdgov.flows.plumbing.prefect_api": {"sdgov.commands", "sdgov.flows.release"},
        "sdgov.commands.approve": {"sdgov.flows.plumbing.prefect_api", "sdgov.governance.site", "sdgov.flows.governed"},
        "sdgov.commands.stage": {"sdgov.tasks.generate", "sdgov.flows.dvc_stages"},
    }
    assert _off_the_floors(graph) == [
        "sdgov.commands.stage (commands) → sdgov.tasks.generate (tasks)",
        "sdgov.flows.governed (flows) → sdgov.commands._common (commands)",
        "sdgov.flows.plumbing.prefect_api (plumbing) → sdgov.commands (commands)",
        "sdgov.flows.plumbing.prefect_api (plumbing) → sdgov.flows.release (flows)",
        "sdgov.governance.site (core) → sdgov.commands.approve (commands)",
    ]


def test_each_floor_imports_only_the_floors_below_it() -> None:
    """The floors' table (``FLOORS`` in tests/fixtures/house.py): the commands may import the flows, the plumbing and
    the core (a stage only through a flow's use case), and no module outside the commands imports one; a flow
    imports the plumbing, the stages and the core; the plumbing and the stages import only the core. Type hints obey
    it too."""
    graph = import_graph()
    assert {"sdgov.commands", "sdgov.flows.plumbing.prefect_api", "sdgov.flows.release"} <= set(graph)
    bad = _off_the_floors(graph) + _off_the_floors(import_graph(type_only=True))
    assert bad == [], "imports that reach up or sideways between floors:\n" + "\n".join(sorted(set(bad)))


def test_every_core_module_has_a_room() -> None:
    homeless = sorted(m for m in import_graph() if not _is_orchestration(m) and room_of(m) is None)
    assert homeless == [], "core modules outside every room (add them to a room or to ROOMS):\n" + "\n".join(homeless)


def test_the_room_table_has_no_cycles() -> None:
    assert cycles({room: set(below) for room, below in ROOMS.items()}) == []


def _upward(graph: dict[str, set[str]], arrow: str) -> list[str]:
    """Each edge of ``graph`` from a room's module to a room the table does not place below it, as a line."""
    bad = []
    for module, targets in graph.items():
        room = room_of(module)
        if _is_orchestration(module) or room in (None, "sdgov"):
            continue
        for target in targets:
            other = room_of(target)
            if other not in (room, "sdgov", None) and other not in ROOMS[room]:
                bad.append(f"{module} ({room}) {arrow} {target} ({other})")
    return sorted(bad)


def test_rooms_import_only_downward() -> None:
    bad = _upward(import_graph(), "→")
    assert bad == [], "imports that go up or sideways between rooms:\n" + "\n".join(bad)


def test_type_hints_import_only_downward_too() -> None:
    """Issue 39: a type-only import is no cycle at runtime, but it is one in the design — the generator plug-ins
    named their input types from the agreement and measurement rooms two floors up. ψ (sdgov.data.psi) and the
    generator's settings (sdgov.generators.settings) now sit at or below the plug-ins: type hints obey the floors,
    and no room's modules form a circle through their type hints either."""
    graph = import_graph(type_only=True)
    bad = _upward(graph, "⇢")
    assert bad == [], "type hints that reach up or sideways between rooms:\n" + "\n".join(bad)
    across = [c for c in cycles(graph) if len({room_of(m) for m in c}) > 1 or room_of(c[0]) == "utility"]
    assert across == [], "circles through type hints:\n" + "\n".join(" → ".join(c) for c in across)
