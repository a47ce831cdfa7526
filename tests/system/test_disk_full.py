"""A full disk is one line naming the path (issue 38), on a real full file system: a small tmpfs (mounted where the
tests run as root; skipped otherwise) holding a registry, filled to the last byte. The log's append, the registry's
own files and a checkpoint written there each fail with one ``sdgov: error:`` line naming the file, no traceback,
and the log stays whole (it verifies once there is room again)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sdgov.registry.log import Registry
from tests.conftest import init_registry

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small file system needs root")


@pytest.fixture
def small_disk(tmp_path):
    where = tmp_path / "disk"
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


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
    from sdgov.flows.cli import main

    root = init_registry(small_disk / "registry")
    filler = _fill(small_disk)
    for argv, path in [
        (["init", "--root", root, "--readers", "root"], root / "registry.json"),  # the registry's own file
        (["registry", "checkpoint", "--root", root, "--out", small_disk / "cp.json"], small_disk / "cp.json"),
    ]:
        capsys.readouterr()
        code = main([str(a) for a in argv])
        err = capsys.readouterr().err
        [line] = err.strip().splitlines()
        assert code == 2 and "no space left on the device" in line and str(path) in line, line
        assert "Traceback" not in err
    from sdgov.base.atomic import NoSpace

    with pytest.raises(NoSpace, match=r"log\.jsonl: no space left"):  # the log's append, once its last page is full
        for _ in range(20):
            log = (root / "log.jsonl").read_bytes()
            Registry(root).append("note", "Carl", "controller", comment="x" * 600)
    assert (root / "log.jsonl").read_bytes() == log, "no half line"
    filler.unlink()
    assert Registry(root).verify() == []
    shutil.rmtree(root)
