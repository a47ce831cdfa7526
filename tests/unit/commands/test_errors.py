"""The CLI tells a user's mistake (one line, exit 2) from a bug in sdgov (one line asking for a report, exit 1)."""

from __future__ import annotations

import argparse

import pytest

from sdgov import commands as cli
from sdgov.base.errors import InternalError, SpecError
from sdgov.commands import release


@pytest.mark.parametrize(
    ("error", "code", "says"),
    [
        (SpecError("phi.marginals[0] is empty", "spec.yaml", "list an attribute"), 2, "spec.yaml: phi.marginals[0]"),
        (InternalError("an extremal dataset has\na negative count"), 1, "a bug in sdgov, please report it"),
    ],
)
def test_one_line_and_the_exit_code_say_whose_fault_it_is(monkeypatch, capsys, error, code, says):
    def command(args: argparse.Namespace) -> int:
        raise error

    monkeypatch.setattr(release, "cmd_demo_data", command)
    assert cli.main(["demo-data", "--out", "unused"]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
