#!/usr/bin/env python
"""How long each hand-run ``sdgov`` command takes in a fresh process (issue 27): wall and CPU seconds, the median
of ``--repeat`` runs, against ``python -c pass`` measured in the same run as the baseline.

    python benchmarks/cli_startup.py [--repeat 5] [--sdgov .venv/bin/sdgov] [--json OUT]

Commands: ``keygen``, ``init``, ``trail``, ``budget``, ``registry verify`` on a fresh registry, and ``runs``,
``sign`` and ``approve``. Without ``PREFECT_API_URL`` in the environment the last three stop at their refusal ("no
Prefect server configured"), after the imports the command needs; with it, they ask that server (``sign`` and
``approve`` name a run id the server does not hold, so they stop at the server's answer). ``--sdgov`` measures
another checkout's entry point (e.g. the main branch's) on the same machine in the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUN_ID = "0b6c9c1e-0000-4000-8000-000000000000"


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system of the child) and exit code of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    rc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sdgov", default=str(Path(sys.executable).with_name("sdgov")), help="the entry point to time")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    sdgov = str(Path(args.sdgov).resolve())
    with tempfile.TemporaryDirectory(prefix="sdgov-cli-startup-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "SDGOV_REGISTRY": str(work / "registry")}
        subprocess.run([sdgov, "init"], cwd=work, env=env, check=True, capture_output=True)
        subprocess.run([sdgov, "keygen", "--out", "ann.pem"], cwd=work, env=env, check=True, capture_output=True)
        commands: dict[str, list[str]] = {
            "python -c pass (baseline)": [sys.executable, "-c", "pass"],
            "keygen": [sdgov, "keygen", "--out", "{n}.pem"],
            "init": [sdgov, "init"],
            "trail": [sdgov, "trail"],
            "budget": [sdgov, "budget"],
            "registry verify": [sdgov, "registry", "verify"],
            "runs": [sdgov, "runs"],
            "sign": [sdgov, "sign", RUN_ID, "--as", "Ann", "--key", "ann.pem"],
            "approve": [sdgov, "approve", RUN_ID, "--as", "Ann", "--key", "ann.pem", "--reject"],
        }
        rows = []
        for name, argv in commands.items():
            runs = [timed([a.format(n=f"k{i}") for a in argv], work, env) for i in range(args.repeat)]
            rows.append(
                {
                    "command": name,
                    "wall_s": statistics.median(r[0] for r in runs),
                    "cpu_s": statistics.median(r[1] for r in runs),
                    "exit_codes": sorted({r[2] for r in runs}),
                }
            )
    base = rows[0]
    print(f"{'command':28} {'wall s':>8} {'× base':>7} {'CPU s':>7} {'× base':>7}  exit")
    for r in rows:
        r["wall_ratio"] = r["wall_s"] / base["wall_s"]
        r["cpu_ratio"] = r["cpu_s"] / base["cpu_s"] if base["cpu_s"] else None
        cpu_ratio = f"{r['cpu_ratio']:7.1f}" if r["cpu_ratio"] is not None else "      –"
        print(
            f"{r['command']:28} {r['wall_s']:8.2f} {r['wall_ratio']:7.1f} {r['cpu_s']:7.2f} {cpu_ratio}  "
            f"{','.join(map(str, r['exit_codes']))}"
        )
    server = "PREFECT_API_URL" in os.environ
    print(
        f"median of {args.repeat} fresh processes; runs/sign/approve "
        + ("asked the server" if server else "stopped at 'no Prefect server configured'")
        + f"; load average {os.getloadavg()[0]:.2f}"
    )
    if args.json:
        meta = {
            "repeat": args.repeat,
            "server": server,
            "load_average": os.getloadavg(),
            "machine": platform.platform(),
            "cpus": os.cpu_count(),
        }
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
