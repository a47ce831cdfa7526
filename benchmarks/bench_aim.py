"""Issue 27 (3): sdgov's selection against AIM — OpenDP's ``extras.mbi.AIM`` and ``MST`` at their defaults.

    .venv/bin/python benchmarks/bench_aim.py --data census --opendp DIR [--eps 0.5 1 4] [--seeds 3] \
        [--arms ...] [--extra 24] --out FILE
    .venv/bin/python benchmarks/bench_aim.py --data adult --train adult.data --test adult.test --opendp DIR ...

``DIR`` holds the versions OpenDP 0.16's ``mbi`` extra pins (``pip install --target DIR mbi==1.1.0
polars==1.36.1``; see ``benchmarks/peers/opendp_mbi.py``). The data: the census extract (50 000 × 17, by
``examples/census2011/schema.yaml``) or UCI Adult (``adult.data`` / ``adult.test`` as distributed, by
``examples/uci_adult/schema.yaml``, read as :mod:`bench_adult` reads them). Every arm gets the same integer codes,
the same (ε, δ) and makes as many synthetic rows as the data has. The arms:

* ``sdgov default``: ``propose --select mst`` at the draft's defaults (share, triples, extra rounds, model bound),
  then the release, drawn by the sampler's default (rounded since issue 40); ``..., i.i.d. sampler`` / ``...,
  rounded sampler``: the same with ``generator.sampling`` stated; ``sdgov AIM default``: ``propose --select aim`` at
  the draft's defaults (triples among its candidates); ``sdgov before``: issue 16's ``extra: 24``, share 2/3, i.i.d.;
  ``sdgov default, share S``: the default selection with ``privacy.selection.share: S`` (the budget split's choice);
* ``sdgov MST + N pairs``: sdgov's default selection share with ``privacy.selection.extra: N`` and
  ``limits.max_exact_cells`` (:func:`bench_selection.sdgov_mst`: what ``propose --select mst`` then ``release`` do);
* ``sdgov AIM``: ``propose --select aim`` at the product's settings (16 × attributes rounds planned, the
  generator's iterations between rounds), then the release of its Φ (:func:`bench_selection.sdgov_aim`);
* ``OpenDP AIM`` / ``OpenDP MST``: ``opendp.extras.mbi.AIM()`` / ``MST()`` with every default, through OpenDP's
  own context API (``benchmarks/peers/opendp_mbi.py``).

Every sdgov arm fits with the product's iterations (``generator.iterations``' default, 2000; ``--iterations`` sets
another): results before 2026-11-29d fitted 1000, which left the full census's model short of convergence (its
triples' TVD 4 % above the fit at 2000, which 3000 and 5000 do not lower further: ``benchmarks/README.md``, issue 40).
Each (arm, ε, seed) runs in a fresh process (``--cell``) with an empty JAX cache of its own, so no arm inherits
another's compiled programs (each pays its model's compilation, as a release's first fit does), and is
timed from the data in memory to the synthetic rows in memory: wall and CPU seconds of its process (all threads;
the peer script counts its children too). Scores: the average 2-way TVD over all attribute pairs; on the census
the same over the App 3 workload (``examples/census2011/app3.yaml``'s Φ: all 21 pairs of its 7 attributes); on
Adult train-on-synthetic / test-on-real income accuracy (:func:`bench_adult.accuracy`). The summary gives, per
ε, the median over seeds and each arm's ratios to OpenDP AIM (TVD, CPU).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_adult import accuracy, read_adult
from bench_selection import CENSUS, REPO, SCHEMA, peer, sdgov_aim, sdgov_mst, tvd_pairs, tvd_triples

from sdgov.data.schema import load_schema
from sdgov.engines import load_encoded
from sdgov.generators.settings import GeneratorSpec

ADULT_SCHEMA = REPO / "examples" / "uci_adult" / "schema.yaml"
APP3 = REPO / "examples" / "census2011" / "app3.yaml"
TARGET = "income"
BASELINE = "OpenDP AIM"


def app3_attributes() -> list[str]:
    """The attributes whose pairs are App 3's Φ (its spec's ``all_kway``: k = 2)."""
    (kway,) = yaml.safe_load(APP3.read_text())["phi"]["all_kway"]
    return list(kway["attributes"])


def load(args: argparse.Namespace) -> tuple[pd.DataFrame, object, list[str], pd.DataFrame | None]:
    """The real codes, their schema, the attributes and (Adult) the encoded test set."""
    if args.data == "census":
        schema = load_schema(SCHEMA)
        real, test = load_encoded(CENSUS, schema), None
    else:
        if args.train is None or args.test is None:
            raise SystemExit("bench_aim.py: --data adult needs --train adult.data and --test adult.test")
        schema = load_schema(ADULT_SCHEMA)
        real, test = read_adult(args.train, schema), read_adult(args.test, schema)
    attrs = [c.name for c in schema.columns if c.name in real.columns]
    if args.columns:
        wanted = [a.strip() for a in args.columns.split(",")]
        unknown = [a for a in wanted if a not in attrs]
        if unknown:
            raise SystemExit(f"bench_aim.py: --columns names {unknown}, not in the {args.data} schema's {attrs}")
        attrs = wanted
    return real[attrs], schema, attrs, test


def mst_name(extra: int) -> str:
    return "sdgov MST" + (f" + {extra} pairs" if extra else "")


# propose --select mst at the draft's defaults (share, triples, extra rounds, model bound), the sampler's default way
# of drawing (rounded since issue 40; results before 2026-11-29's flip name i.i.d. draws "sdgov default")
DEFAULT = "sdgov default"
ROUNDED = "sdgov default, rounded sampler"  # the same with generator.sampling: round stated
IID = "sdgov default, i.i.d. sampler"  # the same with generator.sampling: iid (the default before issue 40)
AIM_DEFAULT = "sdgov AIM default"  # propose --select aim at the draft's defaults (share, triples, rounds)
BEFORE = "sdgov before (MST + 24 pairs, share 2/3)"  # issue 16's setting, i.i.d. sampler, the noisy 1-ways' score


SHARE = "sdgov default, share "  # + S: the default selection with privacy.selection.share S (the budget split)
EQUAL = "sdgov default, equal weights"  # weigh_by_cells 0: every marginal at one σ (the default before the 5th pass)


def sdgov_default(
    args: argparse.Namespace,
    data: tuple,
    sampling: str | None,
    share: float | None = None,
    weigh_by_cells: float | None = None,
) -> tuple:
    """The default selection (``SelectionSpec()``'s share unless ``share``, triples and extra rounds, its model bound
    as the exact cells, its weights unless ``weigh_by_cells``) then the release, sampled as ``sampling`` says."""
    from sdgov.agreement.spec import SelectionSpec

    d = SelectionSpec() if share is None else SelectionSpec(share=share)
    return sdgov_mst(
        *data,
        d.share,
        d.one_way,
        args.iterations,
        d.extra_rounds,
        d.model_cells,
        d.triples,
        sampling,
        weigh_by_cells=weigh_by_cells,
    )


def run_cell(args: argparse.Namespace) -> dict:
    """One arm at one ε and seed, in this (fresh) process: its scores, seconds and what it chose."""
    real, schema, attrs, test = load(args)
    sizes = schema.domain(attrs)  # type: ignore[attr-defined]
    rows, eps, seed = len(real), args.eps[0], args.first_seed
    data = (real, schema, attrs, eps, args.delta, rows, seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.cell in (DEFAULT, ROUNDED, IID):
            syn, secs, info = sdgov_default(args, data, {DEFAULT: None, ROUNDED: "round", IID: "iid"}[args.cell])
        elif args.cell == EQUAL:
            syn, secs, info = sdgov_default(args, data, None, weigh_by_cells=0.0)
        elif args.cell.startswith(SHARE):
            syn, secs, info = sdgov_default(args, data, None, float(args.cell.removeprefix(SHARE)))
        elif args.cell == AIM_DEFAULT:
            from sdgov.agreement.spec import SelectionSpec

            d = SelectionSpec(method="aim")
            syn, secs, info = sdgov_aim(*data, d.share, d.one_way, args.iterations, None, None)
        elif args.cell == BEFORE:
            syn, secs, info = sdgov_mst(
                *data,
                2 / 3,
                0.5,
                args.iterations,
                24,
                250_000,
                sampling="iid",
                fast_count=False,
                pair_score="noisy_one_ways",
                weigh_by_cells=0.0,
            )
        elif args.cell.startswith("sdgov MST"):
            syn, secs, info = sdgov_mst(*data, args.share, args.one_way, args.iterations, args.extra, args.exact_cells)
        elif args.cell == "sdgov AIM":
            syn, secs, info = sdgov_aim(*data, args.share, args.one_way, args.iterations, None, None)
        else:
            codes, domain = work / "codes.csv", work / "domain.json"
            real.to_csv(codes, index=False)
            domain.write_text(json.dumps(sizes))
            env = {**os.environ, "PYTHONPATH": str(args.opendp), "XDG_CACHE_HOME": str(work / "cache")}
            if args.progress:  # one line per AIM round, so a run stopped by hand says how far it got
                env["PEER_PROGRESS"] = str(args.progress)
            method = {"OpenDP AIM": "aim", "OpenDP MST": "mst"}[args.cell]
            syn, secs, info = peer(
                sys.executable, "opendp_mbi.py", codes, domain, eps, args.delta, rows, work, method, env=env
            )
    outside = int(syn[attrs].isna().any(axis=1).sum())  # OpenDP's null keys: records outside the domain
    syn = syn[attrs].fillna(-1).astype(np.int64)
    record = {"seed": seed, "tvd": tvd_pairs(real, syn, sizes), "seconds": secs, "info": info}
    record["tvd_triples"] = tvd_triples(real, syn, sizes)
    record["records_outside_domain"] = outside
    if test is None and not args.columns:
        workload = app3_attributes()
        record["tvd_workload"] = tvd_pairs(real, syn, {a: sizes[a] for a in workload})
    elif test is not None and TARGET in attrs:
        features = [a for a in attrs if a != TARGET]
        known = (syn[TARGET] >= 0).to_numpy()  # a null income is no label; a null feature is a category of its own
        record["accuracy"] = accuracy(syn[known].replace(-1, {a: sizes[a] for a in features}), test, features)
    return record


def summarize(cells: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, dict]]:
    """Per ε and arm: medians over seeds, and the ratios to OpenDP AIM's medians at the same ε."""
    out: dict[str, dict[str, dict]] = {}
    for eps, arms in cells.items():
        table = {}
        for name, runs in arms.items():
            row: dict[str, Any] = {"seeds": [r["seed"] for r in runs], "runs": runs}
            for key in ("tvd", "tvd_triples", "tvd_workload", "accuracy", "seconds"):
                if all(key in r for r in runs):
                    row[f"{key}_median"] = float(np.median([r[key] for r in runs]))
            row["cpu_seconds_median"] = float(np.median([r["info"]["cpu_seconds"] for r in runs]))
            table[name] = row
        base = table.get(BASELINE)
        if base:
            for row in table.values():
                row["tvd_vs_opendp_aim"] = row["tvd_median"] / base["tvd_median"]
                if "tvd_triples_median" in row and "tvd_triples_median" in base:
                    row["tvd_triples_vs_opendp_aim"] = row["tvd_triples_median"] / base["tvd_triples_median"]
                row["cpu_vs_opendp_aim"] = row["cpu_seconds_median"] / base["cpu_seconds_median"]
                if "tvd_workload_median" in row:
                    row["tvd_workload_vs_opendp_aim"] = row["tvd_workload_median"] / base["tvd_workload_median"]
        out[eps] = table
    return out


def report(result: dict, out: str | None) -> None:
    for eps, table in result["epsilons"].items():
        for name, row in table.items():
            third = "".join(
                f"{label} {row[key]:.4f}  "
                for key, label in (
                    ("tvd_triples_median", "triples TVD"),
                    ("tvd_workload_median", "App3 TVD"),
                    ("accuracy_median", "acc"),
                )
                if key in row
            )
            vs = (
                f"  ({row['tvd_vs_opendp_aim']:.2f}× AIM's TVD, {row['cpu_vs_opendp_aim']:.2f}× its CPU)"
                if "tvd_vs_opendp_aim" in row
                else ""
            )
            print(
                f"ε {eps:>4}  {name:24} TVD {row['tvd_median']:.4f}  {third}CPU {row['cpu_seconds_median']:7.1f} s"
                f"  wall {row['seconds_median']:7.1f} s  seeds {row['seeds']}{vs}"
            )
    if out:
        Path(out).write_text(json.dumps(result, indent=2) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", choices=["census", "adult"], default="census")
    ap.add_argument("--train", type=Path, help="UCI's adult.data (no header row)")
    ap.add_argument("--test", type=Path, help="UCI's adult.test (no header row)")
    ap.add_argument("--opendp", type=Path, help="a directory with mbi==1.1.0 and polars==1.36.1 (OpenDP's extra)")
    ap.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    ap.add_argument("--delta", type=float, default=1e-9, help="the card's δ (default 1e-9)")
    ap.add_argument("--columns", help="a subset of the schema's columns, comma-separated (where AIM finishes)")
    ap.add_argument("--progress", type=Path, help="OpenDP AIM: append one line per round to this file")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--share", type=float, default=2 / 3)
    ap.add_argument("--one-way", type=float, default=0.5)
    ap.add_argument(
        "--iterations",
        type=int,
        default=GeneratorSpec().iterations,
        help="the fit's iterations, every sdgov arm (default: the product's generator.iterations; before "
        "2026-11-29d this benchmark fitted 1000)",
    )
    ap.add_argument("--extra", type=int, default=24, help="sdgov MST: pairs beyond the tree")
    ap.add_argument("--exact-cells", type=int, default=250_000, help="sdgov MST: limits.max_exact_cells")
    ap.add_argument("--arms", nargs="+", default=None, help="default: all four")
    ap.add_argument("--merge", nargs="+", help="merge the cells of earlier --out files and exit")
    ap.add_argument("--cell", help=argparse.SUPPRESS)  # one arm, first ε, first seed, in this process
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.cell:
        print(json.dumps(run_cell(args)))
        return
    if args.merge:
        return merge(args.merge, args.out)
    arms = args.arms or [DEFAULT, IID, BEFORE, "OpenDP AIM"]
    if any(a.startswith("OpenDP") for a in arms) and args.opendp is None:
        ap.error("the OpenDP arms need --opendp DIR (mbi==1.1.0 and polars==1.36.1)")
    cells: dict[str, dict[str, list[dict]]] = {}
    result = {
        "benchmark": "issue 27 (3): sdgov's selection against OpenDP's AIM and MST at their defaults",
        "command": " ".join(["python", *sys.argv]),
        "data": args.data,
        "delta": args.delta,
        "selection_share": args.share,
        "one_way": args.one_way,
        "extra_pairs": args.extra,
        "exact_cells": args.exact_cells,
        "iterations": args.iterations,
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "cpu_seconds": "user + system of the arm's process (all threads) from the data in memory to the rows",
    }
    for eps, seed, arm in itertools.product(args.eps, range(args.first_seed, args.first_seed + args.seeds), arms):
        record = one_cell(args, arm, eps, seed)
        if record is None:
            continue
        cells.setdefault(str(eps), {}).setdefault(arm, []).append(record)
        third = "".join(
            f"  {label} {record[key]:.4f}"
            for key, label in (("tvd_triples", "triples"), ("tvd_workload", "App3"), ("accuracy", "acc"))
            if key in record
        )
        print(
            f"ε {eps}  seed {seed}  {arm:24} TVD {record['tvd']:.4f}{third}  "
            f"CPU {record['info']['cpu_seconds']:7.1f} s  wall {record['seconds']:7.1f} s",
            flush=True,
        )
        if args.out:  # a partial table survives an interrupted run
            Path(args.out).write_text(json.dumps({**result, "epsilons": summarize(cells)}, indent=2) + "\n")
    report({**result, "epsilons": summarize(cells)}, args.out)


def one_cell(args: argparse.Namespace, arm: str, eps: float, seed: int) -> dict | None:
    """Run one cell in a fresh process (this script with ``--cell``); None (and its error printed) if it failed."""
    cmd = [sys.executable, __file__, "--cell", arm, "--data", args.data, "--eps", str(eps), "--first-seed", str(seed)]
    for flag in ("train", "test", "opendp", "columns", "progress"):
        if getattr(args, flag) is not None:
            cmd += [f"--{flag}", str(getattr(args, flag))]
    for flag in ("delta", "share", "one_way", "iterations", "extra", "exact_cells"):
        cmd += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    # a fresh, empty JAX cache per cell: each arm compiles its model as a release's first fit does, and loads nothing
    # an earlier cell or run compiled (the user's cache would serve the shapes another run already met)
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "SDGOV_JAX_CACHE_DIR": cache}
        res = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if res.returncode != 0:
        print(f"ε {eps}  seed {seed}  {arm}: FAILED\n{res.stderr[-3000:]}", flush=True)
        return None
    record = json.loads(res.stdout.strip().splitlines()[-1])
    if args.out:  # every finished cell kept at once, whatever happens to the run after it
        with Path(args.out).with_suffix(".cells.jsonl").open("a") as f:
            f.write(json.dumps({"arm": arm, "eps": eps, **record}) + "\n")
    return record


def merge(files: list[str], out: str | None) -> None:
    """Cells of several runs (e.g. ε values or arms run one after another) in one result."""
    parts = [json.loads(Path(f).read_text()) for f in files]
    cells: dict[str, dict[str, list[dict]]] = {}
    for p in parts:
        for eps, table in p["epsilons"].items():
            for arm, row in table.items():
                cells.setdefault(eps, {}).setdefault(arm, []).extend(row["runs"])
    report({**parts[0], "command": [p["command"] for p in parts], "epsilons": summarize(cells)}, out)


if __name__ == "__main__":
    main()
