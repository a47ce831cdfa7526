"""The membership game's precision and power, this checkout's code against another's on the same seeds (issue 37:
shared shadow worlds against one pair of fits per target). Not a test.

    python benchmarks/privacy_membership_precision.py --apps app1,app2 --generators honest,"qi copier" --seeds 5 \
        --out benchmarks/results/privacy-membership-precision-DATE-shared.json
    # the code before, on the same seeds: an export of the older commit, with the script copied into it
    git archive 7a634ff | tar -x -C /tmp/old && cp benchmarks/privacy_membership_precision.py /tmp/old/benchmarks/ \
        && ln -s "$PWD/../shared" /tmp/shared \
        && python /tmp/old/benchmarks/privacy_membership_precision.py … --label 7a634ff --out …

Runs ``sdgov audit privacy --parts mia`` at the default settings (30 worlds per target, 10 targets, 4 feature sets)
and reports per run: the mean half-width of the targets' Bonferroni advantage intervals (membership and attribute
inference: the precision the worlds buy), the largest lower bound (what the policy acts on: the power), the lowest
privacy gain, the fits and the CPU seconds of the process (``n_jobs`` 1: all of them).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sdgov.agreement.sections.privacy_risk import RiskSettings  # noqa: E402
from sdgov.audits.privacy.run import audit_spec_privacy  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"
GENERATORS = {
    "honest": None,
    "qi copier": "qi_copier",
    "copier": "copier",
    "exact-marginal": "exact_marginal",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--apps", default="app1,app2")
    ap.add_argument("--generators", default="honest,qi copier")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out")
    ap.add_argument("--label", default="this checkout", help="what code ran (e.g. the commit an export was made of)")
    args = ap.parse_args()
    runs = []
    for app in args.apps.split(","):
        for label in args.generators.split(","):
            for seed in range(args.seeds):
                t, cpu = time.perf_counter(), time.process_time()
                r = audit_spec_privacy(
                    REPO / "examples" / "census2011" / f"{app}.yaml",
                    GENERATORS[label],
                    RiskSettings(seed=seed, n_jobs=1),
                    data_path=DATA,
                    parts=("mia",),
                )
                ai = [x.attribute for x in r.targets if x.attribute is not None]
                row = {
                    "app": app,
                    "generator": label,
                    "seed": seed,
                    "membership_half_width": sum((x.advantage_ci[1] - x.advantage_ci[0]) / 2 for x in r.targets)
                    / len(r.targets),
                    "membership_lower_max": max(x.advantage_ci[0] for x in r.targets),
                    "attribute_half_width": sum((a.ci[1] - a.ci[0]) / 2 for a in ai) / len(ai) if ai else None,
                    "attribute_lower_max": max((a.ci[0] for a in ai), default=None),
                    "min_privacy_gain": r.min_privacy_gain,
                    "checks": {c.name: c.level for c in r.checks},
                    "fits": getattr(r, "fits", None),
                    "seconds": round(time.perf_counter() - t, 1),
                    "cpu_seconds": round(time.process_time() - cpu, 1),
                }
                print(json.dumps(row), flush=True)
                runs.append(row)
                if args.out:
                    doc = {"command": "python " + shlex.join(sys.argv), "code": args.label, "runs": runs}
                    Path(args.out).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
