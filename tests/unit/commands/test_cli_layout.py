"""The CLI's layout (issue 23 item 4): one module per command group, each registered by the one
``add_parser(subparsers, parents)``; the shared flags declared once, as parent parsers; and importing the package
changes nothing (the environment defaults are set by ``main()``)."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command a user can run (``audit privacy`` included), with its parser."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield " ".join(path), parser
    for group in groups:
        for name, sub in group.choices.items():
            yield from _leaves(sub, (*path, name))


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return parser._option_string_actions.get(flag)


def test_every_command_module_has_the_one_signature() -> None:
    from sdgov import commands as cli

    assert cli.COMMANDS, "no command modules"
    for module in cli.COMMANDS:
        assert module.__name__.startswith("sdgov.commands."), module
        sig = inspect.signature(module.add_parser)
        assert list(sig.parameters) == ["subparsers", "parents"], (module.__name__, sig)
        assert sig.return_annotation in (None, "None"), (module.__name__, sig)


def test_every_module_of_the_package_is_a_listed_command_or_private() -> None:
    from sdgov import commands as cli

    listed = {m.__name__.rsplit(".", 1)[1] for m in cli.COMMANDS}
    found = {m.name for m in pkgutil.iter_modules(cli.__path__)}
    assert {n for n in found if not n.startswith("_")} == listed


def test_importing_the_cli_sets_no_environment_variable() -> None:
    code = (
        "import os, json; before = dict(os.environ); import sdgov.commands; from sdgov.commands import parser; "
        "parser(); print(json.dumps(dict(os.environ) == before))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DVC_"))}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) is True


def test_main_sets_the_defaults_without_overriding_the_user(monkeypatch, tmp_path, capsys) -> None:
    from sdgov.commands import ENV_DEFAULTS, main

    for name in ENV_DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "7")
    assert main(["keygen", "--out", str(tmp_path / "k.pem")]) == 0
    assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false" and os.environ["DVC_NO_ANALYTICS"] == "1"
    assert os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] == "7"


def test_shared_flags_are_declared_once_in_their_parent_parser() -> None:
    """Every command taking ``--root`` (``--spec`` and ``--data`` where they mean the same) holds the very action of
    the parent parser, so its help and default cannot drift; every command takes ``--json``."""
    from sdgov.commands import parser
    from sdgov.commands._common import parent_parsers

    parents = parent_parsers()
    p = parser(parents)
    commands = dict(_leaves(p))
    root = _option(parents.root, "--root")
    with_root = {name for name, sp in commands.items() if _option(sp, "--root") is not None}
    assert with_root == {
        "demo",
        "init",
        "release",
        "validate",
        "stage",
        "registry",
        "trail",
        "budget",
        "propose",
        "runs",
        "sign",
        "approve",
        "review",
        "approvers",
        "approvals",
        "schedule",
        "publish",
    }
    for name in with_root:
        assert _option(commands[name], "--root") is root, name
    for name, sp in commands.items():
        assert _option(sp, "--json") is _option(parents.json, "--json"), name
        spec = _option(sp, "--spec")
        if spec is not None and spec.required:
            assert spec is _option(parents.spec, "--spec"), name
    assert "audit privacy" in commands and "audit decomposability" in commands


@pytest.mark.parametrize("argv", [["registry", "list"], ["budget"], ["trail"], ["init"]])
def test_root_flag_behaves_alike_everywhere(argv, tmp_path) -> None:
    from sdgov.commands import parser

    p = parser()
    assert p.parse_args(argv).root is None  # the default: $SDGOV_REGISTRY or ./registry, resolved by Registry
    assert p.parse_args([*argv, "--root", str(tmp_path)]).root == str(tmp_path)


def test_audit_options_belong_to_their_audit(capsys) -> None:
    """``audit privacy`` and ``audit decomposability`` are sub-commands: an option of the other one is refused."""
    from sdgov.commands import main

    for argv in (
        ["audit", "privacy", "--spec", "s.yaml", "--K", "3"],
        ["audit", "decomposability", "--spec", "s.yaml", "--shadows", "2"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "unrecognized arguments" in err, err


def test_keygen_loads_neither_prefect_nor_jax(tmp_path) -> None:
    code = (
        "import sys, json; from sdgov.commands import main; rc = main(['keygen', '--out', sys.argv[1]]); "
        "print(json.dumps([rc, sorted(m for m in ('prefect', 'jax') if m in sys.modules)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "k.pem")], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.splitlines()[-1]) == [0, []]
    assert Path(tmp_path / "k.pem").exists()
