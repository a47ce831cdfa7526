r"""The utility report: generic and task-specific measures for the synthetic data and two baselines.

:func:`build_report` runs every registered :class:`~sdgov.utility.metric.Metric` (:data:`METRICS`) and every
declared task into one :class:`UtilityReport`; :func:`render_html` turns it into a self-contained HTML page
(figures inline as SVG, template ``cards/utility_report.html.j2``); :func:`write_report` writes the summary the
card shows, the JSON and the HTML side by side. Computed by the data controller on the confidential data:
none of it is covered by the differential-privacy guarantee.

The records come as :class:`~sdgov.engines.recordset.RecordSet`\ s, so the report runs at any scale: every table it
compares (Φ, all one- and two-way tables, the tasks' tables) is an exact count over every record, counted for all
tables at once before any metric runs; the models (propensity scores, task models, the baselines) see all the
records up to ``sample_rows``, and a uniform sample of that many beyond.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sdgov.base.hashing import sha256_json
from sdgov.base.model import Frozen
from sdgov.data.schema import Schema
from sdgov.engines.recordset import FrameRecords, RecordSet, records_of
from sdgov.utility import baselines, bivariate, fitness
from sdgov.utility import tasks as tasks_mod
from sdgov.utility.metric import Metric, MetricContext, ReportSettings
from sdgov.utility.registry import METRICS
from sdgov.utility.summary import UtilitySummary, part_summaries, summary_tables

if TYPE_CHECKING:
    from sdgov.agreement.spec import AgreedSplit

REPORT_VERSION = "1"


THOROUGH = ReportSettings()  # the CLI's 'sdgov report' default
FAST = ReportSettings(
    specks_seeds=20,
    baseline_specks_seeds=10,
    specks_rows=1500,
    specks_trees=20,
    wasserstein_replicates=50,
    pmse_rows=10000,
)  # the release flow


class UtilityReport(Frozen):
    """Every measure for the synthetic data and the baselines, as written to ``utility_report.json``.

    ``datasets`` maps each dataset (synthetic, and the baselines) to its row count, one result per registered
    metric (keyed by the metric's name) and its task results; ``metrics`` is the one-line overview of each.
    """

    report_version: str
    spec_name: str | None = None
    agreement_sha256: str | None = None
    synthetic_sha256: str | None = None
    synthetic_file: str | None = None
    attributes: list[str]
    phi: list[list[str]]
    in_phi: list[list[bool]]
    real_association: list[list[float | None]]
    tasks: list[dict[str, Any]]
    tasks_sha256: str
    rows: dict[str, int]
    settings: dict[str, Any]
    datasets: dict[str, dict[str, Any]]
    metrics: list[dict[str, Any]]
    verdicts: list[dict[str, Any]]
    fitness: dict[str, Any]
    note: str
    radar: dict[str, Any]
    seconds: dict[str, float]
    parts: dict[str, UtilitySummary] | None = None  # a split synthesis: each part against its own real records

    @property
    def summary(self) -> UtilitySummary:
        """The synthetic data's marginal errors: the summary the generator card shows (``utility.json``)."""
        return UtilitySummary.model_validate(self.datasets["synthetic"]["marginals"])

    def as_json(self) -> dict[str, Any]:
        """The report as JSON types; identifying fields only when they were given."""
        return self.model_dump(mode="json", include=self._given())

    def _given(self) -> set[str]:
        optional = {"spec_name", "agreement_sha256", "synthetic_sha256", "synthetic_file", "parts"}
        return {k for k in type(self).model_fields if k not in optional or getattr(self, k) is not None}


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


def radar_data(scores: dict[str, dict[str, float | None]], tasks: dict[str, list[dict]]) -> dict:
    """The radar chart: each metric's axes (in registry order), then one axis per declared task."""
    first = next(iter(scores))
    axes = list(scores[first]) + [f"task: {t['name']}" for t in tasks[first]]
    series = {
        name: [None if x is None else round(float(x), 4) for x in [*v.values(), *map(task_score, tasks[name])]]
        for name, v in scores.items()
    }
    return {
        "axes": axes,
        "series": series,
        "note": "every axis in [0, 1], 1 = as the real data; the pMSE ratio (≈ 1 when indistinguishable from a "
        "random split) is scored 1 − log10(ratio) / 2, capped to [0, 1]; the Wasserstein score averages the "
        "columns, each 1 when its distance is within a random split's (95th percentile), else scored as pMSE; "
        "pairwise association is the mean B = 1 − |R − S| / 2",
    }


def build_report(
    real: pd.DataFrame | RecordSet,
    synth: pd.DataFrame | RecordSet,
    schema: Schema,
    attributes: list[str],
    cliques: list[tuple[str, ...]],
    task_specs: list | None = None,
    *,
    meta: dict | None = None,
    settings: ReportSettings = THOROUGH,
    metrics: tuple[Metric[Any], ...] = METRICS,
    by_part: AgreedSplit | None = None,
) -> UtilityReport:
    """Every metric and declared task for ``synth`` (and the baselines). Records are encoded cell indices: a
    DataFrame of them, or a record set (:mod:`sdgov.engines.recordset`) for files of any size. A split synthesis
    (``by_part``) adds each part's marginal errors against that part's real records (``parts``)."""
    t0 = time.perf_counter()
    task_specs = list(task_specs or [])
    attributes = list(attributes)
    cliques = [tuple(c) for c in cliques]
    real, synth = records_of(_only(real, attributes), schema), records_of(_only(synth, attributes), schema)
    tables = summary_tables(attributes, cliques) + [
        tasks_mod.table_attributes(t) for t in task_specs if t.kind in ("table", "gap")
    ]
    real.prefetch(tables)  # every exact table of the report: one scan of each file
    synth.prefetch(tables)
    real_sample, synth_sample = real.sample()[attributes], synth.sample()[attributes]
    split = tasks_mod.split_real(real_sample, settings.holdout, settings.seed)
    sets: dict[str, RecordSet] = {"synthetic": synth}
    if settings.baselines:
        rows = len(synth_sample)
        sets["independent"] = FrameRecords(
            baselines.independent_marginals(real, attributes, rows, settings.seed), schema
        )
        sets["bootstrap"] = FrameRecords(baselines.bootstrap(split.train, attributes, rows, settings.seed), schema)
    real_assoc = bivariate.association_matrix(real, schema, attributes)
    in_phi = bivariate.phi_pairs(attributes, cliques)
    ctx = MetricContext(real, schema, attributes, cliques, real_assoc, in_phi, settings)
    # the baselines' SPECKS over fewer seeds (a third of the report's CPU was their forests, issue 27)
    baseline_ctx = replace(
        ctx, settings=replace(settings, specks_seeds=min(settings.specks_seeds, settings.baseline_specks_seeds))
    )
    cache: dict[str, Any] = {}
    datasets, scores, lines, task_results, seconds = {}, {}, {}, {}, {}
    for name, data in sets.items():
        t1 = time.perf_counter()
        own = ctx if name == "synthetic" else baseline_ctx
        results = {m.name: m.compute(own, data) for m in metrics}
        task_results[name] = [
            tasks_mod.run_task(t, real, split, data, schema, cache, settings.seed) for t in task_specs
        ]
        datasets[name] = {"rows": data.rows, **{k: r.model_dump() for k, r in results.items()}}
        datasets[name]["tasks"] = task_results[name]
        scores[name] = {axis: v for m in metrics for axis, v in m.radar(results[m.name]).items()}
        lines[name] = {m.name: m.line(results[m.name]) for m in metrics}
        seconds[name] = round(time.perf_counter() - t1, 3)
    verdicts = fitness.task_verdicts(task_results)
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
            "real": real.rows,
            "real_train": len(split.train),
            "real_holdout": len(split.holdout),
            "synthetic": synth.rows,
            "real_sample": len(real_sample),  # the records the models see: all of them up to sample_rows
            "synthetic_sample": len(synth_sample),
        },
        "settings": asdict(settings),
        "datasets": datasets,
        "metrics": [
            {"name": m.name, "title": m.title, "lines": {k: v[m.name] for k, v in lines.items()}} for m in metrics
        ],
        "verdicts": verdicts,
        "fitness": fitness.statement(verdicts, generic_syn, attributes),
        "note": (
            "Computed by the data controller on the confidential data; not covered by the differential-privacy "
            "guarantee. Baselines are built from the real data and are never released."
        ),
        "radar": radar_data(scores, task_results),
    }
    if by_part is not None:
        report["parts"] = {n: u.model_dump(mode="json") for n, u in part_summaries(real, synth, by_part).items()}
    seconds["total"] = round(time.perf_counter() - t0, 3)
    report["seconds"] = seconds
    return UtilityReport.model_validate(_clean(report))


def _only(data: pd.DataFrame | RecordSet, attributes: list[str]) -> pd.DataFrame | RecordSet:
    """A DataFrame's agreed attributes, in order (a record set is read by column name already)."""
    return data[attributes].reset_index(drop=True) if isinstance(data, pd.DataFrame) else data


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
    """The report's SVG figures from its JSON form: the radar, the univariate bars, the synthetic data's B heatmap and
    the SPECKS boxes."""
    from sdgov.utility import plots

    ds = report["datasets"]
    return {
        "radar": plots.radar(report["radar"]),
        "univariate": plots.univariate_bars(ds),
        "heatmap": plots.heatmap(ds["synthetic"]["bivariate"]["B"], report["attributes"], report["in_phi"]),
        "specks": plots.specks_box(ds),
    }


def render_report_html(report: UtilityReport) -> str:
    """The utility report as one HTML page (``utility_report.html.j2`` with its SVG figures); a missing number shows as
    —."""
    from sdgov.cards import environment

    r = report.as_json()
    env = environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["g"] = lambda x, p=3: "—" if x is None else (f"{x:.{p}g}" if isinstance(x, float) else str(x))
    env.filters["f"] = lambda x, p=3: "—" if x is None else f"{x:.{p}f}"
    return env.get_template("utility_report.html.j2").render(r=r, fig=figures(r))


@dataclass(frozen=True)
class ReportFiles:
    summary: Path  # utility.json: the marginal-error summary (the card's utility section)
    json: Path  # utility_report.json: every measure
    html: Path  # utility_report.html: the same, with plots, self-contained


def write_report(report: UtilityReport, out_dir: str | Path) -> ReportFiles:
    """Write ``utility.json``, ``utility_report.json`` and ``utility_report.html`` (atomically) into ``out_dir``."""
    import json

    from sdgov.base.atomic import atomic_write_text
    from sdgov.base.hashing import write_json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = ReportFiles(
        summary=out / "utility.json", json=out / "utility_report.json", html=out / "utility_report.html"
    )
    write_json(files.summary, report.summary.model_dump(mode="json"))
    atomic_write_text(files.json, json.dumps(report.as_json(), indent=1, ensure_ascii=False) + "\n")
    atomic_write_text(files.html, render_report_html(report))
    return files
