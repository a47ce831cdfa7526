"""Application 3's decomposability audit (K = 10) end to end, before and after, in one run (issue 13's < 2 min).

    python benchmarks/bench_decomposability_speed.py --baseline ../baseline-checkout [--repeats 1] [--out FILE]

Runs the same command line (``sdgov audit decomposability`` on ``examples/census2011/app3.yaml``, the honest IPF
at 30 iterations, every fit refitted — no ``memo`` —, 2 fit processes, no positive control) with the baseline
checkout's interpreter and with this one, alternating, and records for each: wall seconds, CPU seconds of the
whole process tree (the command and its reaped fit workers: what the run costs on an idle machine), the audit's
own step timing, and the p-value, which must be the same in both (the speed-ups keep every bit of the fits).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def command(checkout: Path) -> list[str]:
    return [
        str(checkout / ".venv" / "bin" / "python"),
        "-m",
        "sdgov.commands",
        "audit",
        "decomposability",
        "--spec",
        str(checkout / "examples" / "census2011" / "app3.yaml"),
        "--generator",
        "honest_ipf",
        "--K",
        "10",
        "--seed",
        "0",
        "--params",
        '{"iterations": 30}',
        "--control",
        "none",
        "--jobs",
        "2",
        "--json",
    ]


def run(label: str, checkout: Path) -> dict:
    cmd = command(checkout)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{label}: exit {out.returncode}: {out.stderr[-2000:]}")
    res = json.loads(out.stdout)
    row = {
        "label": label,
        "checkout": str(checkout),
        "commit": subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "load_average_1min_after": os.getloadavg()[0],
        "p_value": res["p_value"],
        "verdict": res["verdict"],
        "timing": res["timing"],
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, help="checkout of the code before (with its own .venv)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default=str(REPO / "build" / "bench_decomposability_speed.json"))
    args = ap.parse_args()
    rows = []
    for _ in range(args.repeats):
        rows.append(run("before", Path(args.baseline).resolve()))
        rows.append(run("after", REPO))
    b = [r for r in rows if r["label"] == "before"]
    a = [r for r in rows if r["label"] == "after"]
    summary = {
        "same_p_values": len({r["p_value"] for r in rows}) == 1,
        "wall_before_over_after": round(sum(r["wall_seconds"] for r in b) / sum(r["wall_seconds"] for r in a), 2),
        "cpu_before_over_after": round(sum(r["cpu_seconds"] for r in b) / sum(r["cpu_seconds"] for r in a), 2),
        "cpu_seconds_after_per_core": round(sum(r["cpu_seconds"] for r in a) / len(a) / 2, 1),
    }
    out = {"command": " ".join(["python", *sys.argv]), "runs": rows, "summary": summary, "cores": os.cpu_count()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
