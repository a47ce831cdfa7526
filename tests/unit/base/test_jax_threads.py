"""Every sdgov process computes on one thread (sdgov/base/jaxsetup.py), so a result does not depend on how many cores
the machine has, and no library's threads spin against another process's: the dense oracle's marginals of App 3's
shape, in a process that may use every core and in one restricted to a single core (a one-core machine), are the
same bits. Without the one-thread start the first process splits the oracle's work over its cores and its last bits
differ (measured on a 2-core machine)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

TWO_CORES = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores"
)


def _child(code: str, *args: str) -> str:
    """What a fresh Python process running ``code`` prints (no JAX cache: every program compiled in it)."""
    env = {**os.environ, "SDGOV_JAX_CACHE_DIR": ""}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


CHILD = r"""
import hashlib, itertools, os, sys
if sys.argv[1] == "one core":
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import sdgov.base.jaxsetup
import jax.numpy as jnp, mbi, numpy as np
from sdgov.generators.pgm_dense import dense_layout, dense_oracle
attrs, shape = tuple("abcdefg"), (10, 6, 5, 8, 5, 10, 13)
domain = mbi.Domain(attrs, shape)
cliques = list(itertools.combinations(attrs, 2))
rng = np.random.default_rng(0)
zeros = mbi.CliqueVector.zeros(domain, cliques)
tables = {c: mbi.Factor(zeros[c].domain, jnp.asarray(rng.normal(size=zeros[c].values.shape))) for c in cliques}
out = dense_oracle(dense_layout(domain, cliques))(mbi.CliqueVector(domain, cliques, tables), 5e4)
print(hashlib.sha256(b"".join(np.asarray(out[c].values).tobytes() for c in cliques)).hexdigest())
"""


@TWO_CORES
def test_a_result_is_the_same_bits_on_one_core_and_on_all():
    digests = {how: _child(CHILD, how) for how in ("all cores", "one core")}
    assert digests["all cores"] == digests["one core"], digests


def test_blas_runs_on_one_thread():
    """OpenBLAS's threads spin while another process holds a core: one thread, whatever the machine."""
    child = (
        "import sdgov.base.jaxsetup\nimport numpy\nfrom threadpoolctl import threadpool_info\n"
        "print(sorted({p['num_threads'] for p in threadpool_info()}))"
    )
    assert _child(child) == "[1]"


@TWO_CORES
def test_every_thread_may_still_run_on_every_core():
    """The one-core start gives the cores back to every thread — the ones XLA started inside it too — or two worker
    processes would compute on the same core (an audit's fits serialised: 175 CPU-s in 157 s on 2 cores)."""
    child = (
        "import os\nimport sdgov.base.jaxsetup\nimport jax.numpy as jnp\njnp.ones(9).sum().block_until_ready()\n"
        "print(sorted({tuple(sorted(os.sched_getaffinity(int(t)))) for t in os.listdir('/proc/self/task')}))"
    )
    assert _child(child) == str([tuple(sorted(os.sched_getaffinity(0)))])


FLAGS = r"""
import os
import sdgov.base.jaxsetup
import jax
jax.devices()  # the backend started with the flags (an unknown one would end the process here)
print(os.environ["XLA_FLAGS"])
"""


@pytest.mark.parametrize(
    ("own", "expect"),
    [
        (None, "--xla_cpu_use_fusion_emitters=false"),
        ("--xla_cpu_use_fusion_emitters=true", "--xla_cpu_use_fusion_emitters=true"),
        ("--xla_cpu_enable_fast_math=false", "--xla_cpu_enable_fast_math=false --xla_cpu_use_fusion_emitters=false"),
    ],
    ids=["none of their own", "their own value wins", "theirs kept beside ours"],
)
def test_xla_starts_with_the_classic_cpu_emitters_and_keeps_a_persons_own_flags(own: str | None, expect: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | ({"XLA_FLAGS": own} if own else {})
    done = subprocess.run([sys.executable, "-c", FLAGS], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == expect
