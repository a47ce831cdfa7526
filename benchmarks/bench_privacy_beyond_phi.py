"""Interactions beyond Φ (issue 29 item 3): the privacy audit's non-Φ check alone, per app × generator × seed, with
its p-value, its level under the default policy, and false-alarm / detection rates with exact (Clopper–Pearson)
95 % intervals. Not a test.

    python benchmarks/bench_privacy_beyond_phi.py [--apps app1,app2,app3,demo] [--generators honest,blend5]
        [--seeds 20] [--first-seed 0] [--out build/privacy-beyond-phi.json]
    python benchmarks/bench_privacy_beyond_phi.py --summarise FILE... --out MERGED.json
    python benchmarks/bench_privacy_beyond_phi.py --profile app3 [--sampling round|iid]
    python benchmarks/bench_privacy_beyond_phi.py --null demo --seeds 40 [--sampling round|iid] [--out FILE]

``--profile`` times the check's own steps (CPU seconds of this process, no fit: the "output" is the default sets,
4M records, drawn by the release's sampler from the Φ-only model of the app's data): the IPF of the pooled output,
the Fisher information, and per set its non-Φ residual's tables. ``--null`` is the calibration of the test itself,
without a generator: each seed draws such an output (exactly the null) and runs the test at B = 199 flips; it
prints the p-values and the warn / fail rates with their intervals.

Every run is ``sdgov audit privacy --spec examples/census2011/APP.yaml --generator G --seed S --parts beyond_phi``
at the default settings (one fit on 10,000 records, 4,000,000 synthetic records in 20 sets, 199 sign flips) and the
plan's σ = 10; ``demo`` is the built-in demo's spec on its made-up data (written to build/), with the generator
parameters its ``privacy_risk:`` section pre-registers (300 iterations). Each run reports its wall and CPU seconds
(the machine is shared: CPU seconds are the figure to compare). The rest of the audit is the privacy table's
(bench_privacy_table.py, which includes this check among the default parts).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sdgov.agreement.sections.privacy_risk import RiskPolicy, RiskSettings  # noqa: E402
from sdgov.audits.privacy.run import audit_spec_privacy  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"
GENERATORS = {
    "honest": None,  # the spec's own generator's honest variant (PGM) at the plan's σ
    "honest ipf": "honest_ipf",
    "blend 5%": "blend5_ipf",
    "blend 2%": "blend2_ipf",
    "copier": "copier",
}
SHORT = {"honest": "honest", "honest_ipf": "honest ipf", "blend5": "blend 5%", "blend2": "blend 2%", "copier": "copier"}


def app_inputs(app: str) -> tuple[Path, Path, dict | None]:
    """Spec, data and generator parameters of one app: a census application, or the demo on its made-up data."""
    if app != "demo":
        return REPO / "examples" / "census2011" / f"{app}.yaml", DATA, None
    from sdgov.agreement.load import load_spec
    from sdgov.data.schema import load_schema
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data

    data = REPO / "build" / "demo" / "data.csv"
    if not data.exists():
        write_demo_data(load_schema(inputs() / "schema.yaml"), data)
    from sdgov.agreement.sections.privacy_risk import PrivacyRiskSettings

    section = load_spec(inputs() / "spec.yaml").agreement.sections.get("privacy_risk")
    assert isinstance(section, PrivacyRiskSettings), section
    return inputs() / "spec.yaml", data, dict(section.generator_params or {})


def cp(k: int, n: int) -> list[float]:
    """Clopper–Pearson 95 % interval of k successes in n (scipy's exact binomial interval), to 3 decimals."""
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return [round(float(ci.low), 3), round(float(ci.high), 3)]


def summarise(runs: list[dict]) -> list[dict]:
    """Per (app, generator): pass / warn / fail of the check, the non-pass rate and the fail rate with intervals."""
    table = []
    for app, label in sorted(
        {(r["app"], r["generator"]) for r in runs}, key=lambda k: (k[0], list(GENERATORS).index(k[1]))
    ):
        rows = [r for r in runs if r["app"] == app and r["generator"] == label]
        n = len(rows)
        k = {v: sum(x["level"] == v for x in rows) for v in ("pass", "warn", "fail")}
        table.append(
            {
                "app": app,
                "generator": label,
                "seeds": sorted(x["seed"] for x in rows),
                "n": n,
                **k,
                "not_pass_rate_ci95": cp(k["warn"] + k["fail"], n),
                "fail_rate_ci95": cp(k["fail"], n),
                "p_value_range": [min(x["p_value"] for x in rows), max(x["p_value"] for x in rows)],
                "seconds_mean": round(sum(x["seconds"] for x in rows) / n, 1),
                "cpu_seconds_mean": round(sum(x.get("cpu_seconds", 0.0) for x in rows) / n, 1),
            }
        )
    return table


def null_model(app: str) -> tuple[list[str], list[tuple[str, ...]], np.ndarray, list[tuple[int, ...]]]:
    """The app's attributes, Φ, the Φ-only model of its data (an array over the attributes) and the tested tables."""
    import math

    from sdgov.agreement.load import load_spec
    from sdgov.audits.privacy import beyond_phi as bp
    from sdgov.engines import load_encoded

    spec, data, _ = app_inputs(app)
    loaded = load_spec(spec)
    attrs = list(loaded.agreement.attributes)
    codes = load_encoded(data, loaded.schema_)[attrs].to_numpy()
    shape = tuple(loaded.schema_.domain(attrs)[a] for a in attrs)
    cliques = [tuple(c) for c in loaded.agreement.cliques]
    phi = [tuple(sorted(attrs.index(a) for a in c)) for c in cliques]
    cells, m = math.prod(shape), RiskSettings().beyond_phi_synth_rows
    tables = bp.tested_tables(bp.non_phi_tables(attrs, cliques), len(attrs), m, cells)
    data_joint = np.bincount(np.ravel_multi_index(tuple(codes.T), shape), minlength=cells).reshape(shape)
    return attrs, cliques, bp.phi_projection(data_joint.astype(np.float64), phi), tables


def null_sets(model: np.ndarray, attrs: list[str], sampling: str, seed: int) -> list[np.ndarray]:
    """The default number of sample sets, ``beyond_phi_synth_rows`` records in all, drawn from ``model`` (an array
    over ``attrs``) by the release's sampler with ``sampling`` — each set's records as cells of the joint."""
    from sdgov.generators.model import CliqueModel
    from sdgov.generators.sampler import iter_chunks

    st = RiskSettings()
    cm = CliqueModel(
        attributes=tuple(attrs),
        domain=dict(zip(attrs, model.shape)),
        cliques=[tuple(attrs)],
        marginals=[model],
        order=list(attrs),
        total=1.0,
    )
    out = []
    for s in range(st.beyond_phi_sets):
        chunks = list(
            iter_chunks(cm, st.beyond_phi_synth_rows // st.beyond_phi_sets, seed * 1000 + s, sampling=sampling)
        )
        cols = tuple(np.concatenate([ch[a] for ch in chunks]).astype(np.int64) for a in attrs)
        out.append(np.ravel_multi_index(cols, model.shape))
    return out


def null_runs(app: str, seeds: int, out_path: str, sampling: str) -> None:
    """The test on ``seeds`` outputs drawn from the Φ-only model (see the module docstring)."""

    from sdgov.audits.privacy.beyond_phi import beyond_phi_test

    attrs, cliques, model, tables = null_model(app)
    policy = RiskPolicy().beyond_phi
    out: dict = {"command": "python " + shlex.join(sys.argv), "app": app, "sampling": sampling, "runs": []}
    for seed in range(seeds):
        cpu = time.process_time()
        sets = null_sets(model, attrs, sampling, seed)
        r = beyond_phi_test(sets, list(model.shape), attrs, cliques, tables, 199, seed)
        row = {"seed": seed, "p_value": r.p_value, "statistic": round(r.statistic, 2), "worst_table": r.worst_table}
        row["cpu_seconds"] = round(time.process_time() - cpu, 1)
        print(json.dumps(row), flush=True)
        out["runs"].append(row)
        n = len(out["runs"])
        warn = sum(x["p_value"] <= policy.warn_alpha for x in out["runs"])
        fail = sum(x["p_value"] <= policy.fail_alpha for x in out["runs"])
        out["table"] = {"n": n, "not_pass": warn, "fail": fail, "not_pass_ci95": cp(warn, n), "fail_ci95": cp(fail, n)}
        Path(out_path).parent.mkdir(parents=True, exist_ok=True)
        Path(out_path).write_text(json.dumps(out, indent=1))
    print(json.dumps(out["table"]))


def profile(app: str, sampling: str) -> dict:
    """CPU seconds of each step of the check on one app (see the module docstring); printed and returned."""
    from sdgov.audits.privacy import beyond_phi as bp

    attrs, cliques, model, tables = null_model(app)
    phi = [tuple(sorted(attrs.index(a) for a in c)) for c in cliques]
    shape, cells = model.shape, model.size
    out: dict = {"app": app, "cells": cells, "tables": len(tables), "sampling": sampling, "cpu_seconds": {}}
    t = time.process_time()

    def lap(key: str) -> None:
        nonlocal t
        now = time.process_time()
        out["cpu_seconds"].setdefault(key, []).append(round(now - t, 3))
        t = now

    sets = null_sets(model, attrs, sampling, 0)
    lap("output_draw")
    pooled = sum(np.bincount(k, minlength=cells) for k in sets).reshape(shape).astype(np.float64)
    p_hat = bp.phi_projection(pooled, phi)
    lap("ipf_of_the_output")
    pinv = bp.fisher_pinv(p_hat, phi)
    lap("fisher_information")
    for k in sets:
        have = bp.Margins(
            bp.non_phi_residual(np.bincount(k, minlength=cells).reshape(shape).astype(float), p_hat, phi, pinv)
        )
        for tb in tables:
            have(tb)
        lap("set_residual")
    t0 = time.process_time()
    bp.beyond_phi_test(sets, list(shape), attrs, cliques, tables, 199, 0)
    out["whole_check"] = round(time.process_time() - t0, 1)
    print(json.dumps(out, indent=1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--summarise", nargs="*", help="merge these result files' runs into --out (no audits run)")
    ap.add_argument("--apps", default="app1,app2")
    ap.add_argument("--generators", default="honest,blend5")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "build" / "privacy-beyond-phi.json"))
    ap.add_argument(
        "--params",
        type=json.loads,
        default={},
        help="generator parameters over the defaults, e.g. '{\"iterations\": 30}' (App 3's IPF fits run every one "
        "of the spec's 1,000 sweeps: noisy margins never agree; any IPF iterate lies in the Φ family all the same)",
    )
    ap.add_argument("--profile", help="time the check's steps on this app (no fit; see the module docstring)")
    ap.add_argument("--sampling", default="round", choices=["round", "iid"], help="--profile, --null: the sampler")
    ap.add_argument("--null", help="the test's calibration on outputs drawn from this app's Φ-only model")
    args = ap.parse_args()
    if args.null:
        null_runs(args.null, args.seeds, args.out, args.sampling)
        return
    if args.profile:
        profile(args.profile, args.sampling)
        return
    if args.summarise:
        files = [json.loads(Path(f).read_text()) for f in args.summarise]
        runs_all = [r for f in files for r in f["runs"]]
        merged = {"commands": [f["command"] for f in files], "table": summarise(runs_all), "runs": runs_all}
        Path(args.out).write_text(json.dumps(merged, indent=1))
        print(json.dumps(merged["table"], indent=1))
        return
    runs: list[dict] = []
    out: dict = {"command": "python " + shlex.join(sys.argv), "runs": runs, "table": []}
    policy = RiskPolicy()
    for app in args.apps.split(","):
        spec, data, params = app_inputs(app)
        params = {**(params or {}), **args.params} or None
        for short in args.generators.split(","):
            label = SHORT[short]
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                t, cpu = time.perf_counter(), time.process_time()
                r = audit_spec_privacy(
                    spec,
                    GENERATORS[label],
                    RiskSettings(seed=seed),
                    policy,
                    data_path=data,
                    params=params,
                    parts=("beyond_phi",),
                )
                b = r.beyond_phi
                assert b is not None and b.ran, b
                row = {
                    "app": app,
                    "generator": label,
                    "seed": seed,
                    "p_value": b.p_value,
                    "statistic": round(b.statistic, 2),
                    "worst_table": b.worst_table,
                    "level": next(c.level for c in r.checks if c.name == "interactions beyond Φ"),
                    "params": args.params,
                    "seconds": round(time.perf_counter() - t, 1),
                    "cpu_seconds": round(time.process_time() - cpu, 1),
                    "check_cpu_seconds": round(r.timing["beyond_phi_cpu"], 1),  # fit and sample included
                }
                print(json.dumps(row), flush=True)
                runs.append(row)
                out["table"] = summarise(runs)
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out["table"], indent=1), file=sys.stderr)


if __name__ == "__main__":
    main()
