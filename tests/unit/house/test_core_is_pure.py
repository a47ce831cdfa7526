"""The core (``sdgov/`` outside the mapped commands/flows/tasks/cards) never imports Prefect.

Each core module is imported in a fresh interpreter where ``prefect`` cannot be imported at all, so an indirect
import through a third module fails just as a direct one does. The module list is walked from the files, so a new
module is covered the day it is added.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

MAPPED = ("sdgov.commands", "sdgov.flows", "sdgov.tasks", "sdgov.cards")  # installed from commands/, flows/, …

_CHILD = """
import importlib, importlib.abc, json, sys, traceback

class NoPrefect(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "prefect" or name.startswith("prefect."):
            raise ImportError(f"the core must not import {name}")
        return None

sys.meta_path.insert(0, NoPrefect())
failures = {}
for module in json.loads(sys.argv[1]):
    try:
        importlib.import_module(module)
    except Exception as exc:
        failures[module] = traceback.format_exception_only(exc)[-1].strip()
print(json.dumps(failures))
"""


def core_modules() -> list[str]:
    found = []
    for path in sorted((REPO / "sdgov").rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not name.startswith(MAPPED):
            found.append(name)
    return found


def test_the_walk_finds_the_core() -> None:
    modules = core_modules()
    assert {
        "sdgov",
        "sdgov.agreement.spec",
        "sdgov.registry.log",
        "sdgov.audits.privacy.run",
        "sdgov.utility.report",
    } <= set(modules)
    assert not any(m.startswith(MAPPED) for m in modules)


def test_every_core_module_imports_without_prefect() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(core_modules())],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    failures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert failures == {}, "\n".join(f"{m}: {err}" for m, err in failures.items())
