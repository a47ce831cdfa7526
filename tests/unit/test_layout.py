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
from tests.fixtures.house import module_files

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
    assert found["Schema"] == ["sdgov.data.schema"] and "sdgov.flows.cli" in str(found["main"])


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
