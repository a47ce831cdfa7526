#!/usr/bin/env python
"""Issue 37's wall-clock acceptance: both audits of Application 3 at their defaults, through the commands a controller
runs, each cold in its own directory, JAX cache and Prefect home.

    python benchmarks/bench_app3_audits.py [--jobs 2] [--only privacy,decomposability,demo] --json OUT

* ``sdgov audit privacy --spec examples/census2011/app3.yaml --jobs J --json`` — the privacy-risk audit at its
  defaults: wall, CPU of the whole process tree (the worker processes included), peak memory of its largest process,
  the fits it planned (:func:`sdgov.audits.privacy.cost.planned_fits`) beside those the parts asked for, the
  verdict and every check, and its own timing of each phase;
* ``sdgov audit decomposability --spec … --generator honest_pgm --K 10 --jobs J --json`` — the test at K = 10: 4·K
  fits planned, the verdict and p-value;
* ``sdgov demo`` in a fresh directory (pre-registers both audits): wall and CPU.

The baseline is the same command on the same machine before issue 37 (``results/app3-fit-cost-2026-11-26*.json``:
393 fits planned at 95–109 CPU-s each, the audit not finished in 15 minutes) and at the previous acceptance run
(``results/issue37-acceptance-2026-11-29.json``: 18 min 49 s); the ratios are printed against the latter. Run it
on an idle machine: the wall times are the acceptance figures (targets: privacy < 5 min, decomposability < 2 min,
demo < 45 s on 2 cores). The census extract is read from ``../shared/data`` (ONS 2011 Census Microdata Teaching
File, Open Government Licence v1.0).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "examples" / "census2011" / "app3.yaml"
PREVIOUS = REPO / "benchmarks" / "results" / "issue37-acceptance-2026-11-29.json"
TARGETS = {"privacy": 300.0, "decomposability": 120.0, "demo": 45.0}


def timed(cmd: list[str], workdir: Path) -> tuple[dict, str]:
    """Run ``cmd`` under ``/usr/bin/time -v`` with its own JAX cache and Prefect home: wall, CPU, peak, exit."""
    env = {
        **os.environ,
        "SDGOV_JAX_CACHE_DIR": str(workdir / "jax"),
        "PREFECT_HOME": str(workdir / "prefect"),
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], cwd=workdir, env=env, capture_output=True, text=True)
    err = proc.stderr

    def field(name: str) -> str:
        m = re.search(rf"{re.escape(name)}: (.*)", err)
        return m.group(1).strip() if m else "0"

    clock = [float(x) for x in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")]
    wall = sum(v * 60 ** (len(clock) - 1 - i) for i, v in enumerate(clock))
    return {
        "command": " ".join(cmd[1:] if cmd[0] == sys.executable else cmd),
        "wall_s": round(wall, 1),
        "cpu_s": round(float(field("User time (seconds)")) + float(field("System time (seconds)")), 1),
        "peak_rss_gb_largest_process": round(int(field("Maximum resident set size (kbytes)")) / 1024**2, 2),
        "exit": proc.returncode,
    }, proc.stdout


def sdgov(*args: str) -> list[str]:
    return [sys.executable, "-m", "sdgov.commands", *args]


def privacy(jobs: int, workdir: Path) -> dict:
    from sdgov.agreement.sections.privacy_risk import RiskSettings
    from sdgov.audits.privacy.cost import planned_fits

    run, out = timed(sdgov("audit", "privacy", "--spec", str(SPEC), "--jobs", str(jobs), "--json"), workdir)
    got = json.loads(out) if out.strip().startswith("{") else {}
    planned = planned_fits(RiskSettings())
    return {
        **run,
        "fits_planned": planned,
        "fits_planned_total": sum(planned.values()),
        "verdict": got.get("verdict"),
        "checks": {c["name"]: c["level"] for c in got.get("checks", [])},
        "timing_s": got.get("timing"),
    }


def decomposability(jobs: int, workdir: Path) -> dict:
    cmd = sdgov("audit", "decomposability", "--spec", str(SPEC), "--generator", "honest_pgm", "--K", "10")
    run, out = timed([*cmd, "--jobs", str(jobs), "--json"], workdir)
    got = json.loads(out) if out.strip().startswith("{") else {}
    return {**run, "fits_planned": 4 * 10, "verdict": got.get("verdict"), "p_value": got.get("p_value")}


def demo(workdir: Path) -> dict:
    run, _ = timed(sdgov("demo", "--root", str(workdir / "registry"), "--json"), workdir)
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="privacy,decomposability,demo")
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    previous = json.loads(PREVIOUS.read_text()) if PREVIOUS.exists() else {}
    before = {
        "privacy": previous.get("app3_privacy_audit", {}).get("wall_s"),
        "decomposability": previous.get("app3_decomposability", {}).get("wall_s"),
        "demo": previous.get("demo", {}).get("wall_s"),
    }
    results: dict = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "load_at_start": os.getloadavg(), "python": platform.python_version()},
        "data": "ONS 2011 Census Microdata Teaching File extract (Office for National Statistics, OGL v1)",
    }
    runs = {"privacy": lambda d: privacy(args.jobs, d), "decomposability": lambda d: decomposability(args.jobs, d)}
    runs["demo"] = demo
    for name in args.only.split(","):
        with tempfile.TemporaryDirectory(prefix=f"app3-{name}-") as tmp:
            res = runs[name](Path(tmp))
        res["target_wall_s"] = TARGETS[name]
        res["previous_wall_s"] = before[name]
        if before[name]:
            res["previous_over_now"] = round(before[name] / res["wall_s"], 2)
        results[name] = res
        print(
            f"{name}: {res['wall_s']:.0f} s wall (target < {TARGETS[name]:.0f} s; before {before[name]} s), "
            f"{res['cpu_s']:.0f} CPU-s, {res['peak_rss_gb_largest_process']} GB, exit {res['exit']}"
            + (f", verdict {res.get('verdict')}" if res.get("verdict") else ""),
            flush=True,
        )
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
