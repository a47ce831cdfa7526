"""One settings module (issue 38): ``SDGOV_*`` is read from the environment in ``sdgov/base/settings.py`` only, and the
controller's site is resolved from it once, where a process starts, then passed down."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sdgov.base import settings as settings_module
from sdgov.base.settings import Settings, load_settings
from sdgov.governance.site import Site
from tests.conftest import REPO

SETTINGS = REPO / "sdgov" / "base" / "settings.py"
SOURCES = [p for d in ("sdgov", "flows", "tasks", "cards") for p in sorted((REPO / d).rglob("*.py"))]
READERS = {"get", "getenv", "pop", "setdefault", "__getitem__"}


def _environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ``."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _named(module: ast.Module) -> dict[str, str]:
    """The module's own string constants (``NAME = "..."``) and what it imports from the settings module."""
    out: dict[str, str] = {}
    exported = {k: v for k, v in vars(settings_module).items() if isinstance(v, str)}
    for n in module.body:
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
            out.update({t.id: n.value.value for t in n.targets if isinstance(t, ast.Name)})
    for n in ast.walk(module):
        if isinstance(n, ast.ImportFrom) and n.module == "sdgov.base.settings":
            out.update({a.asname or a.name: exported.get(a.name, "") for a in n.names})
    return out


def _key(node: ast.AST, named: dict[str, str]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return named.get(node.id, "")
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return ""


def sdgov_reads(path: Path) -> list[str]:
    """Every read of an ``SDGOV_*`` variable from the environment in ``path`` (file:line what)."""
    module = ast.parse(path.read_text(), str(path))
    named = _named(module)
    found = []
    for node in ast.walk(module):
        key = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            f = node.func
            if (f.attr in READERS and _environ(f.value)) or (f.attr == "getenv"):
                key = _key(node.args[0], named)
        elif isinstance(node, ast.Subscript) and _environ(node.value):
            key = _key(node.slice, named)
        elif isinstance(node, ast.Compare) and any(_environ(c) for c in node.comparators):
            key = _key(node.left, named)
        if key and key.startswith("SDGOV_"):
            found.append(f"{path.relative_to(REPO)}:{node.lineno} reads {key}")
    for n in module.body:  # a module of its own naming an SDGOV_ variable is a second settings module
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and str(n.value.value).startswith("SDGOV_"):
            found.append(f"{path.relative_to(REPO)}:{n.lineno} names {n.value.value}")
    return found


def test_no_sdgov_variable_is_read_outside_the_settings_module():
    reads = [r for p in SOURCES if p != SETTINGS for r in sdgov_reads(p)]
    assert reads == [], "read the settings (sdgov.base.settings) instead:\n" + "\n".join(reads)


def test_the_check_catches_a_read_however_it_is_spelt(tmp_path):
    """The control: each way of reading the environment is found (a literal, a constant, one imported from the
    settings module), and so is a module naming a variable of its own."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import os\nfrom os import environ\nfrom sdgov.base.settings import AUTHORITY\nENV = 'SDGOV_KEY_DIR'\n"
        "a = os.environ.get('SDGOV_REGISTRY')\nb = os.environ[ENV]\nc = os.getenv(AUTHORITY)\n"
        "d = 'SDGOV_X' in os.environ\ne = environ.get(f'SDGOV_{1}')\nf = os.environ.get('HOME')\n"
    )
    with pytest.MonkeyPatch.context() as m:
        m.setattr("tests.unit.base.test_settings.REPO", tmp_path)
        found = sdgov_reads(bad)
    assert [f.split(" ", 1)[1] for f in found] == [
        "reads SDGOV_REGISTRY",
        "reads SDGOV_KEY_DIR",
        "reads SDGOV_AUTHORITY",
        "reads SDGOV_X",
        "reads SDGOV_",
        "names SDGOV_KEY_DIR",
    ]


def test_the_site_is_resolved_once_from_the_settings_and_keeps_them(tmp_path, monkeypatch):
    """A site resolved at a process's start keeps its registry, keys and authority: a later change of the
    environment (a run's code, a library) redirects nothing it was given."""
    monkeypatch.setenv("SDGOV_KEY_DIR", str(tmp_path / "keys"))
    monkeypatch.setenv("SDGOV_AUTHORITY", str(tmp_path / "auth.sqlite"))
    monkeypatch.setenv("SDGOV_REGISTRY", str(tmp_path / "reg"))
    site = Site.resolve()
    monkeypatch.setenv("SDGOV_KEY_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("SDGOV_AUTHORITY", str(tmp_path / "other.sqlite"))
    assert site.root == tmp_path / "reg" and site.keys.key_dir == tmp_path / "keys"
    assert site.authority.where == str(tmp_path / "auth.sqlite")
    assert Site.resolve(tmp_path / "flag").root == tmp_path / "flag"  # --root wins over $SDGOV_REGISTRY
    assert load_settings().authority() == str(tmp_path / "other.sqlite")  # a new process reads the new settings


def test_defaults_follow_the_users_directories(tmp_path, monkeypatch):
    for name in ("SDGOV_KEY_DIR", "SDGOV_AUTHORITY", "SDGOV_JAX_CACHE_DIR", "SDGOV_REGISTRY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    s = Settings()
    assert s.key_dir() == tmp_path / "config" / "sdgov" / "keys"
    assert s.authority() == str(tmp_path / "data" / "sdgov" / "authority.sqlite")
    assert s.jax_cache_dir() == str(tmp_path / "cache" / "sdgov" / "jax")
    assert s.registry_root() == Path("registry")
    monkeypatch.setenv("SDGOV_JAX_CACHE_DIR", "")
    assert Settings().jax_cache_dir() is None  # empty: nothing kept
