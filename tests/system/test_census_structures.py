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
        "rows": 40000,  # not N: the extract holds 50,000 records, a count the controller's policy will not publish
        "seed": 2011,
        "approvals": "approvals.yaml",
        "model_card": yaml.safe_load((EXAMPLE / "app1.yaml").read_text())["model_card"],  # required for a release
    }
    (dest / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return dest / "spec.yaml"


def release(spec: Path, root: Path) -> dict:
    from sdgov.commands import main

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
    assert len(syn) == 40000
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
    from sdgov.commands import main

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


def test_a_split_release_measures_each_part_once_under_the_ledger_and_shows_both_models(tmp_path, capsys):
    """The governed release of a split spec through the real flow: both parts in the data's proportions, each
    part's statistics spent once (keyed by the part's filter), a re-run drawing nothing new, and the card showing
    both models and each part's Φ and ρ. 5,000 records of the census extract keep it small."""
    from sdgov.measurement.store import statistic_key
    from sdgov.registry import commitment
    from sdgov.registry.log import Registry

    spec = write_split_inputs(tmp_path / "inputs")
    pd.read_csv(CENSUS, dtype=str, nrows=5000).to_csv(spec.parent / "data.csv", index=False)  # small: fast
    raw = yaml.safe_load(spec.read_text())
    small = {"rows": 4500, "generator": {"name": "pgm", "iterations": 100}}  # not N = 5,000
    spec.write_text(yaml.safe_dump(raw | small | {"dataset": raw["dataset"] | {"path": "data.csv"}}, sort_keys=False))
    root = init_registry(tmp_path / "registry", sigma_floor=1, max_epsilon_per_release=10)  # σ by ρ's share
    out = release(spec, root)
    path = Path(out["path"])
    syn = pd.read_parquet(path / "synthetic.parquet")
    card = json.loads((path / "card.json").read_text())
    budget = json.loads((path / "artifacts" / "privacy_statement.json").read_text())
    real = pd.read_csv(spec.parent / "data.csv", usecols=["Student"])["Student"]
    rows = {p["name"]: p["rows"] for p in card["split"]["parts"]}
    assert len(syn) == 4500 and sum(rows.values()) == 4500
    # both parts present, in the data's proportions up to noise: a part's rows follow its noisy total (the
    # inverse-variance mean of its tables' totals, variance 1 / Σ 1/(σ²·cells)), so the share is off by the
    # totals' noise — within 5 of its standard deviations, plus rounding (a 1 in 10^6 miss)
    psi = json.loads((path / "artifacts" / "measurements.json").read_text())["measurements"]
    var = {n: 1 / sum(1 / (m["sigma"] ** 2 * len(m["noisy_counts"])) for m in psi if m["part"] == n) for n in rows}
    n_s, n_o = (real == STUDENT).sum(), (real == NOT_STUDENT).sum()
    sd = (n_o**2 * var["students"] + n_s**2 * var["others"]) ** 0.5 / len(real) ** 2
    share = (syn["Student"] == STUDENT).mean()
    assert 0 < share < 1 and abs(share - n_s / len(real)) < 5 * sd + 1 / len(syn), (share, n_s / len(real), sd)
    assert (syn["Student"] == STUDENT).sum() == rows["students"]
    # the schema's structures hold across the concatenated parts
    assert (syn["Country"] == syn["Region"].map(lambda r: WALES if r == WALES else ENGLAND)).all()
    for col, codes in ZEROS.items():
        if col in syn.columns:
            assert not ((syn["Age"] == CHILD) & syn[col].isin(codes)).any(), col

    # the ledger: one spend holding every part's statistics once, ρ by share (1 : 3 of ρ = 1)
    events = Registry(root).verified_events()
    (spend,) = [json.loads(e.comment) for e in events if e.event == "budget_spent"]
    stats = budget["statistics"]
    commit = commitment.registry_committer(Registry(root))  # the statement is published: keyed
    assert sorted(commit("statistic", k) for k in spend["statistics"]) == sorted(s["statistic"] for s in stats)
    assert len(stats) == 10 + 4
    assert spend["rho"] == pytest.approx(1.0)
    for name, rho in (("students", 0.25), ("others", 0.75)):
        assert sum(s["rho"] for s in stats if s["part"] == name) == pytest.approx(rho)
    # a part's marginal is another statistic than the same marginal over all records
    region_age = [s for s in stats if s["attributes"] == ["Region", "Age"]]
    assert len(region_age) == 2 and len({s["statistic"] for s in region_age}) == 2
    fp = spend["fingerprint"]  # the ledger's, controller-side
    assert all(
        s["statistic"] != commit("statistic", statistic_key(fp, ("Region", "Age"), s["sigma"])) for s in region_age
    )

    # the card: both models, each part's Φ and ρ
    assert [g["title"].split("'")[1] for g in card["synthesis_graphs"]] == ["students", "others"]
    assert {p["name"]: p["rho"] for p in card["split"]["parts"]} == pytest.approx({"students": 0.25, "others": 0.75})
    assert {e["part"] for e in card["phi"]} == {"students", "others"} and len(card["phi"]) == 14
    html = Path(out["card_html"]).read_text()
    assert "Split synthesis: one model per part" in html and html.count("part &#39;") >= 2

    # a re-run of the same split release draws nothing and spends nothing: its measure stage (where noise is
    # drawn, under the ledger) reuses every part's statistics

    from sdgov.governance.site import Site
    from sdgov.tasks.measure import measure
    from tests.conftest import agree

    site = Site.resolve(root)
    measured = measure.fn(agree(spec, site), site)
    budget2 = json.loads(measured.statement.verified().read_text())
    assert measured.reused and budget2["spent_rho"] == 0
    assert [s["how"] for s in budget2["statistics"]] == ["reused"] * 14
    assert sorted(s["statistic"] for s in budget2["statistics"]) == sorted(s["statistic"] for s in stats)
    events2 = [e.event for e in Registry(root).verified_events()]
    assert events2.count("budget_spent") == 1
    assert events2.count("measured") == [e.event for e in events].count("measured")

    # the standalone decomposability audit runs once per part, each on its own Φ and records: one verdict each
    from sdgov.commands import main

    capsys.readouterr()
    gen = ["--generator", "independent", "--K", "7", "--rows", "5000", "--control", "none"]
    rc = main(["audit", "decomposability", "--spec", str(spec), *gen, "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0 and payload["verdict"] == "pass" and list(payload["parts"]) == ["students", "others"]
