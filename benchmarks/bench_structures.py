"""Structural zeros and lookups on the census extract: what they cost and what they prevent, in one run.

App 3's Φ (all 2-way marginals over Health, Hours worked per week, Age, Marital Status, Occupation, Industry,
Region) at σ = 10, with the public variable list's zeros (a person aged 0 to 15 has no economic-activity-like
code: hours worked, occupation, industry) and Country looked up from Region. The same noisy marginals are fitted
twice with Private-PGM — without and with the zeros — and each model sampled; reported: fit and sampling
seconds (ratios in the same run), and how many synthetic records fall in a structural zero (the impossible
records the zeros remove).

    python benchmarks/bench_structures.py --rows 1000000 --iterations 500 --out benchmarks/results/structures.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
CENSUS = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"
sys.path.insert(0, str(REPO))

from sdgov.agreement.resolve import resolve  # noqa: E402
from sdgov.agreement.spec import ReleaseSpec  # noqa: E402
from sdgov.budget.accounting import plan_privacy  # noqa: E402
from sdgov.data.schema import Schema  # noqa: E402
from sdgov.engines import load_encoded  # noqa: E402
from sdgov.generators.registry import generator  # noqa: E402
from sdgov.generators.sampler import sample_to_parquet  # noqa: E402
from sdgov.measurement.marginals import measure_agreement  # noqa: E402

APP3 = ["Health", "Hours worked per week", "Age", "Marital Status", "Occupation", "Industry", "Region"]
ZEROS = {"Hours worked per week": [1, 2, 3, 4], "Occupation": list(range(1, 10)), "Industry": list(range(1, 13))}


def structured_schema() -> Schema:
    raw = yaml.safe_load((REPO / "examples/census2011/schema.yaml").read_text())
    regions = [c["code"] for c in raw["columns"][0]["categories"]]
    raw["columns"].append(
        {
            "name": "Country",
            "categories": [{"code": "E92000001", "label": "England"}, {"code": "W92000004", "label": "Wales"}],
        }
    )
    raw["lookups"] = [
        {
            "column": "Country",
            "source": "Region",
            "table": {r: r if r.startswith("W") else "E92000001" for r in regions},
        }
    ]
    industry = next(c for c in raw["columns"] if c["name"] == "Industry")
    ZEROS["Industry"] = [c["code"] for c in industry["categories"] if c["code"] != -9]
    raw["structural_zeros"] = [{"cells": {"Age": [1], col: codes}} for col, codes in ZEROS.items()]
    return Schema.model_validate(raw)


def impossible(df: pd.DataFrame) -> int:
    child = df["Age"] == 1
    return int(sum((child & df[c].isin(codes)).sum() for c, codes in ZEROS.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--iterations", type=int, default=500)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    schema = structured_schema()
    codes = load_encoded(CENSUS, schema)
    spec = ReleaseSpec.model_validate(
        {
            "name": "bench-structures",
            "dataset": {"name": "census", "path": str(CENSUS)},
            "schema": "schema.yaml",
            "phi": {"all_kway": [{"k": 2, "attributes": APP3}]},
            "privacy": {"sigma": 10},
            "generator": {"name": "pgm", "iterations": args.iterations},
            "seed": 2011,
        }
    )
    ag = resolve(spec, schema)
    mset = measure_agreement(codes, schema, ag, plan_privacy(ag.privacy, ag.cliques), "bench")
    zeros = schema.zero_cells()
    plugin = generator("pgm")
    plain = schema.model_copy(update={"lookups": [], "structural_zeros": []})
    load_before = os.getloadavg()
    result: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, zs, sch in (("without_structures", [], plain), ("with_structures", zeros, schema)):
            t0 = time.perf_counter()
            model = plugin.fit_model(mset, ag.generator, zs)
            fit = time.perf_counter() - t0
            path = Path(tmp) / f"{label}.parquet"
            t0 = time.perf_counter()
            sample_to_parquet(model, sch, args.rows, 2011, path)
            sample = time.perf_counter() - t0
            df = pd.read_parquet(path)
            result[label] = {
                "fit_seconds": round(fit, 3),
                "sample_seconds": round(sample, 3),
                "rows": len(df),
                "records_in_a_structural_zero": impossible(df),
                "children": int((df["Age"] == 1).sum()),
                "model_cells": int(sum(np.prod(t.shape) for t in model.marginals)),
                "country_consistent": bool(
                    "Country" not in df
                    or (df["Country"] == df["Region"].where(df["Region"].str.startswith("W"), "E92000001")).all()
                ),
            }
    w, s = result["with_structures"], result["without_structures"]
    out = {
        "benchmark": "structural zeros and lookups (benchmarks/bench_structures.py)",
        "command": "python " + " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "data": "ONS 2011 Census Microdata Teaching File extract, 50,000 rows "
        "(Source: Office for National Statistics, OGL v1.0)",
        "phi": "App 3: all 2-way over " + ", ".join(APP3) + "; σ = 10",
        "zeros": {c: f"Age 0-15 × {c} ∈ {v}" for c, v in ZEROS.items()},
        "real_children": int((codes["Age"] == 0).sum()),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
        },
        "results": result,
        "ratios": {
            "fit_with_over_without": round(w["fit_seconds"] / s["fit_seconds"], 3),
            "sample_with_over_without": round(w["sample_seconds"] / s["sample_seconds"], 3),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
