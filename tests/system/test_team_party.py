"""The party runner of the team tests (``tests/system/team.py``): a process that opens a forbidden path is stopped
there and says so; the same command with nothing forbidden runs to its end (so a party that is not stopped really
did not open the path)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_demo_inputs
from tests.system.team import FORBIDDEN_EXIT, run_party


def test_a_party_that_opens_a_forbidden_file_is_stopped_and_says_so(tmp_path):
    spec = make_demo_inputs(tmp_path / "in", rows=200)
    data = spec.with_name("data.csv")
    keys = tmp_path / "keys"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}

    # the data file itself, reached through a symlink: stopped at the open, before any output
    link = tmp_path / "alias.csv"
    link.symlink_to(data)
    read = run_party("analyst", ["validate", "--spec", str(spec)], {**env}, forbid=[link])
    assert read.stopped and read.returncode == FORBIDDEN_EXIT, (read.returncode, read.stderr[-2000:])
    assert f"party analyst: stopped: opened forbidden path {data.resolve()}" in read.stderr
    assert read.stdout == ""

    # a forbidden directory covers what is under it, and writing counts as opening
    write = run_party("approver", ["keygen", "--out", str(keys / "cora.pem")], env, forbid=[keys])
    assert write.stopped and not (keys / "cora.pem").exists(), write.stderr[-2000:]

    # the control: the same command, something else forbidden, runs to its end (the analyst's validate would too,
    # at the cost of a dry-run fit: the team test's parties are the wider control)
    other = tmp_path / "unrelated.txt"
    made = run_party("approver", ["keygen", "--out", str(keys / "cora.pem")], env, forbid=[other])
    assert made.returncode == 0 and Path(keys / "cora.pem").is_file(), made.stderr[-2000:]


def test_a_party_can_be_a_separate_os_user_whom_the_file_system_stops(tmp_path):
    """Where the tests run as root, a party is an OS user of its own (tests/system/team.py): the controller's data,
    owner-only, is refused to them by the file system itself — one line, exit 2 — before any hook is needed."""
    import pytest

    from tests.system.team import os_users, os_users_unavailable

    if os_users_unavailable():
        pytest.skip(os_users_unavailable())
    with os_users(["Ada Analyst"], readers=[]) as (users, _):
        ada = users["Ada Analyst"]
        spec = make_demo_inputs(ada.home / "in", rows=200)
        data = spec.with_name("data.csv")
        data.chmod(0o600)  # the controller's, as the registry keeps its confidential files
        for p in (spec.parent, spec, spec.with_name("schema.yaml"), spec.with_name("approvals.yaml")):
            p.chmod(0o755 if p.is_dir() else 0o644)
        done = run_party("analyst", ["validate", "--spec", str(spec)], {"PATH": "/usr/bin:/bin"}, user=ada)
        [line] = done.stderr.strip().splitlines()
        assert done.returncode == 2 and not done.stopped and "Permission denied" in line, done.stderr[-2000:]
