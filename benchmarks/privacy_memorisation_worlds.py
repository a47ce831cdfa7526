"""The memorisation check's designs on the same fits (issue 37): 30 disjoint pairs of training sets (60 fits, the
design before) against every pair of W sample worlds (W fits), on Applications 1–2. Not a test.

    python benchmarks/privacy_memorisation_worlds.py --app app2 --generator honest --seeds 10 [--out FILE]

For every seed it fits 60 sample worlds of 10,000 census records (the audit's own worlds and seeds,
:mod:`sdgov.audits.privacy.worlds`; worlds 2p and 2p + 1 disjoint) and draws K·n = 500,000 records from each, then
scores every design on those fits: the 30 disjoint pairs (2p, 2p + 1), and all pairs among the first W worlds for
W = 16, 21, 31 (each pair at its own metric, jackknife over worlds: :func:`sdgov.audits.privacy.memorisation.
memorisation_of`). It prints the copy share, its spread over seeds and each design's mean standard error (the
precision a design buys), and a memoriser's z = f̂ / SE (its power).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sdgov.agreement.load import load_spec  # noqa: E402
from sdgov.audits.privacy.base import GeneratorRef  # noqa: E402
from sdgov.audits.privacy.memorisation import WorldTerms, design_of, memorisation_requests  # noqa: E402
from sdgov.audits.privacy.planner import fit_all  # noqa: E402
from sdgov.audits.privacy.worlds import sample_world  # noqa: E402
from sdgov.base.executor import SerialExecutor  # noqa: E402
from sdgov.engines import load_encoded  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"
GENERATORS = {
    "honest": "honest_pgm",
    "memoriser 1%": "memoriser_1pct",
}
WORLDS, N, K = 60, 10_000, 50


def jackknife(share: np.ndarray, worlds: list[int]) -> tuple[float, float]:
    """Mean over every pair of ``worlds`` and its jackknife standard error over them (as memorisation_of)."""
    sub = share[np.ix_(worlds, worlds)]
    W = len(worlds)
    total, row = sub.sum() / 2, sub.sum(axis=1)
    loo = (total - row) / ((W - 1) * (W - 2) / 2)
    return float(total / (W * (W - 1) / 2)), math.sqrt((W - 1) / W * float(np.sum((loo - loo.mean()) ** 2)))


def one_seed(app: str, generator: str, seed: int) -> dict:
    loaded = load_spec(REPO / "examples" / "census2011" / f"{app}.yaml")
    attrs = list(loaded.agreement.attributes)
    reference = load_encoded(DATA, loaded.schema_)[attrs].to_numpy().astype(np.int64)
    cliques = tuple(tuple(c) for c in loaded.agreement.cliques)
    ref = GeneratorRef(generator, cliques, loaded.schema_.domain(attrs), {"sigma": 10.0, "iterations": 1000})
    design = design_of(ref, reference)
    requests = memorisation_requests(ref, reference, design, WORLDS, N, K, seed)
    counted = fit_all(ref, requests, SerialExecutor())
    train = [design.counts(sample_world(reference, N, seed, w)) for w in range(WORLDS)]
    terms = WorldTerms(design, train, counted, N, K * N)
    share = np.full((WORLDS, WORLDS), np.nan)
    needed = {(2 * p, 2 * p + 1) for p in range(WORLDS // 2)} | {(i, j) for i in range(31) for j in range(i + 1, 31)}
    for i, j in sorted(needed):
        share[i, j] = share[j, i] = terms.pair_share(i, j)
    disjoint = np.array([share[2 * p, 2 * p + 1] for p in range(WORLDS // 2)])
    out = {"disjoint pairs (60 fits)": (float(disjoint.mean()), float(disjoint.std(ddof=1) / math.sqrt(len(disjoint))))}
    for W in (16, 21, 31):
        out[f"all pairs of {W} worlds ({W} fits)"] = jackknife(np.nan_to_num(share), list(range(W)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", default="app2")
    ap.add_argument("--generator", default="honest", choices=list(GENERATORS))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out")
    args = ap.parse_args()
    runs = []
    for seed in range(args.seeds):
        t = time.process_time()
        runs.append({"seed": seed, "designs": one_seed(args.app, GENERATORS[args.generator], seed)})
        runs[-1]["cpu_seconds"] = round(time.process_time() - t, 1)
        print(json.dumps(runs[-1]), flush=True)
    table = {}
    for design in runs[0]["designs"]:
        f = np.array([r["designs"][design][0] for r in runs])
        se = np.array([r["designs"][design][1] for r in runs])
        table[design] = {
            "copy_share_mean": round(float(f.mean()), 5),
            "copy_share_sd_over_seeds": round(float(f.std(ddof=1)), 5) if len(f) > 1 else None,
            "standard_error_mean": round(float(se.mean()), 5),
            "z": [round(float(x), 2) for x in f / se],
        }
        print(design, json.dumps(table[design]))
    if args.out:
        doc = {"command": "python " + shlex.join(sys.argv), "app": args.app, "generator": args.generator}
        Path(args.out).write_text(json.dumps({**doc, "table": table, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
