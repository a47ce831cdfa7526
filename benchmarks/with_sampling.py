"""Run a benchmark with the sampler's default way of drawing set (issue 40): the audits' calibration with the
rounded sampler was measured this way before it became the default; ``iid`` runs a benchmark as before it.

    python benchmarks/with_sampling.py round bench_decomposability_power --grid "app1:honest_ipf+noise:10:20" ...
    python benchmarks/with_sampling.py round bench_privacy_table --apps app1 --generators honest --seeds 20 ...

Sets :data:`sdgov.generators.sampling_default.SAMPLING` in this process and in every worker a benchmark spawns (a
spawned worker runs this file's top level again, as ``__mp_main__``), then runs the benchmark module's ``main()`` with
the remaining arguments: what changing that one line does. Every generator that samples through
:func:`~sdgov.generators.sampler.iter_chunks` without saying how — the audits' honest and positive-control generators —
then draws that way, and a spec resolved in the process states it in its agreement.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import sdgov.generators.sampling_default as defaults  # noqa: E402

ENV = "SDGOV_BENCH_SAMPLING"  # read by this wrapper only (its spawned workers inherit it), never by sdgov

if __name__ == "__main__":
    how, module, *rest = sys.argv[1:]
    if how not in ("iid", "round"):
        raise SystemExit(f"with_sampling.py: the first argument is 'iid' or 'round', not {how!r}")
    os.environ[ENV] = how
    defaults.SAMPLING = how  # type: ignore[assignment]
    bench = importlib.import_module(module)
    sys.argv = [str(bench.__file__), *rest]
    bench.main()
elif os.environ.get(ENV) in ("iid", "round"):  # a spawned worker (__mp_main__): its parent's default
    defaults.SAMPLING = os.environ[ENV]  # type: ignore[assignment]
