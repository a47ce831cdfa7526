"""The utility report: generic and task-specific measures for the synthetic data and two baselines.

:func:`build_report` computes everything into one JSON-able dict; :func:`render_html` turns it into a
self-contained HTML page (figures inline as SVG, template ``cards/utility_report.html.j2``);
:func:`write_report` writes both side by side. Computed by the data controller on the confidential data:
none of it is covered by the differential-privacy guarantee.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdgov.hashing import sha256_json
from sdgov.schema import Schema
from sdgov.utility import baselines, bivariate, distinguish, fitness, univariate, wasserstein
from sdgov.utility import tasks as tasks_mod

REPORT_VERSION = "1"


@dataclass(frozen=True)
class ReportSettings:
    specks_seeds: int = 20
    specks_rows: int = 3000  # records per side in each SPECKS fit
    specks_trees: int = 30
    wasserstein_replicates: int = 100
    pmse_rows: int = 20000  # records per side for the CART propensity model
    pmse_permutations: int = 5
    holdout: float = 0.2  # share of the real records held out for task models
    baselines: bool = True
    seed: int = 0


FAST = ReportSettings(
    specks_seeds=20, specks_rows=1500, specks_trees=20, wasserstein_replicates=50, pmse_rows=10000
)  # the release flow


def generic_measures(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    attributes: list[str],
    real_assoc: np.ndarray,
    in_phi: np.ndarray,
    st: ReportSettings,
) -> dict:
    return {
        "rows": len(synth),
        "univariate": univariate.univariate(real, synth, schema, attributes),
        "bivariate": bivariate.bivariate(real_assoc, synth, schema, attributes, in_phi),
        "pmse": distinguish.pmse(real, synth, attributes, st.pmse_rows, st.pmse_permutations, seed=st.seed),
        "specks": distinguish.specks(
            real, synth, attributes, st.specks_seeds, st.specks_rows, st.specks_trees, st.seed
        ),
        "wasserstein": wasserstein.wasserstein(real, synth, schema, attributes, st.wasserstein_replicates, st.seed),
    }


def task_score(t: dict) -> float:
    """One number in [0, 1] per task for the radar chart (1 = as the real data answers it)."""
    if t["kind"] == "table":
        return max(0.0, 1 - t["tvd"])
    if t["kind"] == "gap":
        size = float(np.sqrt(np.mean([c["real"] ** 2 for c in t["cells"]]))) if t["cells"] else 1.0
        return float(max(0.0, 1 - t["rmse_pp"] / max(size, 1e-9)))
    if t["kind"] == "regression":
        return float(min(1.0, t["accuracy_train_on_synthetic"] / max(t["accuracy_train_on_real"], 1e-9)))
    acc = min(1.0, t["accuracy_synthetic_model_real_holdout"] / max(t["accuracy_real_model_real_holdout"], 1e-9))
    return float(0.5 * acc + 0.5 * t["jaro"])


def ratio_score(ratio: float | None) -> float | None:
    """A ratio to a null (≈ 1 = indistinguishable) on [0, 1]: 1 up to ratio 1, then 1 − log10(ratio) / 2 (0 at 100)."""
    if ratio is None:
        return None
    return float(1 - min(1.0, np.log10(max(ratio, 1.0)) / 2))


def radar_data(datasets: dict[str, dict]) -> dict:
    axes = [
        "univariate similarity",
        "coverage",
        "bivariate 1 − |R − S|",
        "1 − SPECKS",
        "pMSE ratio score",
        "Wasserstein ratio score",
    ]
    first = next(iter(datasets.values()))
    axes += [f"task: {t['name']}" for t in first["tasks"]]
    series = {}
    for name, d in datasets.items():
        g = d
        v = [
            g["univariate"]["mean_similarity"],
            g["univariate"]["mean_coverage"],
            2 * g["bivariate"]["mean_B"] - 1 if g["bivariate"]["mean_B"] is not None else None,
            1 - g["specks"]["median_ks"],
            ratio_score(g["pmse"]["ratio"]),
            ratio_score(g["wasserstein"]["mean_ratio"]),
        ]
        v += [task_score(t) for t in d["tasks"]]
        series[name] = [None if x is None else round(float(x), 4) for x in v]
    return {
        "axes": axes,
        "series": series,
        "note": "every axis in [0, 1], 1 = as the real data; the pMSE and Wasserstein ratios (≈ 1 when "
        "indistinguishable from a random split) are scored 1 − log10(ratio) / 2, capped to [0, 1]",
    }


def build_report(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    attributes: list[str],
    cliques: list[tuple[str, ...]],
    task_specs: list | None = None,
    *,
    meta: dict | None = None,
    settings: ReportSettings = ReportSettings(),
) -> dict:
    """Every measure for ``synth`` (and the baselines), as one JSON-able dict. Inputs are encoded cell indices."""
    t0 = time.perf_counter()
    task_specs = list(task_specs or [])
    attributes = list(attributes)
    real = real[attributes].reset_index(drop=True)
    synth = synth[attributes].reset_index(drop=True)
    split = tasks_mod.split_real(real, settings.holdout, settings.seed)
    sets = {"synthetic": synth}
    if settings.baselines:
        sets["independent"] = baselines.independent_marginals(real, schema, attributes, len(synth), settings.seed)
        sets["bootstrap"] = baselines.bootstrap(split.train, attributes, len(synth), settings.seed)
    real_assoc = bivariate.association_matrix(real, schema, attributes)
    in_phi = bivariate.phi_pairs(attributes, cliques)
    cache: dict[str, Any] = {}
    datasets, seconds = {}, {}
    for name, data in sets.items():
        t1 = time.perf_counter()
        d = generic_measures(real, data, schema, attributes, real_assoc, in_phi, settings)
        d["tasks"] = [tasks_mod.run_task(t, split, data, schema, cache, settings.seed) for t in task_specs]
        datasets[name] = d
        seconds[name] = round(time.perf_counter() - t1, 3)
    verdicts = fitness.task_verdicts({k: v["tasks"] for k, v in datasets.items()})
    generic_syn = {
        "bivariate": datasets["synthetic"]["bivariate"],
        "in_phi": in_phi,
        "specks": datasets["synthetic"]["specks"],
    }
    report = {
        "report_version": REPORT_VERSION,
        **(meta or {}),
        "attributes": attributes,
        "phi": [list(c) for c in cliques],
        "in_phi": in_phi.tolist(),
        "real_association": real_assoc.round(6).tolist(),
        "tasks": [t.model_dump(mode="json") for t in task_specs],
        "tasks_sha256": sha256_json([t.model_dump(mode="json") for t in task_specs]),
        "rows": {
            "real": len(real),
            "real_train": len(split.train),
            "real_holdout": len(split.holdout),
            "synthetic": len(synth),
        },
        "settings": asdict(settings),
        "datasets": datasets,
        "verdicts": verdicts,
        "fitness": fitness.statement(verdicts, generic_syn, attributes),
        "note": (
            "Computed by the data controller on the confidential data; not covered by the differential-privacy "
            "guarantee. Baselines are built from the real data and are never released."
        ),
    }
    report["radar"] = radar_data(datasets)
    seconds["total"] = round(time.perf_counter() - t0, 3)
    report["seconds"] = seconds
    return _clean(report)


def _clean(x: Any) -> Any:
    """Plain JSON types; floats rounded to 6 significant decimals; inf/nan → None."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return None if not np.isfinite(x) else round(float(x), 6)
    return x


# ------------------------------------------------------------------------------------------------ render


def figures(report: dict) -> dict[str, str]:
    from sdgov.utility import plots

    ds = report["datasets"]
    return {
        "radar": plots.radar(report["radar"]),
        "univariate": plots.univariate_bars(ds),
        "heatmap": plots.heatmap(ds["synthetic"]["bivariate"]["B"], report["attributes"], report["in_phi"]),
        "specks": plots.specks_box(ds),
    }


def render_html(report: dict) -> str:
    from sdgov.cards import environment

    env = environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["g"] = lambda x, p=3: "—" if x is None else (f"{x:.{p}g}" if isinstance(x, float) else str(x))
    env.filters["f"] = lambda x, p=3: "—" if x is None else f"{x:.{p}f}"
    return env.get_template("utility_report.html.j2").render(r=report, fig=figures(report))


def write_report(report: dict, out_dir: str | Path, stem: str = "utility_report") -> tuple[Path, Path]:
    """Write ``<stem>.json`` and ``<stem>.html`` (atomically) into ``out_dir``; return their paths."""
    import json

    from sdgov.atomic import atomic_write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    j, h = out / f"{stem}.json", out / f"{stem}.html"
    atomic_write_text(j, json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    atomic_write_text(h, render_html(report))
    return j, h
