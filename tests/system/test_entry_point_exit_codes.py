"""Malformed input through the real entry points (``python -m sdgov.commands`` and the installed ``sdgov``
script, each a fresh interpreter): exit 2, one line on stderr, nothing written. The same cases run in-process in
tests/unit/intake/test_malformed_inputs.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.inputs import Inputs, assert_refused, tree  # the fixture `inputs`: tests/conftest.py
from tests.fixtures.malformed import BY_ID

SUBPROCESS_CASES = [
    ("schema-not-yaml", [sys.executable, "-m", "sdgov.commands"]),
    ("data-wrong-type-text-for-integer-codes", [str(Path(sys.executable).with_name("sdgov"))]),
    ("approvals-self-approval", [sys.executable, "-m", "sdgov.commands"]),
]


@pytest.mark.parametrize("case_id, command", [pytest.param(c, cmd, id=c) for c, cmd in SUBPROCESS_CASES])
def test_real_entry_point_exit_code(case_id: str, command: list[str], inputs: Inputs, tmp_path: Path) -> None:
    if not Path(command[0]).exists():
        pytest.skip(f"{command[0]} not installed")
    _, mutate, expect = BY_ID[case_id]
    mutate(inputs)
    before = tree(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "SDGOV_REGISTRY"}
    proc = subprocess.run(
        [*command, *inputs.release_argv()], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.stdout == ""
    assert_refused(inputs, proc.returncode, proc.stderr, expect, before, tmp_path)
