"""Issue 14: the public card publishes only what is public or differentially private.

One real release of the demo with both pre-registered audits (so the evidence holds every kind of confidential
figure: real record count, distances to the real tables, fitness figures, audit details, privacy evidence). Every
figure of the controller's evidence report is rendered the ways a template could print it, and none may appear in
the published card (HTML, Markdown, JSON) — unless it is also a public figure: a number of the published
agreement, privacy plan, ledger or model, or a card figure this test recomputes from the published ψ and synthetic
data. The same search must find those figures in the evidence report, so the test can fail.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from sdgov.registry.log import Registry

NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
NOT_FIGURES = {"seconds", "seed", "seeds", "settings", "generator", "policy", "K", "rows", "alpha", "canaries"} | {
    "name",
    "title",
    "created",
}
"""Keys of the evidence that hold timings, pre-registered settings (public in the agreement) or labels (a check's
name, a section's title, the date), not figures."""
SVG = re.compile(r"<svg.*?</svg>", re.S)
"""Figures are drawn as paths (``svg.fonttype = path``): an SVG's numbers are coordinates, not printed figures."""


def significant(token: str) -> int:
    """How many significant digits a printed number has (short numbers are too common to mean anything)."""
    mantissa = token.lower().split("e")[0].replace(",", "").lstrip("+-").replace(".", "").lstrip("0")
    return len(mantissa)


def renderings(x: float) -> set[str]:
    """The ways a template or an f-string prints ``x``."""
    if isinstance(x, bool) or not math.isfinite(x):
        return set()
    out = {repr(x), f"{x:.3g}", f"{x:.4g}", f"{x:.6g}", f"{x:.2f}", f"{x:.3f}", f"{x:.4f}"}
    if float(x).is_integer():
        out |= {str(int(x)), f"{int(x):,}"}
    return {s for s in out if significant(s) >= 3}


def figures(obj: Any, key: str = "", skip: frozenset[str] = frozenset()) -> set[str]:
    """Every number in a JSON value, as its renderings; numbers inside strings as they were printed. Values under
    the keys in ``skip`` are left out, and always hashes and SVG figures."""
    if key in skip or key.endswith("_svg") or key.endswith("sha256"):
        return set()
    if isinstance(obj, dict):
        return set().union(*(figures(v, k, skip) for k, v in obj.items())) if obj else set()
    if isinstance(obj, list):
        return set().union(*(figures(v, key, skip) for v in obj)) if obj else set()
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return renderings(obj)
    if isinstance(obj, str):
        return {t for t in NUMBER.findall(obj) if significant(t) >= 3}
    return set()


DATES = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?")
"""Dates and times (when the card was signed, until when an approval holds) are not figures."""
CHANCE_DIGITS = 4
"""The leak check reads figures of at least this many significant digits. Shorter ones recur by chance: a public,
noise-dependent figure of the card and a figure of the evidence were both 0.333 in one run and both 0.999 in
another, so a check on 3 digits fails a few runs in a hundred on a card that leaks nothing."""


def printed(text: str) -> set[str]:
    return set(NUMBER.findall(DATES.sub("", SVG.sub("", text))))


def test_the_public_card_holds_no_figure_computed_on_the_confidential_data(released_with_audits):
    # the shared release: 3,000 real records, 2,500 synthetic rows, so the real count must stay unpublished
    result, root, spec = (released_with_audits[k] for k in ("result", "root", "spec"))
    assert yaml.safe_load(spec.read_text())["rows"] == 2500
    [run_dir] = (root / "runs").iterdir()
    evidence = json.loads((run_dir / "evidence" / "evidence.json").read_text())
    assert evidence["real_rows"] == 3000
    assert_card_is_public(Path(result.path), run_dir, spec.parent / "schema.yaml")
    assert Registry(root).verify() == []


def assert_card_is_public(released: Path, run_dir: Path, schema_file: Path) -> None:
    """No figure of the evidence report in the published card, except public ones; the evidence is not published."""
    from sdgov.agreement.accounting import PrivacyPlan, epsilon_pld
    from sdgov.data.encoding import encode
    from sdgov.data.schema import load_schema
    from sdgov.engines.recordset import FrameRecords
    from sdgov.measurement.marginals import MeasurementSet
    from sdgov.reporting.card import noisy_tvd

    evidence = json.loads((run_dir / "evidence" / "evidence.json").read_text())
    # what is public: the published artifacts, the schema's table sizes, and the card's own figures recomputed
    # from ψ and the synthetic data
    public: set[str] = set()
    for name in ("agreement", "privacy_plan", "budget", "model_info"):
        public |= figures(json.loads((released / "artifacts" / f"{name}.json").read_text()))
    card = json.loads((released / "card.json").read_text())
    mset = MeasurementSet.model_validate_json((released / "artifacts" / "measurements.json").read_text())
    plan = PrivacyPlan.model_validate_json((released / "artifacts" / "privacy_plan.json").read_text())
    schema = load_schema(schema_file)
    attrs = mset.attributes
    tables = [m.clique for m in mset.measurements] + [(a,) for a in attrs]
    tables += [(a, b) for i, a in enumerate(attrs) for b in attrs[i + 1 :]]
    for t in tables:
        public |= renderings(schema.cells(t))
    synthetic = encode(pd.read_parquet(released / "synthetic.parquet"), schema, columns=attrs)
    tvd = noisy_tvd(mset, FrameRecords(synthetic, schema))
    assert {(p.get("part"), tuple(p["attributes"])): p["tvd"] for p in card["phi"]} == tvd
    assert card["dataset"]["noisy_rows"] == round(mset.noisy_total())
    assert card["epsilon_pld"] == epsilon_pld(plan)
    for x in [*tvd.values(), card["dataset"]["noisy_rows"], card["epsilon_pld"], card["synthetic"]["rows"]]:
        public |= renderings(x)

    confidential = figures(evidence, skip=frozenset(NOT_FIGURES)) - public
    real = evidence["real_rows"]
    # the real record count is confidential, and the search must find it, unless the card's noisy count happens to
    # round to it (a few runs in a hundred: the noise on the total is a few records), which makes it public
    real_is_public = str(real) in public
    assert real_is_public or (str(real) in confidential and f"{real:,}" in confidential)
    assert len(confidential) > 100, len(confidential)
    found_in_evidence = confidential & printed((run_dir / "evidence" / "evidence.html").read_text())
    assert len(found_in_evidence) > 50, "the search finds the figures where they are printed"
    telling = {t for t in confidential if significant(t) >= CHANCE_DIGITS}
    assert (real_is_public or str(real) in telling) and len(telling) > 50, len(telling)
    for name in ("card.html", "card.md", "card.json"):
        leaked = telling & printed((released / name).read_text())
        assert not leaked, f"{name} publishes figures computed on the confidential data: {sorted(leaked)[:20]}"

    # the evidence is the controller's: beside the run, never in the release
    files = json.loads((released / "manifest.json").read_text())["files"]
    assert not any("evidence" in f or "utility" in f or "audit" in f or "privacy_risk" in f for f in files)
