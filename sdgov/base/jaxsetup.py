"""Import this before ``mbi``: 64-bit floats for JAX (mbi stalls in float32 on large N), the compilation cache, one
computing thread, and XLA's classic CPU emitters (they compile mbi's programs faster: ``FLAGS``).

Every fit compiles mbi's inference for its model's shapes (about 7 s for the demo's model, 12 CPU s for the census
extract's MST tree), and every command of a release runs in a fresh process: ``sdgov validate``'s dry run compiles
the spec's model, then ``sdgov release`` (its dry run, then the fit) would compile the same programs again, as would
a scheduled run, a DVC stage or an audit worker. So JAX keeps the compiled programs in a cache directory and a
later process loads them (the demo's fit: 7 s → 1 s; validate on the census tree: 18 → 7 CPU s):
``$SDGOV_JAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/sdgov/jax`` (``~/.cache/sdgov/jax``); ``SDGOV_JAX_CACHE_DIR=``
(empty) turns it off, and nothing is written. The cache holds compiled code only — no data, no noise; its keys
come from the model's shapes, which the public schema and Φ fix — and a program loaded from it computes what a fresh
compilation computes, so a release is the same with or without it (``tests/unit/generators/test_jax_cache.py``).

And one computing thread per process. XLA's CPU client sizes its thread pool by the cores it may run on when it starts,
and splits a program's work over them — in other places, so a fit's last bits depend on the machine's core count
(an App 3 fit differs between one and two threads): a third party re-running an audit on another machine would not
get our figures bit for bit. It also costs: an audit runs one worker process per core, and a pool of one thread per
core in each spins against the others (a fit 11 CPU-s alone, 19 in the audit); OpenBLAS's threads spin the same way
whenever another process holds a core (the memorisation check's 465 Cholesky factorisations: 3 CPU-s on an idle
machine, 207 beside one busy process — issue 37). So JAX's client is started here while this process may run on one
core only (the process's cores given back at once), and the BLAS and OpenMP libraries are limited to one thread
(threadpoolctl): every sdgov process computes on one thread, and parallel work is the audits' worker processes
(``tests/unit/base/test_jax_threads.py``).
"""

import contextlib
import os
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax
from jax._src import xla_bridge
from threadpoolctl import threadpool_limits

from sdgov.base.cachedir import cache_dir

jax.config.update("jax_enable_x64", True)
CACHE_DIR = cache_dir()
if CACHE_DIR:
    jax.config.update("jax_compilation_cache_dir", CACHE_DIR)
    # mbi compiles many small programs (each under JAX's default 1 s threshold) that together take seconds
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
else:
    jax.config.update("jax_enable_compilation_cache", False)
warnings.filterwarnings("ignore", message=".*persistent compilation cache.*")


# XLA:CPU's MLIR fusion emitters (its default) compile mbi's programs — hundreds of small fusions of the message passing
# and the loss — more slowly than its classic emitters (openxla/xla#41173 tracks a worse case), and run them no faster:
# on Adult's default model a first fit took 14.6 CPU-s with the classic emitters against 17.2 (the 2,000 iterations
# after it 8.2 against 8.5 s; benchmarks/README.md, issue 40)
FLAGS = ("--xla_cpu_use_fusion_emitters=false",)


def _xla_flags() -> None:
    """``FLAGS`` added to ``XLA_FLAGS``, which XLA reads when its backend starts (below): a person's own flags are kept,
    and their own value of one of ours wins."""
    own = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = " ".join([own, *(f for f in FLAGS if f.split("=")[0] not in own)]).strip()


def _start_on_one_thread() -> None:
    """Start JAX's backend while this process may use one core, so its CPU client makes a one-thread pool; BLAS and
    OpenMP on one thread."""
    threadpool_limits(1)
    if xla_bridge.backends_are_initialized() or not hasattr(os, "sched_setaffinity"):
        return
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    try:
        jax.devices()
    finally:  # every thread, not only this one: the threads XLA just started inherited the one core
        for thread in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):
                os.sched_setaffinity(int(thread), cores)


_xla_flags()
_start_on_one_thread()
