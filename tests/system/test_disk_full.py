"""A disk that fills during a release (issue 38): one line naming the file that could not be written, exit 2, no
traceback; the log stays whole (no half line), says the run failed, and verifies. The registry lives on a small
tmpfs, so the disk really is full (mounting needs root: skipped otherwise)."""

from __future__ import annotations

import os
import subprocess

import pytest

from sdgov.registry.log import Registry
from tests.conftest import init_registry, make_demo_inputs
from tests.system.test_governed import cli


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_during_a_release_is_one_line_naming_the_file(tmp_path, prefect_server, monkeypatch, capfd):
    import sdgov.intake.preflight as preflight

    spec = make_demo_inputs(tmp_path / "in", rows=300)
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(disk)], check=True)
    try:
        root = init_registry(disk / "registry")
        monkeypatch.setattr(preflight, "DISK_MARGIN_BYTES", 0)  # the pre-flight's margin would refuse this disk
        capfd.readouterr()
        code, out, err = cli("release", "--spec", str(spec), "--root", str(root))
        streams = err + "".join(capfd.readouterr())
        events = [e.event for e in Registry(root).events()]
        assert Registry(root).verify() == []
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
    assert code == 2 and out == "", streams
    [line] = err.strip().splitlines()
    assert line.startswith(f"sdgov: error: {root}/") and "no space left on the device" in line, line
    assert "Traceback" not in streams and "OSError" not in streams
    assert events[-1] == "run_failed" and "budget_spent" in events  # the run began, drew, and the log says so
