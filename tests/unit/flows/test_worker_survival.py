"""What keeps the controller's worker honest about the runs it holds (issue 38 item 7), without Prefect: a run that
ended with nobody to go on with it is logged once and says what it had spent; the files an approver is shown are
checked against the hashes logged with the pause; ``sdgov approve`` reports a decision only once the run logged it;
a full disk is one line naming the file, and never leaves half a log line. The system tests drive the same code
through the real worker (tests/system/test_team_postgres.py)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from sdgov.base.atomic import atomic_write_bytes
from sdgov.base.errors import DiskFull, SdgovError, disk_full
from sdgov.base.hashing import sha256_file
from sdgov.governance import decisions
from sdgov.registry.log import Registry
from tests.fixtures.pauses import pause


def test_a_run_that_ended_is_logged_once_with_what_it_had_spent(governed) -> None:
    registry, _ = governed
    decisions.record_run_ended(registry, "fr-1", "forced to COMPLETED")
    decisions.record_run_ended(registry, "fr-1", "the worker restarted")  # once per run: the first says why
    p = pause(registry)
    decisions.record_pending(p, "release-1", {"sha256": p.sha256})
    registry.append("budget_spent", "sdgov", "system", run_id=p.run_id)
    decisions.record_run_ended(registry, p.flow_run_id, "the worker restarted", "cf" * 32)
    ended = [e for e in registry.events() if e.event == decisions.RUN_ENDED]
    assert [e.comment for e in ended] == [
        "forced to COMPLETED: nothing was drawn, spent or released for it",
        f"the worker restarted: nothing was released; its budget spend (event {ended[1].seq - 1}) stands",
    ]
    assert ended[1].run_id == p.run_id and ended[1].artifacts["worker_config"] == "cf" * 32
    assert decisions.run_ended(registry.events(), "fr-1") == ended[0]
    assert decisions.run_ended(registry.events(), "fr-2") is None


def test_a_shown_file_changed_after_the_pause_is_flagged(governed) -> None:
    registry, _ = governed
    card = registry.run_dir("run-1") / "draft" / "card.html"
    card.parent.mkdir(parents=True)
    card.write_text("<p>verdict: fail</p>")
    p = pause(registry)
    files = decisions.shown_files(registry, [str(card), ""])
    assert files == {"runs/run-1/draft/card.html": sha256_file(card)}  # by its place in the registry
    record = {**p.challenge().model_dump(), "summary": {decisions.SHOWN_FILES: files}}
    decisions.record_pending(p, "release-1", record)
    assert decisions.pending_record(registry, p.flow_run_id, "release-1")["summary"][decisions.SHOWN_FILES] == files
    card.write_text("<p>verdict: pass</p>")
    with pytest.raises(SdgovError, match="card.html was changed after the flow showed it"):
        decisions.pending_record(registry, p.flow_run_id, "release-1")
    card.unlink()
    with pytest.raises(SdgovError, match="card.html was changed"):
        decisions.pending_record(registry, p.flow_run_id, "release-1")


def test_a_shown_file_this_account_cannot_read_is_left_to_the_flow(governed, monkeypatch) -> None:
    """An approver's account may not read the controller's evidence report (owner-only): the CLI's check skips it
    rather than refusing every approval; an account that can read it (the flow's) still refuses a changed one."""
    registry, _ = governed
    evidence = registry.run_dir("run-1") / "evidence" / "evidence.html"
    evidence.parent.mkdir(parents=True)
    evidence.write_text("<p>TVD 0.01</p>")
    record = {"summary": {decisions.SHOWN_FILES: decisions.shown_files(registry, [str(evidence)])}}
    evidence.write_text("<p>TVD 0.50</p>")
    with pytest.raises(SdgovError, match="evidence.html was changed"):
        decisions.check_shown_files(registry, record)

    def denied(path, *a, **k):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(decisions, "sha256_file", denied)
    decisions.check_shown_files(registry, record)  # not readable here: skipped, not refused


def test_approve_reports_only_a_decision_the_run_logged(governed) -> None:
    from sdgov.flows.pauses import decision_taken, not_ended

    registry, _ = governed
    p = pause(registry)
    with pytest.raises(SdgovError, match="no process took the decision within 1 s"):
        decision_taken(registry, p.flow_run_id, p.nonce, 1)
    registry.append(
        "approval_refused", "Carl Controller", "unverified", comment="the nonce …", artifacts={"nonce": p.nonce}
    )
    with pytest.raises(SdgovError, match="the run refused the decision: the nonce"):
        decision_taken(registry, p.flow_run_id, p.nonce, 1)
    q = pause(registry, attempt=2)
    event = registry.append("release_approved", "Carl Controller", "controller", artifacts={"nonce": q.nonce})
    assert decision_taken(registry, q.flow_run_id, q.nonce, 1) == event
    decisions.record_run_ended(registry, "fr-9", "the worker restarted")
    with pytest.raises(SdgovError, match="logged this run as ended"):
        not_ended(registry, "fr-9")


def test_a_full_disk_is_one_error_naming_the_file(tmp_path: Path, monkeypatch) -> None:
    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    target = tmp_path / "runs" / "r" / "card.html"
    with monkeypatch.context() as m:
        m.setattr(os, "fsync", no_space)
        with pytest.raises(DiskFull) as raised:
            atomic_write_bytes(target, b"x")
    assert raised.value.where == str(target) and not list(target.parent.iterdir())  # no temporary file left
    assert "disk is full" in raised.value.what
    full = disk_full(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target)), "elsewhere")
    assert isinstance(full, DiskFull) and full.where == str(target)
    wrapped = RuntimeError("IO Error: could not write: No space left on device")  # an engine's own exception
    assert disk_full(wrapped, "runs/r").where == "runs/r"
    assert disk_full(OSError(errno.EACCES, "Permission denied")) is None


def test_a_full_disk_leaves_no_half_line_in_the_log(tmp_path: Path, monkeypatch) -> None:
    from tests.conftest import init_registry

    registry = Registry(init_registry(tmp_path / "registry"))
    before = registry.log_path.read_bytes()

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m:
        m.setattr(os, "fsync", no_space)
        with pytest.raises(DiskFull) as raised:
            registry.append("run_failed", "sdgov", "system", comment="x")
    assert raised.value.where == str(registry.log_path) and registry.log_path.read_bytes() == before
    assert registry.verify() == []


def test_the_form_says_by_when_to_decide() -> None:
    from sdgov.flows.governed import with_note

    text = with_note("## Approve the agreement", "", "2026-12-01T06:00:00Z")
    assert text.startswith("**Decide by 2026-12-01 06:00:00 UTC**") and text.endswith("## Approve the agreement")
    assert with_note("body", "") == "body"


PARENT = """
import os, subprocess, sys, time
env = {**os.environ, "SDGOV_WORKER_PID": str(os.getpid())}
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], env=env)
time.sleep(600)
"""
CHILD = """
import sys, time
from sdgov.flows.plumbing.worker_runs import die_with_worker
die_with_worker(sys.argv[1], "fr-orphan")
print("watching", flush=True)
time.sleep(600)
"""


def test_a_run_whose_worker_dies_ends_itself_and_says_so(tmp_path: Path) -> None:
    """The worker killed alone (``kill -9``): the run it started watches its parent, logs ``run_ended`` and exits
    (marking itself Cancelled on the server, unreachable here)."""
    import subprocess
    import sys
    import time

    from tests.conftest import init_registry

    root = init_registry(tmp_path / "registry")
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api", "PREFECT_CLIENT_MAX_RETRIES": "0"}
    worker = subprocess.Popen(
        [sys.executable, "-c", PARENT, CHILD, str(root)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None and worker.stdout.readline().strip() == "watching"
    worker.kill()
    worker.wait()
    deadline = time.monotonic() + 60
    while (ended := decisions.run_ended(Registry(root).events(), "fr-orphan")) is None:
        assert time.monotonic() < deadline, "the orphaned run did not end itself"
        time.sleep(0.2)
    assert "worker stopped while it held this run" in ended.comment and "nothing was drawn" in ended.comment
