"""The privacy table of issues 13 and 29: honest / memoriser 1 %, 2 % / copier / exact-marginal / category leak /
blend 5 %, 2 % (issue 29: rows from a model with one extra non-Φ 3-way, no record copied) × Apps 1–2
× seeds, with the verdict of every run and rates with exact (Clopper–Pearson) 95 % intervals. Not a test.

    python benchmarks/bench_privacy_table.py [--seeds 10] [--apps app1,app2] [--generators honest,copier]
        [--parts mia,one_run,memorisation,disclosure] [--out benchmarks/results/privacy-table-DATE.json]
    python benchmarks/bench_privacy_table.py --summarise FILE... --out MERGED.json

Every run is the audit of ``sdgov audit privacy --spec examples/census2011/APP.yaml --generator G --seed S`` with
the default settings and, by default, every default part (membership and attribute inference, the one-run DP lower
bound, memorisation beyond Φ, the record checks). Fewer ``--parts`` give a lower bound on the verdict only (a
check left out cannot fail). The claimed (ε, δ) are each spec's own privacy plan (σ = 10).

Issue 37 item 5: ``thin copier`` (``thin_copier``: its quasi-identifiers drawn with the audit seed among the attribute
sets other than the QI copier's default, at most 1 % of each sample's rows; ``thin copier 0.5%`` at most 0.5 %) and
``blend 2% unseeded`` (``camo2u_ipf``: the camouflaged 2 % blend, noise and sampling unseeded, leaked 3-way drawn with
the audit seed). Each row records the verbatim-copy test's p-value and counts (the record checks' new check).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from scipy import stats

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sdgov.agreement.sections.privacy_risk import RiskSettings  # noqa: E402
from sdgov.audits.privacy.run import DEFAULT_PARTS, audit_spec_privacy  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"
GENERATORS = {
    "honest": None,
    "memoriser 2%": "memoriser_2pct",
    "copier": "copier",
    "exact-marginal": "exact_marginal",
    "memoriser 1%": "memoriser_1pct",
    "category leak": "category_leak",
    "blend 5%": "blend5_ipf",
    "blend 2%": "blend2_ipf",
    "qi copier": "qi_copier",
    "thin copier": "thin_copier",  # issue 37: QIs drawn with the audit seed (qi_seed), at most 1 % of rows
    "thin copier 0.5%": "thin_copier",
    "blend 2% unseeded": "camo2u_ipf",  # the camouflaged 2 % blend, noise and sampling unseeded, leak drawn by seed
}
PARAMS = {  # per label: the control's own params, given the audit seed
    "thin copier": lambda seed: {"qi_seed": seed},
    "thin copier 0.5%": lambda seed: {"qi_seed": seed, "max_share": 0.005},
    "blend 2% unseeded": lambda seed: {"leak_seed": seed},
}


BOUNDS = {  # the ε lower bounds a run reports, each alone: how often each exceeds the claimed ε
    "epsilon_lower_one_run": lambda x: (x.get("one_run") or {}).get("epsilon_lower"),
    "epsilon_lower_membership": lambda x: x.get("epsilon_lower_membership"),
}


def _commit() -> str | None:
    """The checkout's commit (what code produced the figures), or None outside git."""
    import subprocess

    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None


def cp(k: int, n: int) -> list[float]:
    """Clopper–Pearson 95 % interval of k successes in n (scipy's exact binomial interval), to 3 decimals."""
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return [round(float(ci.low), 3), round(float(ci.high), 3)]


def summarise(runs: list[dict]) -> list[dict]:
    """Per (app, generator): verdict counts, Clopper–Pearson intervals of the rates, ε_lower and copy share."""
    table = []
    keys = sorted({(r["app"], r["generator"]) for r in runs}, key=lambda k: (k[0], list(GENERATORS).index(k[1])))
    for app, label in keys:
        rows = [r for r in runs if r["app"] == app and r["generator"] == label]
        n = len(rows)
        k = {v: sum(x["verdict"] == v for x in rows) for v in ("pass", "warn", "fail")}
        table.append(
            {
                "app": app,
                "generator": label,
                "seeds": n,
                **k,
                "fail_rate_ci95": cp(k["fail"], n),
                "clean_pass_rate_ci95": cp(k["pass"], n),
                "epsilon_lower_above_claim": sum((x["epsilon_lower"] or 0) > x["claimed_epsilon"] for x in rows),
                # each bound on its own (older result files lack them: None)
                **{
                    f"{name}_above_claim": None
                    if any(get(x) is None for x in rows)
                    else {
                        "count": sum(get(x) > x["claimed_epsilon"] for x in rows),
                        "rate_ci95": cp(sum(get(x) > x["claimed_epsilon"] for x in rows), n),
                    }
                    for name, get in BOUNDS.items()
                },
                "epsilon_lower_range": [
                    min(x["epsilon_lower"] or 0 for x in rows),
                    max(x["epsilon_lower"] or 0 for x in rows),
                ],
                "copy_share_mean": None
                if rows[0]["copy_share"] is None
                else round(sum(x["copy_share"] for x in rows) / n, 4),
                "min_privacy_gain_range": None
                if any(x["min_privacy_gain"] is None for x in rows)
                else [min(x["min_privacy_gain"] for x in rows), max(x["min_privacy_gain"] for x in rows)],
                "non_pass_checks": sorted({c for x in rows for c, v in x["checks"].items() if v != "pass"}),
                # each check's own rate (for an honest generator: its false alarms), with its interval
                "per_check": {
                    c: {
                        "warn": sum(x["checks"].get(c) == "warn" for x in rows),
                        "fail": sum(x["checks"].get(c) == "fail" for x in rows),
                        "not_pass_rate_ci95": cp(sum(x["checks"].get(c) not in (None, "pass") for x in rows), n),
                    }
                    for c in sorted({c for x in rows for c in x["checks"]})
                },
                "seconds_mean": round(sum(x["seconds"] for x in rows) / n, 1),
                "cpu_seconds_mean": None
                if any("cpu_seconds" not in x for x in rows)
                else round(sum(x["cpu_seconds"] for x in rows) / n, 1),
                "fits": rows[0].get("fits"),
            }
        )
    return table


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--summarise", nargs="*", help="merge these result files' runs into --out (no audits run)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed … first-seed + seeds − 1")
    ap.add_argument("--apps", default="app1,app2")
    ap.add_argument("--generators", default=",".join(GENERATORS), help="labels of GENERATORS, comma-separated")
    ap.add_argument("--parts", default=",".join(DEFAULT_PARTS))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(REPO / "build" / "privacy-table.json"))
    args = ap.parse_args()
    if args.summarise:
        files = [json.loads(Path(f).read_text()) for f in args.summarise]
        runs_all = [r for f in files for r in f["runs"]]
        commands = [c for f in files for c in f.get("commands", [f.get("command")])]  # a merge of merges keeps them all
        merged = {"commands": commands, "parts": files[0]["parts"], "table": summarise(runs_all)}
        Path(args.out).write_text(json.dumps({**merged, "runs": runs_all}, indent=1))
        print(json.dumps(merged["table"], indent=1))
        return
    parts = tuple(args.parts.split(","))
    runs: list[dict] = []
    out = {"command": "python " + shlex.join(sys.argv), "code": _commit(), "parts": parts, "runs": runs, "table": []}

    def save() -> None:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1))

    for app in args.apps.split(","):
        for label in args.generators.split(","):
            rows = []
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                t, cpu = time.perf_counter(), time.process_time()
                r = audit_spec_privacy(
                    REPO / "examples" / "census2011" / f"{app}.yaml",
                    GENERATORS[label],
                    RiskSettings(seed=seed, n_jobs=args.jobs),
                    data_path=DATA,
                    params=PARAMS[label](seed) if label in PARAMS else None,
                    parts=parts,
                )
                m = r.memorisation
                row = {
                    "app": app,
                    "generator": label,
                    "seed": seed,
                    "params": PARAMS[label](seed) if label in PARAMS else None,
                    "verdict": r.verdict,
                    "claimed_epsilon": r.claimed_epsilon,
                    "claimed_delta": r.claimed_delta,
                    "epsilon_lower": r.epsilon_lower,
                    "epsilon_lower_membership": r.epsilon_lower_membership,
                    "one_run": None
                    if r.one_run is None
                    else {
                        "canaries": r.one_run.canaries,
                        "epsilon_lower": r.one_run.epsilon_lower,
                        "by_k": [g.model_dump() for g in r.one_run.by_k],
                    },
                    "copy_share": None if m is None else m.copy_share,
                    "copy_share_ci": None if m is None else list(m.copy_share_ci),
                    "copy_share_lower": None if m is None else m.copy_share_lower,
                    "min_privacy_gain": r.min_privacy_gain,
                    "beyond_phi_p_value": None if r.beyond_phi is None else r.beyond_phi.p_value,
                    "verbatim": None
                    if r.disclosure is None or r.disclosure.verbatim is None
                    else {
                        k: getattr(r.disclosure.verbatim, k)
                        for k in ("p_value", "flagged_train", "unique_train", "flagged_holdout", "unique_holdout")
                    },
                    "checks": {c.name: c.level for c in r.checks},
                    "fits": getattr(r, "fits", None),  # per part (a shared fit counted once; absent before issue 37)
                    "seconds": round(time.perf_counter() - t, 1),
                    "cpu_seconds": round(time.process_time() - cpu, 1),  # this process (all of it with --jobs 1)
                }
                print(json.dumps(row), flush=True)
                runs.append(row)
                rows.append(row)
                save()
            n = len(rows)
            k = {v: sum(x["verdict"] == v for x in rows) for v in ("pass", "warn", "fail")}
            refuted = sum((x["epsilon_lower"] or 0) > x["claimed_epsilon"] for x in rows)
            out["table"].append(
                {
                    "app": app,
                    "generator": label,
                    "seeds": n,
                    **{f"{v}": k[v] for v in k},
                    "fail_rate_ci95": cp(k["fail"], n),
                    "clean_pass_rate_ci95": cp(k["pass"], n),
                    "epsilon_lower_above_claim": refuted,
                    "epsilon_lower_mean": round(sum(x["epsilon_lower"] or 0 for x in rows) / n, 3),
                    "copy_share_mean": None
                    if rows[0]["copy_share"] is None
                    else round(sum(x["copy_share"] for x in rows) / n, 4),
                    "seconds_mean": round(sum(x["seconds"] for x in rows) / n, 1),
                }
            )
            print(json.dumps(out["table"][-1]), file=sys.stderr, flush=True)
            save()


if __name__ == "__main__":
    main()
