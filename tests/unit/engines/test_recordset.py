"""Record sets (issue 15): the utility report and the card read records as exact tables plus a bounded sample, so
they run at 55M records; in memory and on disk they must give the same tables, and the same report."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from sdgov.agreement.load import load_spec
from sdgov.base.errors import DataError
from sdgov.data.encoding import encode
from sdgov.data.schema import load_schema
from sdgov.engines import load_encoded
from sdgov.engines.duckdb_engine import DuckDBEngine
from sdgov.engines.recordset import FrameRecords, ParquetRecords, read_sample
from sdgov.utility.bivariate import spearman
from sdgov.utility.report import FAST, build_report, render_report_html
from tests.conftest import make_demo_inputs

TINY = replace(
    FAST, specks_seeds=2, specks_rows=300, specks_trees=5, wasserstein_replicates=5, pmse_rows=1000, pmse_permutations=1
)
ADULT = Path(__file__).resolve().parents[3] / "examples" / "uci_adult" / "schema.yaml"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    base = tmp_path_factory.mktemp("recordset")
    loaded = load_spec(make_demo_inputs(base, rows=3000))
    real = load_encoded(loaded.data_path, loaded.schema_)
    attrs = loaded.agreement.attributes
    codes = base / "codes.parquet"
    real.to_parquet(codes)
    synth = real[attrs].sample(len(real), replace=True, random_state=5).reset_index(drop=True)
    synth_codes = base / "synth.parquet"
    synth.to_parquet(synth_codes)
    return {"loaded": loaded, "real": real, "codes": codes, "synth": synth, "synth_codes": synth_codes}


def test_on_disk_tables_are_the_in_memory_tables_bit_for_bit(demo):
    schema, attrs = demo["loaded"].schema_, demo["loaded"].agreement.attributes
    frame, disk = FrameRecords(demo["real"], schema), ParquetRecords(demo["codes"], schema, attrs)
    assert disk.rows == frame.rows == 3000
    cliques = [(a,) for a in attrs] + [(a, b) for i, a in enumerate(attrs) for b in attrs[i + 1 :]]
    cliques += [tuple(attrs[:3]), tuple(reversed(attrs[:3]))]
    disk.prefetch(cliques)
    for c in cliques:
        assert disk.table(c).dtype == np.int64 and np.array_equal(disk.table(c), frame.table(c)), c
    part = (attrs[0], [0, 2])
    for c in cliques[:5]:
        assert np.array_equal(disk.table(c, part), frame.table(c, part))
        assert disk.table(c, part).sum() < disk.table(c).sum()


def test_the_sample_is_every_record_up_to_the_limit_and_a_fixed_uniform_draw_beyond(tmp_path):
    n = 50_000
    path = tmp_path / "rows.parquet"
    pd.DataFrame({"i": np.arange(n, dtype=np.int32)}).to_parquet(path, row_group_size=4096)
    whole = read_sample(path, ["i"], n, seed=0)
    assert whole["i"].tolist() == list(range(n)), "up to the limit: every record, in file order"
    a, b = read_sample(path, ["i"], 5000, seed=1), read_sample(path, ["i"], 5000, seed=1)
    assert a.equals(b), "the same seed draws the same records (no state, no thread count)"
    rows = a["i"].to_numpy()
    assert len(rows) == 5000 and np.all(np.diff(rows) > 0), "without replacement, in file order"
    assert not np.array_equal(rows, read_sample(path, ["i"], 5000, seed=2)["i"].to_numpy())
    # uniform: over 100 seeds each tenth of the file holds 10 % of the draws (binomial sd ≈ 0.04 % of all draws)
    tenths = np.zeros(10)
    for seed in range(100):
        tenths += np.bincount(read_sample(path, ["i"], 5000, seed)["i"].to_numpy() * 10 // n, minlength=10)
    assert np.all(np.abs(tenths / tenths.sum() - 0.1) < 0.003), tenths / tenths.sum()


def test_the_report_from_files_is_the_report_from_memory(demo):
    loaded = demo["loaded"]
    schema, attrs, cliques = loaded.schema_, loaded.agreement.attributes, loaded.agreement.cliques
    in_memory = build_report(demo["real"], demo["synth"], schema, attrs, cliques, settings=TINY)
    on_disk = build_report(
        ParquetRecords(demo["codes"], schema, attrs),
        ParquetRecords(demo["synth_codes"], schema, attrs),
        schema,
        attrs,
        cliques,
        settings=TINY,
    )
    a, b = in_memory.as_json(), on_disk.as_json()
    a.pop("seconds"), b.pop("seconds")
    assert a == b


def test_a_sampled_report_keeps_every_table_exact(demo):
    """Beyond ``sample_rows`` the models see a sample, but every table the report compares is over every record."""
    loaded = demo["loaded"]
    schema, attrs, cliques = loaded.schema_, loaded.agreement.attributes, loaded.agreement.cliques
    sampled = replace(TINY, sample_rows=1000)
    real = ParquetRecords(demo["codes"], schema, attrs, sample_rows=1000)
    synth = ParquetRecords(demo["synth_codes"], schema, attrs, sample_rows=1000)
    report = build_report(real, synth, schema, attrs, cliques, settings=sampled)
    full = build_report(demo["real"], demo["synth"], schema, attrs, cliques, settings=TINY)
    assert report.rows["real"] == report.rows["synthetic"] == 3000
    assert report.rows["real_sample"] == report.rows["synthetic_sample"] == 1000
    assert report.rows["real_train"] + report.rows["real_holdout"] == 1000
    assert report.summary == full.summary, "the card's marginal errors are exact, sample or not"
    assert report.datasets["synthetic"]["univariate"] == full.datasets["synthetic"]["univariate"]
    assert report.datasets["synthetic"]["bivariate"] == full.datasets["synthetic"]["bivariate"]
    assert report.datasets["independent"]["rows"] == 1000, "baselines are as large as the synthetic sample"
    assert "1000 real and 1000 synthetic records" in render_report_html(report), "the report says what was sampled"
    assert "uniform sample" not in render_report_html(full)


@pytest.mark.parametrize("seed", range(20))
def test_spearman_from_the_two_way_table_is_scipys_on_the_records(seed):
    rng = np.random.default_rng(seed)
    ka, kb = rng.integers(2, 9, size=2)
    x = rng.integers(0, ka, 500)
    y = np.clip(x * kb // ka + rng.integers(-2, 3, 500), 0, kb - 1) if seed % 2 else rng.integers(0, kb, 500)
    table = np.zeros((ka, kb), dtype=np.int64)
    np.add.at(table, (x, y), 1)
    assert spearman(table) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert spearman(np.ones((1, kb), dtype=np.int64)) == 0.0, "a constant column has no rank correlation"


def test_the_engine_encodes_a_released_file_as_the_in_memory_encoder_does(tmp_path):
    """The synthetic file holds numbers spread within their bins (``release_as: uniform``) and labels: the engine
    must give each the cell pandas gives it, and refuse what pandas refuses."""
    schema = load_schema(ADULT)
    cols = ["age", "workclass", "fnlwgt", "hours-per-week", "income"]
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "age": rng.uniform(17, 90.999, 2000).round(3),
            "workclass": rng.choice(["Private", "State-gov", "Unknown"], 2000),
            "fnlwgt": rng.uniform(0, 900000, 2000),
            "hours-per-week": rng.integers(1, 99, 2000),
            "income": rng.choice([">50K", "<=50K"], 2000),
        }
    )
    path = tmp_path / "synthetic.parquet"
    frame.to_parquet(path)
    out = tmp_path / "codes.parquet"
    assert DuckDBEngine().encode_columns(path, schema, cols, out) == 2000
    expected = encode(pd.read_parquet(path), schema, columns=cols)
    assert pd.read_parquet(out).equals(expected)
    frame.loc[7, "workclass"] = "Astronaut"
    frame.to_parquet(path)
    with pytest.raises(DataError, match="Astronaut"):
        DuckDBEngine().encode_columns(path, schema, cols, out)


def test_the_privacy_audit_pool_is_the_same_sample_from_the_file_or_from_memory(demo, tmp_path):
    """At census scale the privacy-risk audit draws from a pool of ``population_rows`` confidential records, read
    from the encoded file without loading the rest; in memory it is the same records. Unset, the setting leaves
    the pre-registered settings (and so the agreement hash) as they were."""
    from sdgov.agreement.sections.privacy_risk import POPULATION_ROWS, RiskSettings
    from sdgov.audits.protocol import AuditContext
    from sdgov.engines.recordset import sample_frame

    assert "population_rows" not in RiskSettings().model_dump() and RiskSettings().population_rows == POPULATION_ROWS
    assert RiskSettings(population_rows=500).model_dump()["population_rows"] == 500
    real = demo["real"]

    def context() -> AuditContext:
        fields = dict.fromkeys(["agreement", "agreement_sha256", "schema", "measurements", "measurements_ref"])
        fields |= dict.fromkeys(["plan", "generate_record", "model_info", "synthetic_file", "requested_rows"])
        return AuditContext(**fields, read_confidential=lambda: real, confidential_file=demo["codes"])

    from_file = context()
    pool = from_file.confidential_sample(1000, seed=0)
    assert from_file.confidential_was_read, "the audit stage records the encoded copy as an input"
    assert len(pool) == 1000 and pool.equals(sample_frame(real, 1000, seed=0))
    assert from_file._confidential is None, "the other records were never loaded"
    assert context().confidential_sample(5000, seed=0).equals(real), "up to the limit: every record"
    two = list(real.columns[:2])  # an audit reads only its agreement's columns: the same records
    assert context().confidential_sample(1000, seed=0, columns=two).equals(pool[two])
    assert context().confidential_sample(5000, seed=0, columns=two).equals(real[two])


def test_the_decomposability_test_builds_its_extremal_datasets_from_a_bounded_pool():
    """At 55M records 10 × N rows per fit would never end: the test (of the generator, not of the data) builds its
    extremal datasets from at most ``population_rows`` records, and unset the setting leaves the hash as it was."""
    from sdgov.agreement.sections.decomposability import POPULATION_ROWS, DecomposabilitySettings

    assert "population_rows" not in DecomposabilitySettings().model_dump()
    assert DecomposabilitySettings().population_rows == POPULATION_ROWS == 100_000
    assert DecomposabilitySettings(population_rows=5000).model_dump()["population_rows"] == 5000
