#!/usr/bin/env python
"""Demo benchmark: ``sdgov demo`` end to end, with the wall time of every stage.

    python benchmarks/bench_demo.py [--json] [--out FILE] [--keep]

Runs ``sdgov demo`` in a fresh temporary directory (its own registry and ``PREFECT_HOME``, so nothing is shared
with other runs), then reads each stage's seconds from the release's provenance
(``artifacts/provenance.json``, the :class:`~sdgov.contracts.StageRecord` of every stage). The total is the
command's wall time; "outside the stages" is the rest: interpreter and Prefect start, demo data, the release
stage (card + publish) and the flow's own bookkeeping. Results go to ``benchmarks/results/demo-<date>.json``
(or ``--out``); ``--json`` prints them on stdout instead of the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def run_demo(workdir: Path) -> dict:
    """Run ``sdgov demo`` in ``workdir``; its JSON result plus the wall time."""
    env = {**os.environ, "PREFECT_HOME": str(workdir / "prefect"), "PREFECT_LOGGING_LEVEL": "WARNING"}
    t0, cpu0 = time.perf_counter(), _children_cpu()
    proc = subprocess.run(
        [sys.executable, "-m", "sdgov.commands", "demo", "--root", str(workdir / "registry"), "--json"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if proc.returncode != 0:
        sys.exit(f"sdgov demo failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return {**json.loads(proc.stdout), "wall_seconds": seconds, "cpu_seconds": cpu}


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes (and the children they waited for): what the demo
    costs on a shared machine, where its wall time depends on everyone else's load."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def stage_seconds(release_dir: Path) -> dict[str, float]:
    provenance = json.loads((release_dir / "artifacts" / "provenance.json").read_text())
    return {s["stage"]: s["seconds"] for s in provenance["stages"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    p.add_argument("--out", type=Path, help="results file (default: benchmarks/results/demo-<date>.json)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (printed on stderr)")
    args = p.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="sdgov-bench-demo-"))
    try:
        load_before = os.getloadavg()
        demo = run_demo(workdir)
        stages = stage_seconds(Path(demo["path"]))
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    total = round(demo["wall_seconds"], 2)
    result = {
        "benchmark": "sdgov demo",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "stages_seconds": stages,
        "outside_stages_seconds": round(total - sum(stages.values()), 2),
        "total_seconds": total,
        "cpu_seconds": round(demo["cpu_seconds"], 2),
    }
    out = args.out or RESULTS / f"demo-{datetime.now(UTC):%Y-%m-%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        width = max(map(len, [*stages, "outside the stages"]))
        for name, s in stages.items():
            print(f"{name:<{width}}  {s:8.2f} s")
        print(f"{'outside the stages':<{width}}  {result['outside_stages_seconds']:8.2f} s")
        print(
            f"{'total':<{width}}  {total:8.2f} s   (load average before/after: {load_before[0]:.1f}/"
            f"{result['load_average_after'][0]:.1f}; {result['cpu_seconds']:.1f} CPU s; written to {out})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
