#!/usr/bin/env python
"""A split release with both audits pre-registered (issue 26 item 3), on the census extract: seconds and peak memory
per stage, beside the same release unsplit — the baseline, measured in the same run on the same machine.

    nice -n 10 python benchmarks/bench_split_audits.py --app app1 --K 4 --risk small \\
        --json benchmarks/results/split-audits-2026-11-26.json

Both releases run ``sdgov release --spec … --root … --json`` in a subprocess, as an operator does
(:func:`bench_scale.run_release`: stage windows from the log lines, the process tree's RSS sampled every 0.5 s), on
``../shared/data/census2011_teaching_50k.csv`` with an application's Φ (``examples/census2011/<app>.yaml``), each
with its own registry and budget authority under a temporary directory:

* **unsplit** (the baseline): the application's Φ at its σ (ρ as its plan says), one model (``--generator``, IPF
  by default: the audits refit it dozens of times);
* **split**: the records split by Student (1: schoolchildren and full-time students; 2: the others), each part with
  the application's Φ on its own records, the same total ρ shared 1 : 3, and its own model.

Both pre-register the decomposability test (``audit:``, K fits per extremal dataset, ``--rows-per-fit`` rows each)
and the privacy-risk audit (``privacy_risk:``, ``--risk small``: the settings of ``tests/system/test_release_audits``,
or ``demo``: the demo spec's), the audit generators at ``--iterations`` iterations; a split release runs each once
per part. The audits' defaults (K = 10, the privacy-risk audit's defaults) and App 3 (a 1.3M-cell joint refitted
dozens of times) take far longer than a 2-core machine shared by several sessions allows (issue 26 item 1 is about
that cost), hence the reduced settings and App 1 by default; the results file records which were used.
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
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_scale import EXTRACT, governed_registry, release_outcome, run_release, stage_table  # noqa: E402

from sdgov.agreement.load import load_spec  # noqa: E402
from sdgov.budget.accounting import plan_agreement  # noqa: E402
from sdgov.reporting.verdict import Verdict  # noqa: E402
from tests.system.test_release_audits import RISK  # noqa: E402

APPS = REPO / "examples" / "census2011"
SMALL_RISK = RISK["settings"]  # the small but real settings of tests/system/test_release_audits.py


def spec_of(workdir: Path, split: bool, args: argparse.Namespace) -> Path:
    """The application's spec on the census extract with both audits pre-registered, split by Student or not, at
    the ρ of its own plan (σ on every marginal) — the split shares that ρ between its parts."""
    source = APPS / f"{args.app}.yaml"
    spec = yaml.safe_load(source.read_text())
    rho = plan_agreement(load_spec(source).agreement).rho
    spec["dataset"] = {"name": "census2011_teaching", "path": str(EXTRACT)}
    spec["generator"] = {"name": args.generator, "iterations": args.iterations}
    spec["privacy"] = {"rho": rho}
    spec.pop("tasks", None)
    if split:
        phi = spec.pop("phi")
        spec["split"] = {
            "attribute": "Student",
            "parts": [
                {"name": "students", "codes": [1], "share": 1, "phi": phi},
                {"name": "others", "codes": [2], "share": 3, "phi": phi},
            ],
        }
    gen = {"iterations": args.iterations}
    spec["audit"] = {"K": args.K, "rows": args.rows_per_fit, "seed": 1, "generator_params": gen}
    demo = yaml.safe_load((REPO / "sdgov" / "demo" / "spec.yaml").read_text())["privacy_risk"]["settings"]
    spec["privacy_risk"] = {"generator_params": gen, "settings": SMALL_RISK if args.risk == "small" else demo}
    for name in ("schema.yaml", "approvals.yaml"):
        shutil.copy(APPS / name, workdir / name)
    path = workdir / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    return path


def one_release(split: bool, args: argparse.Namespace) -> dict[str, object]:
    """One governed release in its own temporary directory (registry, budget authority, Prefect home)."""
    with tempfile.TemporaryDirectory(prefix="bench-split-", dir="/tmp") as tmp:
        workdir = Path(tmp)
        os.environ["SDGOV_AUTHORITY"] = str(workdir / "authority.sqlite")  # its own account: both spend the extract
        spec = spec_of(workdir, split, args)
        root = governed_registry(workdir, spec, 50_000)
        run = run_release(spec, root, workdir, args.timeout)
        result: dict[str, object] = {
            "release": "split by Student (students : others = 1 : 3 of ρ)" if split else "unsplit (baseline)",
            "rows": 50_000,
            "exit_code": run["code"],
            "stopped_by_timeout": run["timed_out"],
            "wall_s": round(float(run["ended"]) - float(run["started"]), 3),  # type: ignore[arg-type]
            "peak_rss_bytes": max((r for _, r in run["sampler"].samples), default=None),  # type: ignore[attr-defined]
            "stages": stage_table(run, root),
            "part_verdicts": _part_verdicts(root),
        }
        result.update(release_outcome(run, root))
    return result


def _part_verdicts(root: Path) -> dict[str, str]:
    """Each part's verdict from the controller's evidence report (empty for the unsplit release)."""
    found: dict[str, str] = {}
    for evidence in root.glob("runs/*/evidence/evidence.json"):
        parts = json.loads(evidence.read_text()).get("part_verdicts", {})
        found.update({p: Verdict.model_validate(v).label for p, v in parts.items()})
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", choices=["app1", "app2", "app3"], default="app1", help="examples/census2011/<app>.yaml")
    ap.add_argument("--K", type=int, default=4, help="decomposability fits per extremal dataset (default K = 10)")
    ap.add_argument("--rows-per-fit", type=int, default=20_000)
    ap.add_argument("--risk", choices=["small", "demo"], default="small", help="privacy-risk audit settings")
    ap.add_argument("--generator", choices=["ipf", "pgm"], default="ipf", help="the release's (and its audits')")
    ap.add_argument("--iterations", type=int, default=300, help="the generator's, in the release and the audits")
    ap.add_argument("--timeout", type=float, default=1800.0, help="stop a release after this many seconds")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not EXTRACT.is_file():
        raise SystemExit(f"the census extract is not at {EXTRACT} (../shared/data beside the repository)")
    started, load = time.time(), os.getloadavg()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    results = [one_release(False, args), one_release(True, args)]
    base, split = ({r["stage"]: r for r in res["stages"]} for res in results)  # type: ignore[union-attr]
    ratios = {
        stage: round(split[stage]["seconds"] / base[stage]["seconds"], 2)
        for stage in base
        if stage in split and base[stage]["seconds"]
    }
    out = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "settings": {**vars(args), "json": str(args.json) if args.json else None},
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_at_start": load},
        "load_at_end": os.getloadavg(),
        "seconds": round(time.time() - started, 1),
        "releases": results,
        "split_over_unsplit_seconds": ratios,
    }
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str) + "\n")
    for result in results:
        print(f"{result['release']}: {result['verdict']}, wall {result['wall_s']:.1f} s, exit {result['exit_code']}")
        for row in result["stages"]:  # type: ignore[union-attr]
            peak = f"{row['peak_rss_bytes'] / 1e9:.2f} GB" if row["peak_rss_bytes"] else "n/a"
            print(f"  {row['stage']:<16} {row['seconds']:>8.1f} s   peak {peak}")
        if result["part_verdicts"]:
            print("  part verdicts:", result["part_verdicts"])
    print("split ÷ unsplit seconds per stage:", ratios)
    print(f"load average at start {load}, at end {os.getloadavg()} (2 cores shared)")


if __name__ == "__main__":
    main()
