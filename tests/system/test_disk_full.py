"""A full disk is one line naming the path (issue 38), on a real full file system: a small tmpfs (mounted where the
tests run as root; skipped otherwise). The registry's own files, a checkpoint and the log's append each fail with one
``sdgov: error:`` line naming the file, no traceback; a disk that fills during a release does the same, exit 2; the
log stays whole (no half line), says the run failed, and verifies once there is room again."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from sdgov.base.errors import DiskFull
from sdgov.registry.log import Registry
from tests.conftest import init_registry, make_demo_inputs
from tests.fixtures.cli import cli

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small file system needs root")


@pytest.fixture
def small_disk(tmp_path) -> Callable[[str], AbstractContextManager[Path]]:
    """A tmpfs of the size asked, mounted under ``tmp_path`` for the ``with`` block."""

    @contextmanager
    def mount(size: str) -> Iterator[Path]:
        where = tmp_path / f"disk-{size}"
        where.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)]).returncode != 0:
            pytest.skip("cannot mount a tmpfs here")
        try:
            yield where
        finally:
            subprocess.run(["umount", "-l", str(where)], check=False)

    return mount


def _fill(where: Path) -> Path:
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError):
            while True:
                os.write(fd, b"\0" * 512)
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_is_one_line_naming_the_file(small_disk, capsys):
    from sdgov.commands import main

    with small_disk("256k") as disk:
        root = init_registry(disk / "registry")
        filler = _fill(disk)
        for argv, path in [
            (["init", "--root", root, "--readers", "root"], root / "registry.json"),  # the registry's own file
            (["registry", "checkpoint", "--root", root, "--out", disk / "cp.json"], disk / "cp.json"),
        ]:
            capsys.readouterr()
            code = main([str(a) for a in argv])
            err = capsys.readouterr().err
            [line] = err.strip().splitlines()
            assert code == 2 and "no space left on the device" in line and str(path) in line, line
            assert "Traceback" not in err
        with pytest.raises(DiskFull, match=r"log\.jsonl: no space left"):  # the log's append, once its page is full
            for _ in range(20):
                log = (root / "log.jsonl").read_bytes()
                Registry(root).append("note", "Carl", "controller", comment="x" * 600)
        assert (root / "log.jsonl").read_bytes() == log, "no half line"
        filler.unlink()
        assert Registry(root).verify() == []
        shutil.rmtree(root)


def test_a_full_disk_during_a_release_is_one_line_naming_the_file(
    tmp_path, small_disk, prefect_server, monkeypatch, capfd
):
    import sdgov.intake.preflight as preflight

    spec = make_demo_inputs(tmp_path / "in", rows=300)
    with small_disk("160k") as disk:
        root = init_registry(disk / "registry")
        monkeypatch.setattr(preflight, "DISK_MARGIN_BYTES", 0)  # the pre-flight's margin would refuse this disk
        capfd.readouterr()
        code, out, err = cli("release", "--spec", str(spec), "--root", str(root))
        streams = err + "".join(capfd.readouterr())
        events = [e.event for e in Registry(root).events()]
        assert Registry(root).verify() == []
    assert code == 2 and out == "", streams
    [line] = err.strip().splitlines()
    assert line.startswith(f"sdgov: error: {root}/") and "no space left on the device" in line, line
    assert "Traceback" not in streams and "OSError" not in streams
    assert events[-1] == "run_failed" and "budget_spent" in events  # the run began, drew, and the log says so
