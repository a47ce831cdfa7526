"""A batch of audit trials hands the heap it freed back to the operating system (issue 37): the audit stage's
workers sit idle between batches and after their last one, and glibc otherwise keeps a worker at its high-water
mark — two idle workers' heaps were part of the 55M release's memory peak."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import json, sys
    import psutil
    from sdgov.base.executor import run_trials

    kept = []

    def churn():  # ~200 MB of heap blocks freed again, a few survivors pinning the heap's top
        blocks = [bytearray(4096) for _ in range(50_000)]
        kept.extend(blocks[::500])
        return len(blocks)

    rss = lambda: psutil.Process().memory_info().rss
    before = rss()
    out = run_trials(churn, [()]) if sys.argv[1] == "batch" else [churn()]
    print(json.dumps({"out": out, "grew": rss() - before}))
    """
)


def _grew(how: str) -> tuple[list, int]:
    p = subprocess.run([sys.executable, "-c", CHILD, how], capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(p.stdout)
    return got["out"], got["grew"]


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc_trim")
def test_a_batch_of_trials_hands_its_freed_heap_back():
    out, grew = _grew("batch")
    assert out == [50_000]  # the trials' results, in order
    _, kept = _grew("plain")  # the same trial outside a batch: glibc keeps the pages
    assert kept > 150e6 and grew < 50e6, (kept, grew)
