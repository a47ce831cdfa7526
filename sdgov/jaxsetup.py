"""Import this before ``mbi``: 64-bit floats for JAX (mbi stalls in float32 on large N), no persistent cache."""

import os
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_enable_compilation_cache", False)
warnings.filterwarnings("ignore", message=".*persistent compilation cache.*")
