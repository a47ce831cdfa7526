"""The distributed engine (Dask, on a local cluster of two worker processes started here) encodes, fingerprints
and counts exactly as the embedded DuckDB engine does — bit-identical exact marginals before noise — and refuses
the same data with the same one line.

Small files cut into several partitions (the block sizes are lowered for the test), so the cross-partition
sums, the file order of the encoded copy and the fingerprint's key ranges are all exercised.
"""

from __future__ import annotations

import contextlib
import io
import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from distributed import LocalCluster

from sdgov.agreement.load import load_spec
from sdgov.base.settings import DASK_SCHEDULER
from sdgov.commands import main
from sdgov.engines import dask_engine, engine
from tests.conftest import CENSUS, REPO

APP3 = REPO / "examples" / "census2011" / "app3.yaml"


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def on_cluster(scheduler: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DASK_SCHEDULER, scheduler)
    monkeypatch.setattr(dask_engine, "BLOCK_BYTES", 40_000)  # several CSV partitions from a few thousand rows
    monkeypatch.setattr(dask_engine, "BLOCK_ROWS", 1_500)  # several Parquet partitions (row groups of 1,000)


def _same_encoding(source: Path, schema, tmp_path: Path, file_order: bool) -> tuple[Path, Path]:
    embedded = engine("duckdb").encode(source, schema, tmp_path / "duckdb.parquet")
    distributed = engine("dask").encode(source, schema, tmp_path / "dask.parquet")
    assert (distributed.rows, distributed.fingerprint) == (embedded.rows, embedded.fingerprint)
    a, b = pd.read_parquet(embedded.path), pd.read_parquet(distributed.path)
    if not file_order:  # DuckDB may write a shuffled Parquet's rows in another order: compare as multisets
        a, b = (x.sort_values(list(x.columns), ignore_index=True) for x in (a, b))
    pd.testing.assert_frame_equal(a, b)  # int32 cells, schema column order
    return embedded.path, distributed.path


@pytest.mark.skipif(not CENSUS.is_file(), reason="needs ../shared/data (the census extract)")
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_exact_marginals_and_fingerprint_equal_the_embedded_engine(on_cluster, tmp_path: Path, fmt: str) -> None:
    loaded = load_spec(APP3)
    schema, cliques = loaded.schema_, loaded.agreement.cliques  # App 3's 21 two-way marginals
    raw = pd.read_csv(CENSUS, dtype=str, nrows=4000)
    source = tmp_path / f"census.{fmt}"
    if fmt == "csv":
        raw.to_csv(source, index=False)
    else:  # typed as a user would export it, rows shuffled
        typed = pd.read_csv(io.StringIO(raw.to_csv(index=False))).sample(frac=1.0, random_state=5)
        typed.to_parquet(source, index=False, row_group_size=1_000)
    embedded, distributed = _same_encoding(source, schema, tmp_path, file_order=fmt == "csv")
    a, b = cliques[0]
    asked = [*cliques, (b, a), (a,), (a, b, cliques[-1][-1])]  # another axis order, 1- and 3-way too
    want = engine("duckdb").marginals(embedded, schema, asked)
    got = engine("dask").marginals(distributed, schema, asked)
    assert list(got) == asked
    for clique in asked:
        assert got[clique].dtype == np.int64 and got[clique].shape == want[clique].shape
        assert np.array_equal(got[clique], want[clique]), clique
    assert got[cliques[0]].sum() == len(raw)
    # a split synthesis's part (the records whose attribute holds the part's cells): the same bits
    part = (b, [int(pd.read_parquet(embedded, columns=[b])[b].iloc[0])])  # the first record's part
    want = engine("duckdb").marginals(embedded, schema, asked, records=part)
    got = engine("dask").marginals(distributed, schema, asked, records=part)
    assert all(np.array_equal(got[c], want[c]) for c in asked)
    assert 0 < got[cliques[0]].sum() < len(raw)


def _zoned_schema(k: int = 16, size: int = 20) -> dict:
    """``k`` columns of ``size`` codes (20^16 cells: a record does not pack into one int64) and ``zone``, a
    lookup from ``c0``."""
    cols = [{"name": f"c{i}", "categories": [{"code": j, "label": str(j)} for j in range(size)]} for i in range(k)]
    cols.append({"name": "zone", "categories": [{"code": "lo", "label": "low"}, {"code": "hi", "label": "high"}]})
    table = {str(j): "lo" if j < size // 2 else "hi" for j in range(size)}
    return {"name": "zoned", "columns": cols, "lookups": [{"column": "zone", "source": "c0", "table": table}]}


def _zoned_records(rows: int = 3000, k: int = 16, size: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    df = pd.DataFrame({f"c{i}": rng.integers(0, size, rows) for i in range(k)})
    df = pd.concat([df, df.iloc[:400]], ignore_index=True)  # repeated records count
    df["zone"] = np.where(df["c0"] < size // 2, "lo", "hi")
    return df


def test_wide_records_and_a_lookup_column_encode_alike(on_cluster, tmp_path: Path) -> None:
    """The fingerprint's lexicographic fallback (no packing) and the lookup check on valid data."""
    from sdgov.data.schema import Schema

    schema = Schema.model_validate(_zoned_schema())
    _zoned_records().to_csv(tmp_path / "d.csv", index=False)
    embedded, distributed = _same_encoding(tmp_path / "d.csv", schema, tmp_path, file_order=True)
    pairs = list(itertools.combinations([f"c{i}" for i in range(16)], 2))[:6]
    want = engine("duckdb").marginals(embedded, schema, pairs)
    got = engine("dask").marginals(distributed, schema, pairs)
    assert all(np.array_equal(got[p], want[p]) for p in pairs)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def _spec(tmp_path: Path, engine_name: str) -> Path:
    (tmp_path / "schema.yaml").write_text(yaml.safe_dump(_zoned_schema(k=3, size=4)))
    spec = {
        "name": "zoned",
        "dataset": {"name": "zoned", "path": "d.csv"},
        "schema": "schema.yaml",
        "phi": {"all_kway": [{"k": 2, "attributes": ["c0", "c1", "c2"]}]},
        "privacy": {"sigma": 5},
        "seed": 1,
        "engine": engine_name,
        "model_card": yaml.safe_load((REPO / "examples" / "census2011" / "app1.yaml").read_text())["model_card"],
    }
    path = tmp_path / f"spec-{engine_name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _write(tmp_path: Path, lines: list[str]) -> None:
    (tmp_path / "d.csv").write_text("c0,c1,c2,zone\n" + "\n".join(lines) + "\n")


def _lines() -> list[str]:
    return [",".join(map(str, r)) for r in _zoned_records(rows=3000, k=3, size=4).itertuples(index=False)]


@pytest.mark.parametrize(
    "mutate, expect",
    [
        (lambda rows: rows.__setitem__(2500, "3,x,1,hi"), "column 'c1': non-integer value(s) for integer codes"),
        (lambda rows: rows.__setitem__(2600, "0,1,2,hi"), "1 row(s) disagree with the lookup from 'c0' (first at"),
        (lambda rows: rows.__setitem__(2700, "0,1,2,lo,7"), "row 2,701 (line 2,702) has 5 field(s)"),
        # issue 25: extra empty fields were dropped silently, a short row padded with empty fields
        (lambda rows: rows.__setitem__(2700, "0,1,2,lo" + "," * 10_000), "row 2,701 (line 2,702) has 10,004"),
        (lambda rows: rows.__setitem__(1200, "0,1,2"), "row 1,201 (line 1,202) has 3 field(s)"),
    ],
    ids=["undeclared-value", "lookup-disagrees", "extra-field", "extra-empty-fields", "short-row"],
)
def test_the_dask_path_refuses_bad_data_in_one_line_like_duckdb(
    on_cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutate, expect
) -> None:
    """``engine: dask`` in the spec sends ``sdgov validate`` through the Dask engine, which refuses the file with
    the line the embedded engine gives."""
    calls: list[Path] = []
    encode = dask_engine.DaskEngine.encode
    monkeypatch.setattr(dask_engine.DaskEngine, "encode", lambda self, *a: calls.append(a[0]) or encode(self, *a))
    lines = _lines()
    mutate(lines)
    _write(tmp_path, lines)
    rc, out, err = _cli("validate", "--spec", str(_spec(tmp_path, "dask")))
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and expect in err, err
    assert calls == [tmp_path / "d.csv"]  # the spec's engine read it
    rc_embedded, _, err_embedded = _cli("validate", "--spec", str(_spec(tmp_path, "duckdb")))
    assert rc_embedded == 2 and expect in err_embedded
    if "readable" not in expect:  # the parsers' own words differ; a value's verdict is the same line
        assert err.replace("spec-dask", "spec-duckdb") == err_embedded


def test_the_sample_written_on_the_dask_cluster_is_the_same_file(on_cluster, tmp_path: Path) -> None:
    """Item 3: with ``engine: dask`` the sample's parts run on the cluster (four parts, here two workers) — and the
    released file is the same bytes as the one written in one pass here, with the progress reported per batch."""
    from sdgov.engines.dask_executor import DaskExecutor, cluster_executor
    from sdgov.generators.sampler import PART_CHUNKS, sample_to_parquet
    from tests.fixtures.sampling import chain_model, chain_schema

    model, *_ = chain_model()
    schema = chain_schema(model)
    chunk, rows = 100, 100 * PART_CHUNKS * 3 + 37  # four parts, the last one short
    seen: list[int] = []
    with cluster_executor() as executor:
        assert isinstance(executor, DaskExecutor) and executor.workers == 2
        written = sample_to_parquet(
            model, schema, rows, 5, tmp_path / "dask.parquet", chunk, lambda d, t: seen.append(d), executor
        )
    assert written == sample_to_parquet(model, schema, rows, 5, tmp_path / "here.parquet", chunk) == rows
    assert (tmp_path / "dask.parquet").read_bytes() == (tmp_path / "here.parquet").read_bytes()
    assert seen == [200 * PART_CHUNKS, rows], "two parts at a time, one per worker"


def test_the_generate_stage_picks_the_dask_executor_for_the_dask_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generate stage picks the Dask executor from the release's engine, and the process pool otherwise."""
    from sdgov.contracts import ArtifactRef, GenerateInput
    from sdgov.engines import dask_executor
    from sdgov.generators.settings import GeneratorSpec
    from sdgov.tasks import generate

    ref = ArtifactRef(name="m", path="x", sha256="0", bytes=0)
    inp = GenerateInput(measurements=ref, schema_file=ref, generator=GeneratorSpec(), rows=10, seed=0, out_dir=".")
    used = []
    monkeypatch.setattr(dask_executor, "_client", lambda: contextlib.nullcontext(_FakeClient()))
    with generate._executor(inp.model_copy(update={"engine": "dask"})) as ex:
        used.append(type(ex).__name__)
    assert used == ["DaskExecutor"]
    assert "engine" not in inp.model_dump(), "the default engine leaves the stage's input as it was"


class _FakeClient:
    def nthreads(self) -> dict[str, int]:
        return {"w1": 1, "w2": 1}


def test_line_endings_and_quoted_line_breaks_read_alike(on_cluster, tmp_path: Path) -> None:
    """Issue 25: a file whose lines end in CR alone was 'the file is empty', and a quoted line break (RFC 4180) was
    refused by the embedded engine though the docs say it reads one. Both engines and the in-memory reader read LF,
    CRLF and CR alike (the CR file cut into several Dask partitions); the embedded engine and the in-memory reader
    read a quoted line break, which the Dask engine refuses with the true reason, naming its line."""
    from sdgov.base.errors import DataError
    from sdgov.data.encoding import encode, read_csv_strict
    from sdgov.data.schema import Schema

    cols = [{"name": f"c{i}", "categories": [{"code": j, "label": str(j)} for j in range(3)]} for i in range(2)]
    schema = Schema.model_validate({"name": "nl", "identifiers": ["id"], "columns": cols})
    text = "id,c0,c1\n" + "".join(f"p{i},{i % 3},{i * 7 % 3}\n" for i in range(6000))
    reference = encode(read_csv_strict(_text(tmp_path / "lf.csv", text)), schema)
    for name, newline in (("crlf", "\r\n"), ("cr", "\r")):
        source = _text(tmp_path / f"{name}.csv", text.replace("\n", newline))
        embedded, _ = _same_encoding(source, schema, tmp_path, file_order=True)
        pd.testing.assert_frame_equal(pd.read_parquet(embedded), reference)
        pd.testing.assert_frame_equal(encode(read_csv_strict(source), schema), reference)
    quoted = _text(tmp_path / "quoted.csv", text.replace("p1,", '"p\n1",').replace("p2,", '"p,\r\n2",'))
    pd.testing.assert_frame_equal(
        pd.read_parquet(engine("duckdb").encode(quoted, schema, tmp_path / "q.parquet").path), reference
    )
    pd.testing.assert_frame_equal(encode(read_csv_strict(quoted), schema), reference)
    with pytest.raises(DataError, match="line 3 holds a line break inside a quoted field, which the Dask engine"):
        engine("dask").encode(quoted, schema, tmp_path / "q-dask.parquet")


def _text(path: Path, text: str) -> Path:
    path.write_bytes(text.encode())
    return path
