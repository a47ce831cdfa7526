#!/usr/bin/env python
"""The demo's honest release must pass with no warnings, on every run (issue 14).

    python benchmarks/bench_demo_verdict.py [--runs 10] [--out FILE]

Runs ``sdgov demo`` ``--runs`` times, each in a fresh temporary directory (its own registry and ``PREFECT_HOME``):
every run draws fresh noise (OpenDP, no seed) and so gets its own ψ, synthetic data and audit. Reads the overall
verdict of each published card (``card.json`` → ``verdict``) and the evidence report's failed rows. Exits 1 if
any run ends in anything but a plain "pass" — this is a check that can fail, not only a measurement. Results go
to ``benchmarks/results/demo-verdict-<date>.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_demo import RESULTS, run_demo


def one_run(i: int, keep: Path | None = None) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix=f"sdgov-bench-verdict-{i}-"))
    try:
        demo = run_demo(workdir)
        release = Path(demo["path"])
        card = json.loads((release / "card.json").read_text())
        run_prefix = release.name.rsplit("-", 1)[-1]  # a release id ends with its run's first 8 characters
        run_dir = next(p for p in (workdir / "registry" / "runs").iterdir() if p.name.startswith(run_prefix))
        evidence = json.loads((run_dir / "evidence" / "evidence.json").read_text())
        failed = [
            {"name": c["name"], "severity": c["severity"], "detail": c["detail"]}
            for c in evidence["audit"]["checks"]
            if not c["passed"]
        ]
        v = card["verdict"]
        label = "fail" if v["result"] == "fail" else ("pass" if not v["warnings"] else "pass with warnings")
        return {
            "run": i,
            "verdict": label,
            "warnings": v["warnings"],
            "failures": v["failures"],
            "failed_rows": failed,
            "epsilon_zcdp": card["privacy"]["epsilon"],
            "epsilon_pld": card["epsilon_pld"],
            "wall_seconds": round(demo["wall_seconds"], 1),
        }
    finally:
        if keep is not None and (workdir / "registry").is_dir():
            shutil.copytree(workdir / "registry", keep, dirs_exist_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--out", type=Path)
    p.add_argument("--keep", type=Path, help="copy the first run's registry (card, evidence report) here")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    out = args.out or RESULTS / f"demo-verdict-{datetime.now(UTC):%Y-%m-%d}.json"
    runs: list[dict] = []
    for i in range(args.runs):
        runs.append(one_run(i, args.keep if i == 0 else None))
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
        clean = sum(r["verdict"] == "pass" for r in runs)
        result = {  # written after every run: an interrupted benchmark keeps what it measured
            "benchmark": "sdgov demo: overall verdict over fresh runs (each its own noise draw)",
            "command": f"python benchmarks/bench_demo_verdict.py --runs {args.runs}",
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "runs": runs,
            "passed_without_warnings": clean,
            "of": len(runs),
            "asked_for": args.runs,
            "total_seconds": round(time.perf_counter() - t0, 1),
        }
        out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{clean} of {args.runs} runs passed with no warnings; results in {out}")
    return 0 if clean == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
