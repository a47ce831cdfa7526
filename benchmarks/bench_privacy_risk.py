"""Acceptance benchmark for issue 4 (privacy-risk evidence) on the census extract. Not a test: it takes minutes.

    nice -n 10 python benchmarks/bench_privacy_risk.py [--sections app1,wide,leaky] [--jobs 2] [--out FILE]

Sections (each prints one JSON line per run and is saved to ``--out``):

``app1``   our pipeline at ε = 1 on Application 1 (Economic Activity, Occupation, Sex; all 2-way marginals): the
           full audit — 5 outliers + 5 random targets × 10 shadow worlds × 10 synthetic sets on 1,000-row
           datasets (the timing the issue asks for), the canary DP lower bound, record checks vs a real holdout.
``wide``   our pipeline at ε = 1 on all 17 census attributes (Φ = every attribute paired with Age): the same
           audit on data where records are mostly unique, so exact matches and canaries have power.
``release`` the ``app1`` audit pre-registered in the spec and run by the real release flow (its audit stage sends
           every trial to a Prefect ProcessPoolTaskRunner), against the same audit in joblib workers in this run:
           prints both times and their ratio (the cost of running trials as Prefect task runs).
``leaky``  the shipped leaky generators on the wide spec: the copier (canary bound + record checks) and the
           category-list leak (linkability game; the affected outlier is the target holding the rarest category).

The specs are written to build/bench_privacy/ and point at ../shared/data; the data are never copied.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sdgov.agreement.sections.privacy_risk import RiskPolicy, RiskSettings  # noqa: E402
from sdgov.audits.privacy.run import PrivacyAuditResult, audit_spec_privacy, summary  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"
SCHEMA = REPO / "examples" / "census2011" / "schema.yaml"
BUILD = REPO / "build" / "bench_privacy"


def write_specs() -> dict[str, Path]:
    BUILD.mkdir(parents=True, exist_ok=True)
    app1 = yaml.safe_load((REPO / "examples" / "census2011" / "app1.yaml").read_text())
    app1.update(name="census2011-app1-eps1", privacy={"epsilon": 1.0}, approvals=None, tasks=[])
    app1["dataset"]["path"], app1["schema"] = str(DATA), str(SCHEMA)
    cols = [c["name"] for c in yaml.safe_load(SCHEMA.read_text())["columns"]]
    wide = {
        "name": "census2011-wide-eps1",
        "dataset": {"name": "census2011_teaching", "path": str(DATA)},
        "schema": str(SCHEMA),
        "phi": {"marginals": [["Age", c] for c in cols if c != "Age"]},
        "privacy": {"epsilon": 1.0},
        "generator": {"name": "pgm", "iterations": 1000},
        "rows": 50000,
        "seed": 2011,
    }
    out = {}
    for name, spec in (("app1", app1), ("wide", wide)):
        spec = {k: v for k, v in spec.items() if v is not None}
        out[name] = BUILD / f"{name}_eps1.yaml"
        out[name].write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    return out


def row(label: str, r: PrivacyAuditResult, wall: float) -> dict:
    s = summary(r)
    d = r.disclosure
    c = r.canary
    out = {
        "run": label,
        "generator": r.generator,
        "verdict": r.verdict,
        "claimed_epsilon": r.claimed_epsilon,
        "claimed_delta": r.claimed_delta,
        "epsilon_lower": r.epsilon_lower,
        "epsilon_lower_pure": r.epsilon_lower_pure,
        "canary": None
        if c is None
        else {
            "m": c.m,
            "d": c.d,
            "n_synth": c.n_synth,
            "base_rows": c.base_rows,
            "metric": c.metric,
            "nu_hat": c.nu_hat,
            "best_k": c.runs[0].best_k,
            "min_distance": c.runs[0].min_distance,
        },
        "min_privacy_gain": r.min_privacy_gain,
        "dp_adv_bound": r.dp_adv_bound,
        "dp_adv_bound_tight": r.dp_adv_bound_tight,
        "targets": [
            {
                "index": t.target.index,
                "kind": t.target.kind,
                "pg": round(t.privacy_gain, 3),
                "pg_ci": [round(x, 3) for x in t.privacy_gain_ci],
                "feature": t.feature,
                "count_full": t.target.count_full,
                "count_pair": t.target.count_pair,
                "count_single": t.target.count_single,
                "ai_adv": None if t.attribute is None else round(t.attribute.advantage, 3),
            }
            for t in r.targets
        ],
        "exact_matches": r.exact_matches,
        "unique": None if d is None else d.unique.model_dump(),
        "exact_matches_independent": None if d is None else d.exact_matches_independent,
        "dcr_zero": None if d is None else [d.dcr_synthetic.share_zero, d.dcr_holdout.share_zero],
        "checks": [(x.name, x.level) for x in r.checks],
        "timing": r.timing,
        "wall": wall,
        "seconds": s["seconds"],
    }
    print(json.dumps(out), flush=True)
    return out


def audit(
    label: str,
    spec: Path,
    generator: str | None,
    st: RiskSettings,
    parts: tuple[str, ...],
    metric: str = "unit",
    params: dict | None = None,
) -> dict:
    t = time.perf_counter()

    def progress(done: int, total: int, what: str) -> None:
        if done == total:
            print(f"  [{label}] {what}: {done}/{total} ({time.perf_counter() - t:.0f} s)", file=sys.stderr, flush=True)

    r = audit_spec_privacy(
        spec, generator, st, RiskPolicy(), params=params, parts=parts, canary_metric=metric, progress=progress
    )
    return row(label, r, time.perf_counter() - t)


def release_vs_joblib(spec: Path, jobs: int, seed: int) -> dict:
    """The acceptance-size App 1 audit twice in one run: joblib (the CLI) and inside the release flow (Prefect)."""
    import os
    import tempfile

    settings = {
        "n_outliers": 5,
        "n_random": 5,
        "n_shadow": 10,
        "n_synth": 10,
        "train_rows": 1000,
        "sensitive": "Economic Activity",
        "n_jobs": jobs,
        "seed": seed,
    }
    t = time.perf_counter()
    base = audit_spec_privacy(spec, None, RiskSettings(**settings), RiskPolicy())
    joblib_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("PREFECT_HOME", str(Path(tmp) / "prefect"))
        os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
        pre = yaml.safe_load(spec.read_text())
        pre["privacy_risk"] = {"settings": settings}
        pre_spec = BUILD / "app1_eps1_release.yaml"
        pre_spec.write_text(yaml.safe_dump(pre, sort_keys=False, allow_unicode=True))
        from sdgov.flows.release import release_flow

        t = time.perf_counter()
        r = release_flow(
            spec_path=str(pre_spec),
            registry_root=str(Path(tmp) / "registry"),
            approvals_path=str(REPO / "examples" / "census2011" / "approvals.yaml"),
        )
        flow_s = time.perf_counter() - t
        ev = json.loads((Path(r.path) / "artifacts" / "privacy_risk.json").read_text())["result"]
    out = {
        "run": "app1 ε=1 audit: release flow (Prefect process pool) vs joblib",
        "joblib_seconds": base.seconds,
        "joblib_wall": joblib_s,
        "release_audit_seconds": ev["seconds"],
        "release_flow_wall": flow_s,
        "ratio_prefect_over_joblib": ev["seconds"] / base.seconds,
        "verdict_joblib": base.verdict,
        "verdict_release": ev["verdict"],
        "min_pg_joblib": base.min_privacy_gain,
        "min_pg_release": ev["min_privacy_gain"],
        "epsilon_lower_release": ev["epsilon_lower"],
    }
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sections", default="app1,wide,leaky")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "build" / "bench_privacy_risk.json"))
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny settings (the figures mean nothing)")
    ap.add_argument("--shadows", type=int, default=10, help="shadow worlds of the app1/wide pipeline runs")
    args = ap.parse_args()
    sections = args.sections.split(",")
    specs = write_specs()
    base = {"n_jobs": args.jobs, "seed": args.seed}
    if args.quick:
        global RiskSettings
        full = RiskSettings

        def RiskSettings(**kw):
            kw.update(
                n_shadow=2,
                n_synth=2,
                folds=2,
                rf_trees=10,
                disclosure_rows=1500,
                n_outliers=min(kw.get("n_outliers", 5), 2),
                n_random=min(kw.get("n_random", 5), 1),
            )
            return full(**kw)

    results: list[dict] = []
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        Path(args.out).write_text(json.dumps(results, indent=2))

    if "app1" in sections:  # the acceptance timing: 10 targets × 10 shadow worlds × 10 synthetic sets, n = 1,000
        st = RiskSettings(
            **base,
            n_outliers=5,
            n_random=5,
            n_shadow=args.shadows,
            n_synth=10,
            train_rows=1000,
            sensitive="Economic Activity",
        )
        results.append(
            audit(
                f"app1 pipeline ε=1 (full, {args.shadows} worlds)",
                specs["app1"],
                None,
                st,
                ("mia", "canary", "disclosure"),
            )
        )
        save()
    if "release" in sections:
        results.append(release_vs_joblib(specs["app1"], args.jobs, args.seed))
        save()
    if "wide" in sections:
        st = RiskSettings(
            **base,
            n_outliers=5,
            n_random=5,
            n_shadow=10,
            n_synth=10,
            train_rows=1000,
            canaries=100,
            canary_base_rows=0,
            sensitive="Health",
        )
        results.append(
            audit(
                "wide pipeline ε=1 (full, canary metric=cells)",
                specs["wide"],
                None,
                st,
                ("mia", "canary", "disclosure"),
                metric="cells",
            )
        )
        save()
        st1 = RiskSettings(**base, canaries=100, canary_base_rows=0)
        results.append(audit("wide pipeline ε=1 (canary metric=unit)", specs["wide"], None, st1, ("canary",)))
        save()
    if "leaky" in sections:
        st = RiskSettings(**base, canaries=100, canary_base_rows=0)
        for metric in ("cells", "unit"):
            results.append(
                audit(
                    f"wide copier (canary metric={metric})",
                    specs["wide"],
                    "copier",
                    st,
                    ("canary", "disclosure") if metric == "cells" else ("canary",),
                    metric,
                )
            )
            save()
        for n in (1000, 500):
            st = RiskSettings(**base, n_outliers=5, n_random=0, n_shadow=10, n_synth=10, train_rows=n, ai_sets=0)
            results.append(
                audit(
                    f"wide category_leak (n={n})",
                    specs["wide"],
                    "category_leak",
                    st,
                    ("mia",),
                )
            )
            save()
        st = RiskSettings(**base, canaries=100, canary_base_rows=0)
        results.append(
            audit(
                "app1 copier (canary metric=cells)",
                specs["app1"],
                "copier",
                st,
                ("canary", "disclosure"),
                "cells",
            )
        )
        save()
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
