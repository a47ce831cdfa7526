"""The streaming sampler: right distribution, conditionals respected, deterministic in (model, rows, seed)."""

from __future__ import annotations

import numpy as np
import pytest

from sdgov.generators.model import CliqueModel
from tests.fixtures.sampling import chain_model, chain_schema, collect, collect_as


def test_marginals_and_conditionals_match_the_model():
    model, ab, bc = chain_model()
    n = 400_000
    s = collect(model, n, 7, 65_536)
    emp_ab = np.zeros((3, 4))
    np.add.at(emp_ab, (s["A"], s["B"]), 1)
    emp_bc = np.zeros((4, 5))
    np.add.at(emp_bc, (s["B"], s["C"]), 1)
    assert 0.5 * np.abs(emp_ab / n - ab).sum() < 0.005
    assert 0.5 * np.abs(emp_bc / n - bc).sum() < 0.005
    # C depends on A only through B: conditional independence holds in the sample
    emp_abc = np.zeros((3, 4, 5))
    np.add.at(emp_abc, (s["A"], s["B"], s["C"]), 1)
    expect = (emp_ab / n)[:, :, None] * (bc / bc.sum(1, keepdims=True))[None]
    assert 0.5 * np.abs(emp_abc / n - expect).sum() < 0.01


def test_same_seed_same_rows_other_seed_other_rows():
    model, *_ = chain_model()
    a, b, c = collect(model, 10_000, 1, 4096), collect(model, 10_000, 1, 4096), collect(model, 10_000, 2, 4096)
    assert all((a[k] == b[k]).all() for k in a)
    assert any((a[k] != c[k]).any() for k in a)


def test_zero_probability_parent_rows_stay_in_range():
    ab = np.array([[0.5, 0.0], [0.5, 0.0]])
    model = CliqueModel(
        attributes=("A", "B"),
        domain={"A": 2, "B": 2},
        cliques=[("A", "B")],
        marginals=[ab],
        order=["A", "B"],
        total=1.0,
    )
    s = collect(model, 5000, 3, 1000)
    assert set(np.unique(s["B"])) == {0} and s["A"].max() <= 1


@pytest.mark.parametrize("rows", [1, 999, 1000, 1001])
def test_exact_row_counts_across_chunk_boundaries(rows):
    model, *_ = chain_model()
    assert len(collect(model, rows, 5, 1000)["A"]) == rows


class _Shuffled:
    """An executor that runs the parts out of order, in a stand-in for task runs finishing in any order."""

    def __init__(self) -> None:
        self.calls = 0

    def map(self, fn, calls, label):
        self.calls += len(calls)
        results = {i: fn(*args) for i, args in reversed(list(enumerate(calls)))}
        return [results[i] for i in range(len(calls))]


def test_parts_written_anywhere_make_the_same_file_as_one_pass(tmp_path):
    """Partitioned sampling (issue 15): each part is reproducible from (seed, its chunks) alone, so the file is the
    same bytes whoever wrote the parts and in whatever order, and its cells are exactly ``iter_chunks``' stream."""
    import pandas as pd

    from sdgov.generators.sampler import PART_CHUNKS, sample_to_parquet

    model, *_ = chain_model()
    schema = chain_schema(model)
    chunk, rows = 100, 100 * PART_CHUNKS * 3 + 37  # four parts, the last one short
    seen: list[tuple[int, int]] = []
    shuffled = _Shuffled()
    a = sample_to_parquet(model, schema, rows, 5, tmp_path / "a.parquet", chunk, executor=shuffled)
    b = sample_to_parquet(
        model, schema, rows, 5, tmp_path / "b.parquet", chunk, progress=lambda d, t: seen.append((d, t))
    )
    assert a == b == rows and shuffled.calls == 4
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert seen[-1] == (rows, rows)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "b.parquet"]  # parts removed
    stream = collect(model, rows, 5, chunk)
    written = pd.read_parquet(tmp_path / "a.parquet")
    assert all((written[k].to_numpy() == stream[k]).all() for k in stream)


def test_as_many_parts_in_flight_as_the_executor_has_workers():
    """Every worker busy, and no more parts at once than workers (memory: one chunk per worker)."""
    import os

    from sdgov.base.executor import ProcessExecutor, SerialExecutor
    from sdgov.generators.sampler import parts_in_flight

    assert parts_in_flight(ProcessExecutor(3)) == 3
    assert parts_in_flight(ProcessExecutor(0)) == (os.cpu_count() or 1)  # 0: every core
    assert parts_in_flight(SerialExecutor()) == parts_in_flight(_Shuffled()) == 4  # no worker count: 4 at a time


def test_each_draw_is_the_searchsorted_of_its_uniform_in_the_whole_shifted_cdf():
    """The sampler looks a record's uniform up inside its parent configuration's row of the CDF; that must be the
    same number as ``searchsorted`` over the whole concatenated CDF (the definition), zero-probability categories
    and empty parent rows included — so faster lookups never change a sample."""
    from sdgov.generators.sampler import plan_columns, sample_chunk

    rng = np.random.default_rng(3)
    joint = rng.dirichlet(np.full(3 * 4 * 5, 0.3)).reshape(3, 4, 5)  # many near-zero cells
    joint[1, 2, :] = 0.0  # a parent configuration with no mass: its row is uniform
    joint[:, :, 3] = 0.0  # a category never drawn
    model = CliqueModel(
        attributes=("A", "B", "C"),
        domain={"A": 3, "B": 4, "C": 5},
        cliques=[("A", "B", "C")],
        marginals=[joint / joint.sum()],
        order=["A", "B", "C"],
        total=1.0,
    )
    plans = plan_columns(model)
    got = sample_chunk(plans, 50_000, np.random.default_rng(11))
    ref_rng, ref = np.random.default_rng(11), {}
    for p in plans:  # the definition, with the same stream of uniforms
        row = np.ravel_multi_index(tuple(ref[a] for a in p.parents), p.parent_shape) if p.parents else 0
        idx = np.searchsorted(p.shifted_cdf, row + ref_rng.random(50_000), side="right") - row * p.k
        ref[p.name] = np.minimum(idx, p.k - 1).astype(np.int32)
    assert all(np.array_equal(got[a], ref[a]) for a in ref)
    assert not np.any(got["C"] == 3)


def test_rounded_sampling_puts_every_cell_within_one_record_of_the_models_count():
    """``sampling="round"``: the first column's counts are ⌊n·q⌋ or ⌈n·q⌉, and inside each parent configuration the
    child's counts are within one record of the configuration's records times the model's conditional — where
    i.i.d. draws scatter by about √(n·q)."""
    model, ab, bc = chain_model()
    n = 50_000
    rounded = collect_as(model, n, 11, "round")
    a = np.bincount(rounded["A"], minlength=3)
    assert np.all(np.abs(a - n * ab.sum(1)) < 1)
    joint = np.zeros((3, 4))
    np.add.at(joint, (rounded["A"], rounded["B"]), 1)
    assert np.all(np.abs(joint - a[:, None] * ab / ab.sum(1, keepdims=True)) < 1)
    pair = np.zeros((4, 5))
    np.add.at(pair, (rounded["B"], rounded["C"]), 1)
    assert np.all(np.abs(pair - joint.sum(0)[:, None] * bc / bc.sum(1, keepdims=True)) < 1)
    iid = collect_as(model, n, 11, "iid")
    assert np.abs(np.bincount(iid["A"], minlength=3) - n * ab.sum(1)).max() > 5


def test_rounded_sampling_is_deterministic_per_seed_and_keeps_the_conditional_independence():
    """Same seed, same rows (bit for bit); another seed, other rows; and C still depends on A only through B
    (the random order inside each configuration is drawn per column, independent of the earlier columns)."""
    model, ab, bc = chain_model()
    a, b, c = (collect_as(model, 20_000, s, "round", 4096) for s in (3, 3, 4))
    assert all((a[k] == b[k]).all() for k in a) and any((a[k] != c[k]).any() for k in a)
    n = 200_000
    s = collect_as(model, n, 5, "round")
    emp = np.zeros((3, 4, 5))
    np.add.at(emp, (s["A"], s["B"], s["C"]), 1)
    expect = ab[:, :, None] * (bc / bc.sum(1, keepdims=True))[None]
    assert 0.5 * np.abs(emp / n - expect).sum() < 0.006


def test_the_default_sampling_is_rounded_and_iid_is_one_statement_away():
    """The default draws are the rounded ones since issue 40, bit for bit whichever way they are asked for; i.i.d.
    draws, asked for by name (an agreement made before: ``GeneratorSpec.drawn``), are other rows."""
    model, *_ = chain_model()
    default, rounded = collect(model, 5000, 9, 1000), collect_as(model, 5000, 9, "round", 1000)
    iid = collect_as(model, 5000, 9, "iid", 1000)
    assert all((default[k] == rounded[k]).all() for k in default)
    assert any((default[k] != iid[k]).any() for k in default)
