"""The embedded engine counts, encodes and fingerprints exactly as the in-memory reference does, bit for bit.

The reference is what sdgov did before the engine (pandas ``read_csv_strict`` + ``encode`` + ``marginal_counts``
+ ``fingerprint``); it is kept for synthetic files and here as the oracle.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdgov.agreement.load import load_spec
from sdgov.base.errors import DataError
from sdgov.data.encoding import encode, read_csv_strict
from sdgov.data.fingerprint import fingerprint
from sdgov.data.schema import Schema
from sdgov.engines import engine, load_encoded
from sdgov.measurement.marginals import marginal_counts
from tests.conftest import CENSUS, REPO

APP3 = REPO / "examples" / "census2011" / "app3.yaml"
census = pytest.mark.skipif(not CENSUS.is_file(), reason="needs ../shared/data (the census extract)")


@census
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_exact_marginals_codes_and_fingerprint_equal_the_in_memory_reference(tmp_path: Path, fmt: str) -> None:
    loaded = load_spec(APP3)
    schema, cliques = loaded.schema_, loaded.agreement.cliques
    reference = encode(read_csv_strict(CENSUS), schema, where="census")
    source = CENSUS
    if fmt == "parquet":  # the same records as Parquet, typed as a user would export them, rows shuffled
        raw = pd.read_csv(CENSUS).sample(frac=1.0, random_state=3)
        source = tmp_path / "census.parquet"
        raw.to_parquet(source, index=False)
    enc = engine().encode(source, schema, tmp_path / "codes.parquet")
    codes = pd.read_parquet(enc.path)
    if fmt == "csv":  # file order kept: the very same frame, dtypes (int32) included
        pd.testing.assert_frame_equal(codes, reference)
    assert enc.rows == len(reference)
    assert enc.fingerprint == fingerprint(reference, schema)  # order- and format-free identity
    tables = engine().marginals(enc.path, schema, cliques)
    assert list(tables) == cliques
    for clique in cliques:
        expected = marginal_counts(reference, schema, clique)
        assert tables[clique].dtype == np.int64 and tables[clique].shape == expected.shape
        assert np.array_equal(tables[clique], expected), clique
    # a clique asked in another attribute order is the same table transposed; 1- and 3-way too
    a, b, c = cliques[0][0], cliques[0][1], cliques[-1][-1]
    more = [(b, a), (a,), (a, b, c)]
    for clique, table in engine().marginals(enc.path, schema, more).items():
        assert np.array_equal(table, marginal_counts(reference, schema, clique)), clique
    # a split synthesis's part: the same scan over the records whose attribute holds the part's cells
    part = reference[reference[c].isin([0, 2])]
    for clique, table in engine().marginals(enc.path, schema, more, records=(c, [0, 2])).items():
        assert np.array_equal(table, marginal_counts(part, schema, clique)), clique


def _wide_schema(k: int, size: int) -> Schema:
    cols = [{"name": f"c{i}", "categories": [{"code": j, "label": str(j)} for j in range(size)]} for i in range(k)]
    return Schema.model_validate({"name": "wide", "columns": cols})


@pytest.mark.parametrize("k, size", [(3, 4), (16, 20)], ids=["packed", "too-wide-to-pack"])
def test_fingerprint_with_and_without_packing(tmp_path: Path, k: int, size: int) -> None:
    """20^16 cells do not fit one int64: the engine's multi-column ORDER BY must give the lexsort's bytes."""
    schema = _wide_schema(k, size)
    rng = np.random.default_rng(7)
    df = pd.DataFrame({f"c{i}": rng.integers(0, size, 3000) for i in range(k)})
    df = pd.concat([df, df.iloc[:500]])  # repeated records count
    df.to_csv(tmp_path / "d.csv", index=False)
    enc = engine().encode(tmp_path / "d.csv", schema, tmp_path / "codes.parquet")
    assert enc.fingerprint == fingerprint(encode(read_csv_strict(tmp_path / "d.csv"), schema), schema)
    pairs = list(itertools.combinations(schema.names, 2))[:5]
    for clique, table in engine().marginals(enc.path, schema, pairs).items():
        assert np.array_equal(table, marginal_counts(pd.read_parquet(enc.path), schema, clique))


def test_refusals_are_the_in_memory_encoders(tmp_path: Path) -> None:
    """Both encoders call sdgov.data.encoding.encode_distinct: same values refused with the same line."""
    schema = _wide_schema(2, 3)
    (tmp_path / "d.csv").write_text("c0,c1\n0,1\n2,7\n1,x\n")
    with pytest.raises(DataError) as engine_err:
        load_encoded(tmp_path / "d.csv", schema)
    with pytest.raises(DataError) as pandas_err:
        encode(read_csv_strict(tmp_path / "d.csv"), schema, where=str(tmp_path / "d.csv"))
    assert engine_err.value.what == pandas_err.value.what
    assert "'c1'" in engine_err.value.what and "'x'" in engine_err.value.what


def test_scratch_space_is_removed(tmp_path: Path) -> None:
    schema = _wide_schema(2, 3)
    (tmp_path / "d.csv").write_text("c0,c1\n0,1\n2,2\n")
    engine().encode(tmp_path / "d.csv", schema, tmp_path / "codes.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["codes.parquet", "d.csv"]
