"""The numeric environment an audit ran in, recorded beside its result.

An audit's p-value is meant to be a function of (data, Φ, generator, params, seed) only; the libraries and the
BLAS kernel are recorded anyway, so a reviewer who cannot reproduce a figure sees at once what differed.
"""

from __future__ import annotations

import platform
from typing import Any

import numpy as np
import scipy


def numeric_environment() -> dict[str, Any]:
    """Python, numpy, scipy, the machine and every BLAS/OpenMP library loaded (threadpoolctl, a scikit-learn
    dependency: its ``architecture`` is the kernel OpenBLAS picked, e.g. Haswell; ``OPENBLAS_CORETYPE`` forces it)."""
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "machine": platform.machine(),
    }
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        env["blas"] = "unknown (threadpoolctl not installed)"
        return env
    keys = ("internal_api", "version", "architecture", "threading_layer", "num_threads")
    env["blas"] = sorted(
        ({k: info.get(k) for k in keys} for info in threadpool_info()), key=lambda d: str(d.get("internal_api"))
    )
    return env
