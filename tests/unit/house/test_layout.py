"""The house's naming rules: one definition per public name, and no machine's path in any tracked file.

A newcomer who greps for ``Candidate`` or ``preflight`` should land on one definition, not pick between two that
mean different things; and a path of one developer's machine in a tracked file breaks every other checkout
(the census extract is ``../shared/data`` or an option, never a developer's home or work folder).
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections import defaultdict

from tests.conftest import REPO
from tests.fixtures.house import ROOMS, module_files

# Names that are a protocol every module of a kind implements, not a homonym: each stage module has a VERSION,
# each CLI command module an ``add_parser``, each audit package the ``audit_checks`` it registers.
PROTOCOL_NAMES = {"VERSION", "add_parser", "audit_checks"}


def public_definitions() -> dict[str, list[str]]:
    """Every public top-level function and class of the core, flows and stages, by name → defining modules."""
    found: dict[str, list[str]] = defaultdict(list)
    for module, path in module_files().items():
        if module.startswith("sdgov.cards"):
            continue
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith(
                "_"
            ):
                found[node.name].append(module)
    return found


def test_public_definitions_see_the_house() -> None:
    found = public_definitions()
    assert found["Schema"] == ["sdgov.data.schema"] and "sdgov.commands" in str(found["main"])


def test_each_public_name_is_defined_once() -> None:
    twice = {
        name: modules
        for name, modules in public_definitions().items()
        if len(modules) > 1 and name not in PROTOCOL_NAMES
    }
    assert twice == {}, "public names defined in more than one module (rename one):\n" + "\n".join(
        f"{name}: {', '.join(modules)}" for name, modules in sorted(twice.items())
    )


def test_clique_is_defined_once() -> None:
    """``Clique`` is a type alias, not a def: the one in ``sdgov.data.schema`` is the only one (mbi has one too)."""
    aliases = []
    for module, path in module_files().items():
        for node in ast.parse(path.read_text(), str(path)).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if any(isinstance(t, ast.Name) and t.id == "Clique" for t in targets):
                aliases.append(module)
    assert aliases == ["sdgov.data.schema"]


MACHINE_PATH = re.compile(r"(?<![\w.])/(work|home|Users|root|mnt)/[\w.-]+")


def test_no_machine_path_in_a_tracked_file() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    hits = []
    for name in tracked.split():
        if name.startswith("benchmarks/results/"):  # measured records: they name the machine they ran on
            continue
        path = REPO / name
        if not path.is_file() or path.suffix in {".png", ".parquet"}:
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if MACHINE_PATH.search(line) and "MACHINE_PATH" not in line:
                hits.append(f"{name}:{n}: {line.strip()[:100]}")
    assert hits == [], "machine paths (use ../shared/data, an option or a temporary directory):\n" + "\n".join(hits)


# ------------------------------------------------------------------ tests never import tests (issue 41)

CODE_IMPORT = re.compile(r"^\s*(?:from\s+(\S+)\s+import\s+(.+)|import\s+(.+))$")


def _is_test_module(name: str) -> bool:
    """``tests.unit.test_ledger`` (or a name inside one): a module pytest collects, not a helper."""
    parts = name.split(".")
    return parts[0] == "tests" and any(p.startswith("test_") for p in parts[1:])


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """Every module (or module.name) an import statement names, relative imports resolved against ``package``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def imports_of_test_modules(source: str, path: str, package: str) -> list[str]:
    """``file:line: module`` for each test module that ``source`` imports, in any form: ``import``/``from … import``,
    absolute or relative, at the top or inside a function, or in code a string hands to a child process."""
    hits: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            named = [n for n in _imported(node, package) if _is_test_module(n)]
            if named:
                hits.append((node.lineno, f"{path}:{node.lineno}: {named[0]}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for offset, line in enumerate(node.value.splitlines()):
                m = CODE_IMPORT.match(line)
                if m:
                    names = [m.group(1)] if m.group(1) else [n.split(" as ")[0].strip() for n in m.group(3).split(",")]
                    if m.group(1):
                        names += [f"{m.group(1)}.{n.split(' as ')[0].strip()}" for n in m.group(2).split(",")]
                    if any(_is_test_module(n) for n in names):
                        line_no = node.lineno + offset
                        hits.append((line_no, f"{path}:{line_no}: {line.strip()} (code in a string)"))
    return [hit for _, hit in sorted(hits)]


def test_the_test_import_check_catches_every_form() -> None:
    """The positive control: each way of importing a test module is caught, a helper module is not."""
    source = '''
from tests.unit.TEST_ledger import RHO
import tests.system.TEST_governed as governed
from tests.unit import TEST_sampler
from .TEST_selection import draft


def late():
    from tests.unit.TEST_pgm_tables import TREE


CHILD = """
import json
from tests.unit.TEST_privacy_power import IPF
"""
from tests.conftest import REPO
from tests.fixtures.ledger import RHO
from . import conftest
'''.replace("TEST_", "test_")  # not spelt out: this very file is checked too
    hits = imports_of_test_modules(source, "tests/unit/test_x.py", "tests.unit")
    assert [h.split(":")[1] for h in hits] == ["2", "3", "4", "5", "9", "14"], hits


def test_no_module_under_tests_imports_a_test_module() -> None:
    """A test module's helpers live in tests/fixtures/ (or a conftest.py, for fixtures), never in another test module:
    importing one runs its module code, collects nothing, and ties two files' tests to one module's private names.
    Helpers (conftest.py, tests/fixtures/, tests/governance.py, …) are checked too: none may reach into a test."""
    hits = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        rel = path.relative_to(REPO)
        package = ".".join(rel.parent.parts)
        hits += imports_of_test_modules(path.read_text(encoding="utf-8"), rel.as_posix(), package)
    assert hits == [], "test modules imported (move the helper to tests/fixtures/, a fixture to conftest.py):\n" + (
        "\n".join(hits)
    )


# ------------------------------------------------------------------ unit tests mirror the rooms (issue 41)

FLOORS = {"commands", "flows", "plumbing", "tasks", "house"}  # the floors above the core, and the house's own rules


def test_unit_tests_live_in_the_folder_of_the_room_they_test() -> None:
    """``tests/unit/<room>/test_*.py``: a newcomer finds a room's tests beside its name, and each folder is a package
    (two rooms may each have a ``test_x.py``)."""
    unit = REPO / "tests" / "unit"
    misplaced = [
        str(p.relative_to(unit))
        for p in sorted(unit.rglob("test_*.py"))
        if len(p.relative_to(unit).parts) != 2 or p.parent.name not in set(ROOMS) | FLOORS
    ]
    assert misplaced == [], "unit tests outside a room's folder:\n" + "\n".join(misplaced)
    folders = {p.parent for p in unit.rglob("test_*.py")}
    assert all((f / "__init__.py").is_file() for f in folders)
