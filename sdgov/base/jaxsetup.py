"""Import this before ``mbi``: 64-bit floats for JAX (mbi stalls in float32 on large N), and the compilation cache.

Every fit compiles mbi's inference for its model's shapes (about 7 s for the demo's model), and every release runs
in a fresh process (a scheduled run, a DVC stage, an audit worker), so the same compilations repeat. With
``SDGOV_JAX_CACHE_DIR`` set, JAX keeps the compiled programs there and a later process loads them (the demo's fit:
7 s → 1 s). The cache holds compiled code only — no data, no noise — and a program loaded from it computes what a
fresh compilation computes, so a release is the same with or without it. Unset, nothing is written to disk.
"""

import os
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax

jax.config.update("jax_enable_x64", True)
CACHE_DIR = os.environ.get("SDGOV_JAX_CACHE_DIR")
if CACHE_DIR:
    jax.config.update("jax_compilation_cache_dir", CACHE_DIR)
    # mbi compiles many small programs (each under JAX's default 1 s threshold) that together take seconds
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
else:
    jax.config.update("jax_enable_compilation_cache", False)
warnings.filterwarnings("ignore", message=".*persistent compilation cache.*")
