"""ONS structures end to end on the census extract (needs ../shared/data; skipped without it): lookups and
structural zeros declared in the schema, through the real release flow, asserted on the released synthetic data.

The schema is the census example's with public structure added: Country from Region by the ONS code table (a
lookup: never modelled, attached after sampling), and the public variable list's rule that a person aged 0 to 15
has no economic activity, hours worked or occupation code ("-9 No code required"): structural zeros.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import CENSUS, REPO, init_registry

pytestmark = pytest.mark.skipif(not CENSUS.exists(), reason="census extract not beside the repo (../shared/data)")

EXAMPLE = REPO / "examples" / "census2011"
ENGLAND, WALES = "E92000001", "W92000004"
CHILD = 1  # Age code 1: 0 to 15
ZEROS = {  # column → the codes a child cannot have (everything but -9 "No code required")
    "Economic Activity": [1, 2, 3, 4, 5, 6, 7, 8, 9],
    "Hours worked per week": [1, 2, 3, 4],
    "Occupation": [1, 2, 3, 4, 5, 6, 7, 8, 9],
}


def structured_schema() -> dict:
    raw = yaml.safe_load((EXAMPLE / "schema.yaml").read_text())
    regions = [c["code"] for c in raw["columns"][0]["categories"]]
    raw["columns"].append(
        {
            "name": "Country",
            "kind": "categorical",
            "description": "Country of usual residence (from Region, ONS geography codes)",
            "categories": [{"code": ENGLAND, "label": "England"}, {"code": WALES, "label": "Wales"}],
        }
    )
    raw["lookups"] = [
        {
            "column": "Country",
            "source": "Region",
            "description": "ONS register of geographic codes: every English region is in England",
            "table": {r: WALES if r == WALES else ENGLAND for r in regions},
        }
    ]
    raw["structural_zeros"] = [
        {"description": f"a person aged 0 to 15 has no {col.lower()} code", "cells": {"Age": [CHILD], col: codes}}
        for col, codes in ZEROS.items()
    ]
    return raw


def write_inputs(dest: Path, generator: str = "pgm") -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "schema.yaml").write_text(yaml.safe_dump(structured_schema(), sort_keys=False))
    shutil.copy(EXAMPLE / "approvals.yaml", dest / "approvals.yaml")
    spec = {
        "name": "census2011-structures",
        "dataset": {"name": "census2011_teaching", "path": str(CENSUS)},
        "schema": "schema.yaml",
        # Age × Occupation is not in Φ: only its structural zero links them (the model adds that table)
        "phi": {"all_kway": [{"k": 2, "attributes": ["Region", "Age", "Economic Activity", "Hours worked per week"]}]}
        | {"marginals": [["Economic Activity", "Occupation"], ["Sex", "Age"]]},
        "privacy": {"sigma": 10},
        "generator": {"name": generator, "iterations": 300},
        "rows": 50000,
        "seed": 2011,
        "approvals": "approvals.yaml",
        "model_card": yaml.safe_load((EXAMPLE / "app1.yaml").read_text())["model_card"],  # required for a release
    }
    (dest / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return dest / "spec.yaml"


def release(spec: Path, root: Path) -> dict:
    from sdgov.flows.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["release", "--spec", str(spec), "--root", str(root), "--json"])
    assert rc == 0
    return json.loads(buf.getvalue())


@pytest.fixture(scope="module")
def released(tmp_path_factory, prefect_server) -> dict:
    base = tmp_path_factory.mktemp("structures")
    out = release(write_inputs(base / "inputs"), init_registry(base / "registry"))
    path = Path(out["path"])
    return {
        "out": out,
        "synthetic": pd.read_parquet(path / "synthetic.parquet"),
        "card": json.loads((path / "card.json").read_text()),
    }


def test_lookup_column_is_attached_after_sampling_and_always_agrees_with_its_source(released):
    syn, card = released["synthetic"], released["card"]
    assert len(syn) == 50000
    assert "Country" in syn.columns
    expected = syn["Region"].map(lambda r: WALES if r == WALES else ENGLAND)
    assert (syn["Country"] == expected).all(), pd.crosstab(syn["Region"], syn["Country"])
    # never modelled: no marginal names it, the model's cliques do not hold it
    assert all("Country" not in p["attributes"] for p in card["phi"])
    assert all("Country" not in c for c in card["generator"]["junction_tree_cliques"])
    assert card["generator"]["lookups"] == [
        {"column": "Country", "source": "Region", "description": structured_schema()["lookups"][0]["description"]}
    ]


def test_structural_zeros_are_never_sampled_and_noise_on_them_is_discarded(released):
    syn, card = released["synthetic"], released["card"]
    children = syn["Age"] == CHILD
    assert children.sum() > 5000  # the extract has 9,434 people aged 0 to 15: the model keeps them
    for col, codes in ZEROS.items():
        hits = children & syn[col].isin(codes)
        assert not hits.any(), f"{int(hits.sum())} synthetic children with {col} in {codes}"
        assert (syn.loc[children, col] == -9).all()
    zeros = card["generator"]["structural_zeros"]
    assert [z["attributes"] for z in zeros] == [["Age", c] for c in ZEROS]
    assert "discarded" in card["generator"]["structural_zero_noise"]
    # the zeros on Age × Occupation join the model's graph: Occupation is sampled knowing Age
    assert any({"Age", "Occupation"} <= set(c) for c in card["generator"]["junction_tree_cliques"])


def test_the_card_draws_the_synthesis_graph_in_sampling_order(released):
    card, html = released["card"], Path(released["out"]["card_html"]).read_text()
    (graph,) = card["synthesis_graphs"]
    assert graph["order"] == card["generator"]["sampling_order"]
    rank = {a: i for i, a in enumerate(graph["order"])}
    assert all(rank[e["source"]] < rank[e["target"]] for e in graph["edges"])  # arrows in sampling order
    phi_pairs = {frozenset(p) for m in card["phi"] for p in itertools.combinations(m["attributes"], 2)}
    for e in graph["edges"]:
        assert (e["kind"] == "phi") == (frozenset((e["source"], e["target"])) in phi_pairs), e
    # Age × Occupation was not measured: the structural zero's table links them, drawn dashed
    assert [{e["source"], e["target"]} for e in graph["edges"] if e["kind"] == "model"] == [{"Age", "Occupation"}]
    assert "Synthesis graph" in html and html.count("<svg") >= 2  # the graph beside the utility plot


def test_a_release_whose_data_disagrees_with_a_lookup_is_refused_in_one_line(tmp_path, capsys):
    from sdgov.flows.cli import main

    spec = write_inputs(tmp_path / "inputs")
    data = pd.read_csv(CENSUS, dtype=str, nrows=2000)
    data["Country"] = ENGLAND
    data.loc[7, "Country"] = WALES  # a North East record said to be in Wales
    data.to_csv(tmp_path / "inputs" / "data.csv", index=False)
    root = init_registry(tmp_path / "registry")
    rc = main(["release", "--spec", str(spec), "--root", str(root), "--data", str(tmp_path / "inputs" / "data.csv")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0
    assert "'Country': 1 row(s) disagree with the lookup from 'Region' (first at row 8)" in err
    assert not (root / "releases").exists() or not any((root / "releases").iterdir())


# ------------------------------------------------------------------------------------------ split synthesis

STUDENT, NOT_STUDENT = 1, 2  # Student: 1 Yes (schoolchild or full-time student), 2 No


def write_split_inputs(dest: Path) -> Path:
    spec_path = write_inputs(dest)
    spec = yaml.safe_load(spec_path.read_text())
    del spec["phi"]
    attrs = ["Age", "Sex", "Economic Activity", "Occupation", "Region"]
    spec["split"] = {
        "attribute": "Student",
        "parts": [  # each with its own Φ over the same attributes, and its own share of ρ
            {"name": "students", "codes": [STUDENT], "share": 1, "phi": {"all_kway": [{"k": 2, "attributes": attrs}]}},
            {
                "name": "others",
                "codes": [NOT_STUDENT],
                "share": 3,
                "phi": {
                    "marginals": [
                        ["Age", "Sex", "Economic Activity"],
                        ["Age", "Occupation"],
                        ["Economic Activity", "Occupation"],
                        ["Region", "Age"],
                    ]
                },
            },
        ],
    }
    spec["privacy"] = {"rho": 1.0}
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return spec_path


def test_split_synthesis_gives_one_model_per_part_in_the_data_proportions(tmp_path):
    from sdgov.card import _env
    from sdgov.split import synthesise_split
    from sdgov.synthesis_graph import graph_svg

    result = synthesise_split(write_split_inputs(tmp_path / "inputs"), tmp_path / "out")
    syn = pd.read_parquet(result.synthetic)
    real = pd.read_csv(CENSUS, usecols=["Student"])["Student"]
    assert len(syn) == 50000 and set(result.rows) == {"students", "others"}
    # both parts present, in the data's proportions up to noise (noisy totals of tables at σ of a few units)
    share = (syn["Student"] == STUDENT).mean()
    assert abs(share - (real == STUDENT).mean()) < 0.005, (share, (real == STUDENT).mean())
    assert (syn["Student"] == STUDENT).sum() == result.rows["students"]
    # one model per part, each with its own Φ; ρ composed over the parts (shares 1 : 3 of ρ = 1)
    info = result.model_info
    assert info["students"]["fitted_marginals"] != info["others"]["fitted_marginals"]
    assert result.privacy["parts"]["students"]["rho"] == pytest.approx(0.25)
    assert result.privacy["parts"]["others"]["rho"] == pytest.approx(0.75)
    assert result.privacy["rho"] == pytest.approx(1.0) and result.privacy["epsilon"] > 0
    # the schema's structures hold across the concatenated parts
    assert (syn["Country"] == syn["Region"].map(lambda r: WALES if r == WALES else ENGLAND)).all()
    for col, codes in ZEROS.items():
        if col in syn.columns:
            assert not ((syn["Age"] == CHILD) & syn[col].isin(codes)).any(), col
    # the card's graph section shows both models
    assert [g.title.split("'")[1] for g in result.graphs] == ["students", "others"]
    html = (
        _env()
        .get_template("synthesis_graph.html.j2")
        .render(c={"synthesis_graphs": result.graphs}, graph_svgs=[graph_svg(g) for g in result.graphs])
    )
    assert html.count("<svg") == 2 and "part &#39;students&#39;" in html and "part &#39;others&#39;" in html


def test_the_release_flow_refuses_a_split_spec_in_one_line(tmp_path, capsys):
    from sdgov.flows.cli import main

    spec = write_split_inputs(tmp_path / "inputs")
    rc = main(["release", "--spec", str(spec), "--root", str(init_registry(tmp_path / "registry"))])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and "split synthesis" in err
