"""Run a snippet under two OpenBLAS kernels (principle 6: an audit's result must not depend on the BLAS kernel).

The snippet runs in a fresh interpreter from the repository root, once with ``OPENBLAS_CORETYPE=Prescott`` and once
with ``Haswell``, and prints one JSON object as its last line; :func:`under_two_kernels` returns both objects after
checking that the two runs really used different kernels (the snippet reports ``blas``: OpenBLAS's architecture as
threadpoolctl sees it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BLAS_OF = (  # called after the snippet's work: OpenBLAS is listed only once numpy has loaded it
    "from threadpoolctl import threadpool_info\n"
    "def blas():\n"
    "    return [i.get('architecture') for i in threadpool_info() if i.get('internal_api') == 'openblas']\n"
)


def under_two_kernels(snippet: str) -> tuple[dict, dict]:
    """The snippet's JSON line under Prescott and under Haswell; ``BLAS_OF`` gives it the ``blas()`` it reports."""
    runs = []
    for coretype in ("Prescott", "Haswell"):
        env = {**os.environ, "OPENBLAS_CORETYPE": coretype}
        out = subprocess.run([sys.executable, "-c", snippet], cwd=REPO, capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    a, b = runs
    assert a["blas"] != b["blas"], (a["blas"], b["blas"])  # the two runs really used different kernels
    return a, b
