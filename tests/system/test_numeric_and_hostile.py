"""One real release (Prefect flow) of a schema with binned numeric columns and hostile strings in every field.

Issue 12, "numeric columns end to end": a binned numeric column used to fail *after* the spend (the synthetic file
held bin labels, the utility stage read them as numbers). Here three numeric columns, one per release rule
(``uniform``, ``midpoint``, ``label``), one with an open-ended top bin (``.inf``), go through every stage, and
the released file holds numbers (or labels) inside their bins, as the schema and the card say.

Issue 11 item 7, "hostile strings": the spec's description, the schema's labels and bin labels, the standing
approval's names and description hold ``<script>``, ``onerror=``, ``"><svg onload=…>``, ``{{7*7}}`` and a
mathtext trap ``$x^{$``; the card, the utility report and the audit-trail HTML must render them inert.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sdgov.commands import main
from sdgov.registry.log import Registry
from tests.conftest import init_registry

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", '"><svg onload=alert(1)>', "{{7*7}} $x^{$"]
RAW = ["<script>alert(1)", "<img src=x onerror", "<svg onload", "onerror=alert(1)>"]  # must never appear unescaped
ROWS = 1500
AGE = [0, 18, 35, 65, float("inf")]
HOURS = [0, 20, 40, 60]


def _inputs(d: Path) -> Path:
    d.mkdir(parents=True)
    schema = {
        "name": "numeric_hostile",
        "description": "made-up data " + HOSTILE[0],
        "identifiers": ["Person ID"],
        "columns": [
            {
                "name": "Region",
                "description": HOSTILE[1],
                "categories": [{"code": c, "label": h} for c, h in zip("NSEW", HOSTILE)],
            },
            {"name": "Age", "kind": "numeric", "bins": AGE, "release_as": "uniform", "description": HOSTILE[2]},
            {"name": "Hours", "kind": "numeric", "bins": HOURS, "release_as": "midpoint"},
            {
                "name": "Income",
                "kind": "numeric",
                "bins": [0, 1000, 5000, 20000],
                "bin_labels": [HOSTILE[0], HOSTILE[1], "high"],
            },
        ],
    }
    (d / "schema.yaml").write_text(yaml.safe_dump(schema, sort_keys=False, allow_unicode=True), encoding="utf-8")
    rng = np.random.default_rng(12)
    age = rng.integers(0, 95, ROWS)
    df = pd.DataFrame(
        {
            "Person ID": np.arange(ROWS),
            "Region": rng.choice(list("NSEW"), ROWS),
            "Age": age,
            "Hours": np.clip(age // 2 + rng.integers(0, 10, ROWS), 0, 59),
            "Income": rng.integers(0, 20000, ROWS),
        }
    )
    df.to_csv(d / "data.csv", index=False)
    spec = {
        "name": "numeric-hostile",
        "description": " ".join(HOSTILE),
        "dataset": {"name": "numeric_hostile", "path": "data.csv"},
        "schema": "schema.yaml",
        "phi": {"marginals": [["Region", "Age"], ["Age", "Hours"], ["Income"]]},
        "privacy": {"epsilon": 2.0},
        "generator": {"name": "ipf", "iterations": 50},
        "rows": ROWS - 100,  # not N: the policy refuses to publish the true record count
        "seed": 7,
        "approvals": "approvals.yaml",
        "model_card": {  # hostile text in every field the card shows
            "contact": HOSTILE[0],
            "data_controller": HOSTILE[1],
            "licence": HOSTILE[2],
            "intended_users": HOSTILE[3],
            "out_of_scope": [HOSTILE[0]],
            "review_by": "2027-01-01",
        },
    }
    (d / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    approvals = {
        "description": HOSTILE[3],
        "proposer": {"name": HOSTILE[0], "role": "analyst"},
        "agreement_approver": {"name": HOSTILE[1], "role": "controller"},
        "release_approver": {"name": HOSTILE[1], "role": "controller"},
    }
    (d / "approvals.yaml").write_text(yaml.safe_dump(approvals, sort_keys=False), encoding="utf-8")
    return d / "spec.yaml"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory, prefect_server: None) -> dict:
    from sdgov.flows.release import release_flow

    base = tmp_path_factory.mktemp("numeric-hostile")
    spec = _inputs(base / "inputs")
    root = init_registry(base / "registry")  # the controller's policy, adopted
    result = release_flow(spec_path=str(spec), registry_root=str(root))
    return {"result": result, "root": root, "base": base}


def test_numeric_columns_are_released_as_numbers_by_their_declared_rule(release: dict) -> None:
    released = Path(release["result"].path)
    df = pd.read_parquet(released / "synthetic.parquet")
    assert len(df) == ROWS - 100
    # uniform: numbers inside the bins, spread within them; the open-ended top bin releases its lower edge
    age = df["Age"].to_numpy()
    assert df["Age"].dtype.kind == "f" and np.isfinite(age).all()
    assert ((age >= 0) & (age <= 65)).all()
    assert np.unique(age[age < 65]).size > 50, "uniform within the bins, not one value per bin"
    assert (age == 65).any(), "the open-ended bin [65, ∞) is released as its lower edge"
    # midpoint: exactly the middle of each bin
    assert set(np.unique(df["Hours"])) <= {10.0, 30.0, 50.0}
    # label: the bin labels as text
    assert set(df["Income"].unique()) <= {HOSTILE[0], HOSTILE[1], "high"}
    card = json.loads(Path(release["result"].card_json).read_text(encoding="utf-8"))
    rules = {a["name"]: a["released_as"] for a in card["attributes"]}
    assert "uniformly" in rules["Age"] and "middle" in rules["Hours"] and "label" in rules["Income"]
    assert rules["Region"] == ""
    assert Registry(release["root"]).verify() == []


def test_utility_stage_reads_the_numeric_columns_back(release: dict) -> None:
    card = json.loads(Path(release["result"].card_json).read_text(encoding="utf-8"))
    measured = {tuple(p["attributes"]): p["tvd"] for p in card["phi"]}
    assert set(measured) == {("Region", "Age"), ("Age", "Hours"), ("Income",)}
    assert all(t is not None and 0 <= t < 0.5 for t in measured.values()), measured


def test_hostile_strings_are_inert_in_every_html_page(release: dict) -> None:
    released = Path(release["result"].path)
    trail_html = release["base"] / "trail.html"
    assert main(["trail", "--root", str(release["root"]), "--html", str(trail_html)]) == 0
    pages = {
        "card.html": released / "card.html",
        "utility_report.html": next((release["root"] / "runs").rglob("utility_report.html")),
        "evidence.html": next((release["root"] / "runs").rglob("evidence/evidence.html")),
        "trail.html": trail_html,
    }
    for name, path in pages.items():
        html = path.read_text(encoding="utf-8")
        for raw in RAW:
            assert raw not in html, f"{name}: raw {raw!r} from user input"
        assert "<script" not in html.lower(), f"{name} holds a script element"
    card = pages["card.html"].read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in card, "the description is shown, escaped"
    assert "{{7*7}}" in card, "user text is never evaluated as a template"


def test_a_run_refused_inside_the_flow_prints_one_line_and_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A refusal raised in a stage (here the ledger's, as for a concurrent run over budget) reaches the user as
    the CLI's one ``sdgov: error:`` line; Prefect's ~70 lines of traceback for it are dropped."""
    from sdgov.base.errors import BudgetError
    from sdgov.tasks import measure as measure_stage

    def refuse(*args: object, **kwargs: object) -> None:
        raise BudgetError("another run spent the remaining budget", "budgets.yaml", "wait for the controller")

    monkeypatch.setattr(measure_stage, "measure_once", refuse)
    spec = _inputs(tmp_path / "inputs")
    root = init_registry(tmp_path / "registry")
    capfd.readouterr()
    rc = main(["release", "--spec", str(spec), "--root", str(root)])
    err = capfd.readouterr().err
    assert rc == 2
    assert "Traceback" not in err, err[-3000:]
    errors = [ln for ln in err.splitlines() if "sdgov: error:" in ln]
    assert errors == [
        "sdgov: error: budgets.yaml: another run spent the remaining budget — fix: wait for the controller"
    ]
