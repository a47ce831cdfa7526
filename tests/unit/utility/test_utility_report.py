"""Issue 5: the utility report — generic measures, declared tasks, baselines, fitness, CLI contract.

Small made-up data only (the demo generator, a few thousand rows); the census-scale acceptance runs are in
benchmarks/bench_utility.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sdgov.agreement.load import load_spec
from sdgov.agreement.sections.tasks import ClassifierTask, GapTask, RegressionTask, TableTask
from sdgov.base.errors import SpecError
from sdgov.data.encoding import decode
from sdgov.engines import load_encoded
from sdgov.engines.recordset import FrameRecords
from sdgov.utility import bivariate, distinguish, univariate, wasserstein
from sdgov.utility import tasks as T
from sdgov.utility.baselines import independent_marginals
from sdgov.utility.jaro import ordering_similarity
from sdgov.utility.report import FAST, build_report, render_report_html, write_report
from tests.conftest import make_demo_inputs

SMALL = replace(
    FAST,
    specks_seeds=6,
    baseline_specks_seeds=3,
    specks_rows=800,
    specks_trees=15,
    wasserstein_replicates=40,
    pmse_rows=3000,
    pmse_permutations=3,
)

TASKS = [
    {"name": "age-sex-health", "kind": "table", "attributes": ["Age", "Sex", "Health"]},
    {
        "name": "sex-gap-occupation",
        "kind": "gap",
        "group": "Sex",
        "by": ["Occupation"],
        "where": {"Economic Activity": [1, 2]},
    },  # employed or unemployed
    {
        "name": "occupation-regression",
        "kind": "regression",
        "target": "Occupation",
        "features": ["Age", "Sex", "Education"],
    },
    {
        "name": "health-forest",
        "kind": "classifier",
        "target": "Health",
        "features": ["Age", "Region", "Sex"],
        "trees": 20,
    },
]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Demo inputs with declared tasks, the encoded real data, and a 'synthetic' file (a real resample)."""
    base = tmp_path_factory.mktemp("utility")
    spec_path = make_demo_inputs(base / "inputs", rows=4000)
    spec = yaml.safe_load(spec_path.read_text())
    spec["tasks"] = TASKS
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    loaded = load_spec(spec_path)
    real = load_encoded(loaded.data_path, loaded.schema_)
    attrs = loaded.agreement.attributes
    synth = real[attrs].sample(len(real), replace=True, random_state=3).reset_index(drop=True)
    synth_file = base / "synthetic.parquet"
    decode(synth, _sub(loaded.schema_, attrs)).to_parquet(synth_file)
    return {"spec": spec_path, "loaded": loaded, "real": real, "synth": synth, "synth_file": synth_file, "base": base}


def _sub(schema, attrs):
    return schema.model_copy(update={"columns": [c for c in schema.columns if c.name in attrs]})


# ----------------------------------------------------------------------------------------- generic measures


def test_identical_data_is_perfect(demo):
    real, schema = demo["real"], demo["loaded"].schema_
    attrs = demo["loaded"].agreement.attributes
    rec = FrameRecords(real, schema)
    u = univariate.univariate(rec, rec, schema, attrs)
    assert u["mean_similarity"] == pytest.approx(1.0) and u["mean_coverage"] == 1.0
    r = bivariate.association_matrix(rec, schema, attrs)
    b = bivariate.bivariate(r, rec, schema, attrs, bivariate.phi_pairs(attrs, demo["loaded"].agreement.cliques))
    assert np.allclose(b["B"], 1.0) and b["mean_B"] == pytest.approx(1.0)
    w = wasserstein.wasserstein(rec, rec, attrs, reps=20)
    assert all(c["w1"] == 0 for c in w["columns"])
    split = T.split_real(real)
    for spec in (TASKS[0], TASKS[1]):
        t = (TableTask if spec["kind"] == "table" else GapTask).model_validate(spec)
        res = T.run_task(t, rec, split, rec, schema, {})
        assert res.get("rmse", res.get("rmse_pp")) == pytest.approx(0.0)


def test_numeric_similarity_is_one_minus_ks():
    r, s = np.array([10.0, 10, 0, 0]), np.array([0.0, 10, 10, 0])
    res = univariate.column_fidelity(r, s, "numeric")
    assert res["measure"] == "1 − KS" and res["similarity"] == pytest.approx(0.5)
    assert res["coverage"] == pytest.approx(0.5)  # real range: bins 0-1; synthetic: bins 1-2
    assert univariate.column_fidelity(r, r, "numeric")["similarity"] == 1.0


def test_cramers_v_extremes():
    assert bivariate.cramers_v(np.array([[50, 0], [0, 50]])) == pytest.approx(1.0)
    assert bivariate.cramers_v(np.array([[25, 25], [25, 25]])) == pytest.approx(0.0)


def test_pmse_ratio_near_null_for_one_distribution_and_large_for_independent(demo):
    real, schema = demo["real"], demo["loaded"].schema_
    attrs = demo["loaded"].agreement.attributes
    half = np.random.default_rng(0).permutation(len(real))
    a, b = real.iloc[half[:2000]], real.iloc[half[2000:]]
    same = distinguish.pmse(a, b, attrs, permutations=5)
    assert 0.6 < same["ratio"] < 1.6, same
    ind = independent_marginals(FrameRecords(real, schema), attrs, len(real))
    assert distinguish.pmse(real, ind, attrs, permutations=3)["ratio"] > 2 * same["ratio"]


def test_specks_scores_do_not_depend_on_its_thread_count(demo, monkeypatch):
    """SPECKS runs each forest on one thread (cheaper in CPU); its figures are those of a forest on two."""
    attrs = demo["loaded"].agreement.attributes
    indep = independent_marginals(FrameRecords(demo["real"], demo["loaded"].schema_), attrs, 3000)
    got = {}
    for threads in (1, 2):
        monkeypatch.setattr(distinguish, "N_JOBS", threads)
        got[threads] = distinguish.specks(demo["real"], indep, attrs, seeds=3, rows=600, trees=8)["ks"]
    assert got[1] == got[2]
    assert min(got[1]) > 0  # a real difference was scored (independent marginals are told apart)


def test_wasserstein_ratio_is_about_one_for_a_random_split(demo):
    real, schema = demo["real"], demo["loaded"].schema_
    attrs = demo["loaded"].agreement.attributes
    half = np.random.default_rng(1).permutation(len(real))
    a, b = FrameRecords(real.iloc[half[:2000]], schema), FrameRecords(real.iloc[half[2000:]], schema)
    w = wasserstein.wasserstein(a, b, attrs, reps=200)
    assert 0.4 < w["mean_ratio"] < 1.8


def test_wasserstein_score_puts_a_real_resample_at_one_and_a_shifted_column_below(demo):
    """Issue 14: the radar scored a real resample 0.909, below the independent-marginals baseline's 1.000. A column
    within a random split's distance (its 95th percentile) scores 1, whatever the noisy ratio; a shifted one less."""
    real, schema = demo["real"], demo["loaded"].schema_
    attrs = demo["loaded"].agreement.attributes
    boot = real.sample(len(real), replace=True, random_state=3)
    w = wasserstein.wasserstein(FrameRecords(real, schema), FrameRecords(boot, schema), attrs, reps=200, seed=2)
    assert w["mean_score"] == 1.0 and all(c["w1"] <= c["null_q95"] for c in w["columns"])
    shifted = real.copy()
    a = attrs[0]
    shifted[a] = np.minimum(shifted[a] + 1, schema.by_name[a].size - 1)
    w = wasserstein.wasserstein(FrameRecords(real, schema), FrameRecords(shifted, schema), attrs, reps=200, seed=2)
    assert w["columns"][0]["score"] < 1.0 and w["mean_score"] < 1.0


def test_independent_baseline_scores_worse_than_real_bootstrap(demo):
    lo = demo["loaded"]
    rep = build_report(
        demo["real"],
        demo["synth"],
        lo.schema_,
        lo.agreement.attributes,
        lo.agreement.cliques,
        lo.spec.tasks,
        settings=SMALL,
    )
    ind, boot = rep.datasets["independent"], rep.datasets["bootstrap"]
    assert ind["bivariate"]["mean_B"] < boot["bivariate"]["mean_B"]
    assert ind["specks"]["median_ks"] > boot["specks"]["median_ks"]
    assert len(ind["specks"]["ks"]) == min(SMALL.specks_seeds, SMALL.baseline_specks_seeds)  # reference points
    assert len(rep.datasets["synthetic"]["specks"]["ks"]) == SMALL.specks_seeds
    assert ind["pmse"]["ratio"] > boot["pmse"]["ratio"]
    by = {t["name"]: (t, b) for t, b in zip(ind["tasks"], boot["tasks"])}
    assert by["age-sex-health"][0]["rmse"] > by["age-sex-health"][1]["rmse"]
    assert by["sex-gap-occupation"][0]["rmse_pp"] >= by["sex-gap-occupation"][1]["rmse_pp"]
    radar = rep.radar
    assert len(radar["axes"]) == 6 + len(TASKS)
    assert sum(radar["series"]["independent"]) < sum(radar["series"]["bootstrap"])
    assert all(0 <= v <= 1 for s in radar["series"].values() for v in s if v is not None)
    # the fitness statement is derived from the tasks
    st = rep.fitness["statement"]
    assert "Age × Sex × Health" in st and rep.verdicts
    html = render_report_html(rep)
    assert html.count("<svg") == 4 and "What this data is and is not fit for" in html


# ----------------------------------------------------------------------------------------- tasks


def test_regression_on_the_real_data_itself_has_no_bias(demo):
    real, schema = demo["real"], demo["loaded"].schema_
    t = RegressionTask.model_validate(TASKS[2])
    split = T.split_real(real)
    res, _ = T.regression_task(t, split, real, schema)
    assert res["coef_bias_pct_median"] == pytest.approx(0.0, abs=1e-3)
    assert res["ci_overlap_mean"] == pytest.approx(1.0, abs=1e-3)
    assert res["variance_ratio_median"] == pytest.approx(1.0, abs=1e-3)
    assert 0 < res["accuracy_train_on_real"] <= 1


def test_classifier_task_reports_both_holdouts_and_jaro(demo):
    real = demo["real"]
    t = ClassifierTask.model_validate(TASKS[3])
    res, cache = T.classifier_task(t, T.split_real(real), demo["synth"], repeats=2, rows=800)
    for k in (
        "accuracy_real_model_real_holdout",
        "accuracy_synthetic_model_real_holdout",
        "accuracy_synthetic_model_synthetic_holdout",
    ):
        assert 0 < res[k] <= 1
    assert sorted(res["importance_order_real"]) == sorted(t.features)
    assert 0 <= res["jaro"] <= 1
    assert res["jaro"] == ordering_similarity(res["importance_order_real"], res["importance_order_synthetic"])


def test_jaro_similarity_of_orderings():
    six = ["a", "b", "c", "d", "e", "f"]
    assert ordering_similarity(six, six) == 1.0
    assert ordering_similarity(six, ["a", "b", "c", "d", "f", "e"]) == pytest.approx(17 / 18)  # one adjacent swap
    assert ordering_similarity(six, six[::-1]) < ordering_similarity(six, ["b", "a", "c", "d", "e", "f"])
    assert ordering_similarity(["Age", "Region"], ["Region", "Age"]) == 0.0  # jellyfish: no matches in window


def test_tasks_are_validated_and_kept_out_of_the_agreement_hash(demo, tmp_path):
    spec = yaml.safe_load(demo["spec"].read_text())
    base_sha = demo["loaded"].agreement.sha256()
    spec.pop("tasks")
    (demo["spec"].parent / "notasks.yaml").write_text(yaml.safe_dump(spec))
    assert load_spec(demo["spec"].parent / "notasks.yaml").agreement.sha256() == base_sha
    spec["tasks"] = [{"name": "x", "kind": "table", "attributes": ["Age", "Nope"]}]
    (demo["spec"].parent / "bad.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError, match="unknown attribute"):
        load_spec(demo["spec"].parent / "bad.yaml")
    spec["tasks"] = [{"name": "x", "kind": "gap", "group": "Sex", "groups": [1, 99], "by": ["Age"]}]
    (demo["spec"].parent / "bad.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError, match="not categories"):
        load_spec(demo["spec"].parent / "bad.yaml")
    spec["tasks"] = [{"name": "x", "kind": "forecast", "target": "Age"}]
    (demo["spec"].parent / "bad.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError):
        load_spec(demo["spec"].parent / "bad.yaml")


def test_census_examples_declare_the_paper_tasks():
    repo = Path(__file__).resolve().parents[3] / "examples" / "census2011"
    kinds = {}
    for app in ("app1", "app2", "app3"):
        raw = yaml.safe_load((repo / f"{app}.yaml").read_text())
        kinds[app] = [t["kind"] for t in raw["tasks"]]
    assert kinds == {"app1": ["table", "gap"], "app2": ["regression"], "app3": ["classifier"]}


# ----------------------------------------------------------------------------------------- CLI


def _cli(argv, capsys):
    from sdgov.commands import main

    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_report_utility_json_contract(demo, capsys, tmp_path):
    rc, out, err = _cli(
        [
            "report",
            "utility",
            "--spec",
            str(demo["spec"]),
            "--synthetic",
            str(demo["synth_file"]),
            "--fast",
            "--out",
            str(tmp_path / "rep"),
            "--json",
        ],
        capsys,
    )
    assert rc == 0, err
    d = json.loads(out)
    assert set(d["datasets"]) == {"synthetic", "independent", "bootstrap"}
    syn = d["datasets"]["synthetic"]
    for key in ("univariate", "bivariate", "pmse", "specks", "wasserstein", "tasks"):
        assert key in syn
    assert len(syn["specks"]["ks"]) == 20
    assert [t["name"] for t in syn["tasks"]] == [t["name"] for t in TASKS]
    assert d["agreement_sha256"] == demo["loaded"].agreement.sha256()
    assert d["fitness"]["statement"] and d["radar"]["axes"]
    assert (tmp_path / "rep" / "utility_report.html").read_text().count("<svg") == 4
    assert json.loads((tmp_path / "rep" / "utility_report.json").read_text())["tasks_sha256"] == d["tasks_sha256"]


@pytest.mark.parametrize("breakage", ["bad_code", "missing_column", "extra_column", "not_parquet"])
def test_cli_refuses_a_synthetic_file_that_does_not_match_the_schema(demo, capsys, tmp_path, breakage):
    df = pd.read_parquet(demo["synth_file"])
    bad = tmp_path / "bad.parquet"
    if breakage == "bad_code":
        df = df.astype({"Sex": "string"})
        df.loc[0, "Sex"] = "7"
    elif breakage == "missing_column":
        df = df.drop(columns=["Sex"])
    elif breakage == "extra_column":
        df["Income"] = 1
    if breakage == "not_parquet":
        bad.write_text("this is not parquet")
    else:
        df.to_parquet(bad)
    rc, out, err = _cli(["report", "utility", "--spec", str(demo["spec"]), "--synthetic", str(bad), "--json"], capsys)
    assert rc == 2
    lines = err.strip().splitlines()
    # the one line names the file (a long temporary path is shortened in its middle, never at its name)
    assert len(lines) == 1 and lines[0].startswith("sdgov: error:") and bad.name in lines[0]
    assert json.loads(out)["ok"] is False


def test_write_report_writes_json_and_html_side_by_side(demo, tmp_path):
    lo = demo["loaded"]
    rep = build_report(
        demo["real"],
        demo["synth"],
        lo.schema_,
        lo.agreement.attributes,
        lo.agreement.cliques,
        [],
        settings=replace(SMALL, baselines=False),
    )
    files = write_report(rep, tmp_path)
    assert files.json.name == "utility_report.json" and files.html.name == "utility_report.html"
    assert json.loads(files.json.read_text())["datasets"].keys() == {"synthetic"}
    assert "No analysis tasks were declared" in files.html.read_text()
    assert json.loads(files.summary.read_text()) == rep.summary.model_dump(mode="json")


# ----------------------------------------------------------------------------------------- release flow
