"""docs/extending.md's worked utility metric, run from the doc itself: the example cannot drift from the code."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from sdgov.agreement.load import load_spec
from sdgov.engines import load_encoded
from sdgov.utility.registry import METRICS
from sdgov.utility.report import ReportSettings, build_report, render_report_html
from tests.conftest import make_demo_inputs

DOC = Path(__file__).resolve().parents[3] / "docs" / "extending.md"
TINY = ReportSettings(specks_seeds=2, specks_rows=300, specks_trees=5, wasserstein_replicates=5, pmse_permutations=1)


def section_code(heading: str) -> list[str]:
    """The ```python blocks of one '## ' section of the doc."""
    text = DOC.read_text(encoding="utf-8")
    body = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)


@pytest.fixture(scope="module")
def novelty_module() -> types.ModuleType:
    module = types.ModuleType("sdgov_doc_novelty")  # a real module: pydantic resolves its annotations there
    sys.modules[module.__name__] = module
    exec(compile(section_code("Adding a utility metric")[0], str(DOC), "exec"), module.__dict__)
    yield module
    del sys.modules[module.__name__]


def test_the_documented_metric_runs_in_the_report_against_both_baselines(novelty_module, tmp_path):
    loaded = load_spec(make_demo_inputs(tmp_path, rows=1500))
    real = load_encoded(loaded.data_path, loaded.schema_)
    attrs = loaded.agreement.attributes
    synth = real[attrs].sample(len(real), replace=True, random_state=1).reset_index(drop=True)
    metric = novelty_module.Novelty()
    rep = build_report(
        real, synth, loaded.schema_, attrs, loaded.agreement.cliques, settings=TINY, metrics=(*METRICS, metric)
    )
    novel = {name: d["novelty"]["novel_share"] for name, d in rep.datasets.items()}
    assert novel["synthetic"] == 0.0 and novel["bootstrap"] == 0.0, "resampled real records are never novel"
    assert 0.0 < novel["independent"] <= 1.0, "independent columns invent combinations"
    overview = next(m for m in rep.metrics if m["name"] == "novelty")
    assert overview["title"] == metric.title and overview["lines"]["synthetic"].startswith("0.0% novel")
    assert metric.title in render_report_html(rep)
