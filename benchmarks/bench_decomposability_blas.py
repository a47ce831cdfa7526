"""The decomposability p-value under two BLAS kernels (issue 13's reproducibility acceptance), as a table.

    python benchmarks/bench_decomposability_blas.py [--out FILE]

Runs exactly the audits of ``tests/system/test_decomposability_reproducible.py`` (the real ``sdgov audit
decomposability`` entry point in subprocesses: App 1 honest IPF with unseeded noise (σ = 10) and App 2 2 % blend,
K = 10, seed 0, under ``OPENBLAS_CORETYPE=Prescott`` and ``Haswell``) and records each p-value, the kernel the run
reported, β*'s interaction set and the relative difference between the kernels (the test requires ≤ 1e-9).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.system.test_decomposability_reproducible import CASES, _audit  # noqa: E402

KERNELS = ["Prescott", "Haswell"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(REPO / "build" / "bench_decomposability_blas.json"))
    args = ap.parse_args()
    rows = []
    for app, gen, params in CASES:
        runs = {k: _audit(app, gen, params, k) for k in KERNELS}
        ps = [runs[k]["p_value"] for k in KERNELS]
        row = {
            "app": app,
            "generator": gen,
            "params": json.loads(params),
            "p_values": dict(zip(KERNELS, ps)),
            "kernels_reported": {k: runs[k]["environment"]["blas"][0]["architecture"] for k in KERNELS},
            "beta_star_sets": {k: runs[k]["beta_star_sets"] for k in KERNELS},
            "relative_difference": abs(ps[0] - ps[1]) / max(abs(ps[0]), abs(ps[1]), 1e-300),
            "verdicts": {k: runs[k]["verdict"] for k in KERNELS},
        }
        row["equal_to_1e-9"] = row["relative_difference"] <= 1e-9
        print(json.dumps(row), flush=True)
        rows.append(row)
    out = {"command": " ".join(["python", *sys.argv]), "cases": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
