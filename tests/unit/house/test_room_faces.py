"""Each room's face: ``__all__`` names what other rooms use from it, every listed name resolves, and importing a
room loads none of its modules (faces are lazy, PEP 562), so a command pays only for what it uses."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys

import pytest

from tests.fixtures.house import ROOMS, module_files, room_of

CODE_ROOMS = sorted(r for r in ROOMS if r not in ("contracts", "artifacts", "cards"))


@pytest.mark.parametrize("room", CODE_ROOMS)
def test_every_name_on_a_face_resolves(room: str) -> None:
    package = importlib.import_module(f"sdgov.{room}")
    assert package.__all__, f"sdgov.{room} has an empty face"
    missing = [name for name in package.__all__ if getattr(package, name, None) is None]
    assert missing == []
    assert sorted(dir(package)) == sorted(set(dir(package)))


def test_faces_list_what_other_rooms_import() -> None:
    """Every name one room imports from another room's module is on that room's face: the face is the room's real
    surface, kept current (a submodule imported as a module is its own face)."""
    files = module_files()
    off_face = []
    for module, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.ImportFrom) and node.module in files):
                continue
            room, other = room_of(module), room_of(node.module)
            if other in (room, None, "sdgov", "contracts", "artifacts", "cards") or node.module == f"sdgov.{other}":
                continue
            face = importlib.import_module(f"sdgov.{other}").__all__
            for alias in node.names:
                if f"sdgov.{other}.{alias.name}" in files:  # a name its module shares: reached by the module path
                    continue
                if f"{node.module}.{alias.name}" not in files and alias.name not in face:
                    off_face.append(f"{module} imports {node.module}.{alias.name}")
    assert off_face == [], "names used across rooms but missing from the room's face:\n" + "\n".join(sorted(off_face))


def test_importing_a_room_loads_none_of_its_modules() -> None:
    code = (
        "import sys; import sdgov.registry, sdgov.governance, sdgov.measurement, sdgov.audits; "
        "print(sorted(m for m in sys.modules if m.startswith('sdgov.') and m.count('.') > 1 "
        "and not m.startswith('sdgov.base.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
