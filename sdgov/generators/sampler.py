"""Streaming, seeded sampler: synthetic records from a :class:`CliqueModel`, chunk by chunk into Parquet.

mbi's own ``synthetic_data`` draws from the global ``np.random`` and holds every row in memory, looping in
Python over parent configurations. Here each column is drawn for a whole chunk in one vectorised step: every
row's parent configuration ``p`` and a uniform ``u`` give ``p + u``, located by one ``searchsorted`` in the
concatenation of all conditional CDFs shifted by their row number (row ``p`` of that table spans ``[p, p+1]``).
Memory is one chunk, whatever the row count; chunk ``i`` uses its own child of ``SeedSequence(seed)`` (for its
cells, and another for a ``uniform`` column's within-bin numbers), so the output depends only on (model, rows,
seed, chunk size) — bit for bit — and any chunk can be drawn alone. At scale the chunks are grouped into parts
of :data:`PART_CHUNKS` chunks, each part a Parquet file written by one independent call that an
:class:`~sdgov.base.executor.Executor` may run anywhere (the release's generate stage: Prefect task runs), and
the parts are then streamed, row group by row group, into the one released file: the same bytes whatever ran
them, in memory flat in N.

Two ways to draw a column, both deterministic per seed and chunk (the default: :mod:`.sampling_default`):

* ``"iid"`` (the default until issue 40, and what an agreement stating no sampling still draws): each record's
  uniform drawn independently — the records are i.i.d. draws from the model, so the sample's marginals scatter around
  the model's as a multinomial's do.
* ``"round"`` (the default since issue 40): within each parent configuration of a chunk, the records (in a random
  order drawn per column) get the systematic uniforms ``(k + U) / n_p`` (``k`` their rank, ``n_p`` the
  configuration's records, ``U`` one uniform per configuration): each cell of the column then gets ⌊n_p·q⌋ or ⌈n_p·q⌉
  records, never more than one away from the model's expected count — mbi's ``synthetic_data(method="round")``
  (randomised rounding), done for a whole chunk in one vectorised step. The synthetic marginals along the sampling
  order match the model's up to rounding instead of a multinomial's spread (the sampling noise that puts an i.i.d.
  sample at a bootstrap's distance from the data). The records are no longer independent: a statistic that assumes
  i.i.d. draws (an audit's variance) must allow for it — ``docs/decomposability.md`` says how the audits do.

Why rounding became the default only with issue 40: a first stratified variant (2026-11-21) cut App 1's Φ-marginal
TVD at σ = 10 from about 0.018 to 0.007, but made the decomposability audit's then unpaired t-test anti-conservative on
our own honest generator (App 2 honest IPF rejected in 12 of 100 seeds at α = 0.05, against 0 of 74 with i.i.d.
draws). Since issue 29 the audit pairs its fits and tests a paired difference, and with ``"round"`` both audits were
measured calibrated (20 seeds per app: decomposability's honest false alarms 1/20 and 0/20, the privacy audit 20/20
clean on Apps 1 and 2; ``docs/decomposability.md``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sdgov.base.errors import InternalError
from sdgov.base.executor import Executor, SerialExecutor
from sdgov.data.schema import Column, Schema
from sdgov.data.structures import ZeroCells, zeros_within
from sdgov.generators import sampling_default
from sdgov.generators.model import CliqueModel
from sdgov.generators.sampling_default import Sampling

CHUNK_ROWS = 262_144
PART_CHUNKS = 16  # chunks per part (4.2M rows): one task run each
_SPREAD = 2**31  # the spawn-key branch of the within-bin draws: cells are the same bits whatever the release rule


def chunk_rng(seed: int, chunk: int, branch: tuple[int, ...] = ()) -> np.random.Generator:
    """Chunk ``chunk``'s generator: the ``chunk``-th child of ``SeedSequence(seed)`` (what ``spawn`` gives)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*branch, chunk)))


MAX_REDRAWS = 1000  # rounds of redrawing records that fell in a structural zero (a model honouring them needs 0)


@dataclass(frozen=True)
class _ColumnPlan:
    name: str
    parents: tuple[str, ...]
    parent_shape: tuple[int, ...]
    k: int
    shifted_cdf: np.ndarray  # length P*k; row p holds p + CDF(col | parents = p)


def plan_columns(model: CliqueModel) -> list[_ColumnPlan]:
    """Each column, in the model's order, with the conditional CDFs it is drawn from: given the largest set of earlier
    columns sharing a clique with it (a parent configuration without mass draws uniformly)."""
    plans: list[_ColumnPlan] = []
    used: list[str] = []
    for col in model.order:
        holding = [c for c in model.cliques if col in c]
        # the largest set of already-drawn attributes that shares a clique with col
        parents: tuple[str, ...] = ()
        for clique in holding:
            ps = tuple(a for a in used if a in clique)
            if len(ps) > len(parents):
                parents = ps
        table = model.marginal(parents + (col,))
        k = model.domain[col]
        cond = table.reshape(-1, k)
        row_sums = cond.sum(axis=1, keepdims=True)
        cond = np.divide(cond, row_sums, out=np.full_like(cond, 1.0 / k), where=row_sums > 0)
        cdf = np.cumsum(cond, axis=1)
        cdf[:, -1] = 1.0
        shifted = (cdf + np.arange(cdf.shape[0])[:, None]).ravel()
        plans.append(_ColumnPlan(col, parents, tuple(model.domain[a] for a in parents), k, shifted))
        used.append(col)
    return plans


def systematic_uniforms(row: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniforms in [0, 1) for records grouped by ``row``: within each group of ``n_p`` records, in a random order,
    ``(k + U) / n_p`` for ranks ``k = 0 … n_p − 1`` and one ``U`` per group — so every interval of the group's CDF
    of length ``q`` holds ⌊n_p·q⌋ or ⌈n_p·q⌉ of them (systematic sampling, randomised rounding)."""
    n = len(row)
    order = np.lexsort((rng.random(n), row))  # by group, a random order inside each
    grouped = row[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    sizes = np.diff(np.r_[starts, n])
    group = np.repeat(np.arange(len(starts)), sizes)
    rank = np.arange(n) - starts[group]
    u = np.empty(n)
    u[order] = (rank + rng.random(len(starts))[group]) / sizes[group]
    return u


def sample_chunk(
    plans: list[_ColumnPlan], n: int, rng: np.random.Generator, sampling: Sampling = "iid"
) -> dict[str, np.ndarray]:
    """``n`` records drawn column by column from ``plans`` with ``rng`` (``sampling``: i.i.d. or rounded, module
    docstring), as int32 cells; structural zeros are not checked here."""
    data: dict[str, np.ndarray] = {}
    for p in plans:
        if p.parents:
            row = np.ravel_multi_index(tuple(data[a] for a in p.parents), p.parent_shape).astype(np.int64)
        else:
            row = np.zeros(n, dtype=np.int64)
        # searchsorted(shifted_cdf, row + u, side="right") − row·k, counted inside each record's own row of k
        # entries: every earlier row ends at ≤ row, so it is the same number, but reads k neighbouring values per
        # record instead of ~log₂(P·k) scattered ones (App 3's last column has 1.56M entries: 2–3× faster)
        v = row + (systematic_uniforms(row, rng) if sampling == "round" else rng.random(n))
        idx = np.count_nonzero(p.shifted_cdf.reshape(-1, p.k)[row] <= v[:, None], axis=1)
        data[p.name] = np.minimum(idx, p.k - 1).astype(np.int32)
    return data


def _redraw_impossible(
    data: dict[str, np.ndarray], plans: list[_ColumnPlan], zeros: Sequence[ZeroCells], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Redraw every record that fell in a structural zero (rejection sampling: the model conditioned on the
    possible cells). A generator that fits the zeros exactly (PGM, IPF) never draws one, so this costs nothing."""
    for _ in range(MAX_REDRAWS):
        bad = np.zeros(len(next(iter(data.values()))), dtype=bool)
        for z in zeros:
            bad |= z.violations(data)
        if not bad.any():
            return data
        again = sample_chunk(plans, int(bad.sum()), rng)
        for a in data:
            data[a][bad] = again[a]
    raise InternalError(
        f"records still fall in a structural zero after {MAX_REDRAWS} redraws: the model puts almost all its mass "
        "on impossible combinations"
    )


def _chunk(
    plans: list[_ColumnPlan], n: int, rng: np.random.Generator, zeros: Sequence[ZeroCells], sampling: Sampling
) -> dict[str, np.ndarray]:
    """One chunk of ``n`` records; any that fell in a structural zero redrawn (i.i.d.) from the same generator."""
    chunk = sample_chunk(plans, n, rng, sampling)
    return _redraw_impossible(chunk, plans, zeros, rng) if zeros else chunk


def iter_chunks(
    model: CliqueModel,
    rows: int,
    seed: int,
    chunk_rows: int = CHUNK_ROWS,
    zeros: Sequence[ZeroCells] = (),
    sampling: Sampling | None = None,
) -> Iterator[dict[str, np.ndarray]]:
    """The ``rows`` records as chunks of ``chunk_rows``, chunk ``i`` drawn from :func:`chunk_rng` ``(seed, i)`` with its
    structural zeros redrawn: the same inputs give the same chunks, bit for bit. ``sampling``: i.i.d. or rounded
    (module docstring; None: the default, :mod:`.sampling_default`)."""
    plans = plan_columns(model)
    zeros = zeros_within(zeros, model.attributes)
    how = sampling or sampling_default.SAMPLING
    for i in range(max(1, -(-rows // chunk_rows))):
        yield _chunk(plans, min(chunk_rows, rows - i * chunk_rows), chunk_rng(seed, i), zeros, how)


def _arrow_type(col: Column) -> pa.DataType:
    """Integer codes as int64, numeric columns released as numbers as float64, everything else as text."""
    return pa.int64() if col.integer_codes else pa.float64() if col.released_numbers else pa.string()


def arrow_schema_of(schema: Schema, attributes: tuple[str, ...]) -> pa.Schema:
    """The released file's Arrow schema for ``attributes``: int64 codes, float64 numbers or text, each nullable as
    declared."""
    fields = [pa.field(a, _arrow_type(schema.by_name[a]), nullable=schema.by_name[a].nullable) for a in attributes]
    return pa.schema(fields, metadata={b"sdgov": b"synthetic records; codes as declared in the schema"})


def _lookup(schema: Schema, a: str) -> pa.Array:
    col = schema.by_name[a]
    return pa.array(col.codes(), type=_arrow_type(col))


def _spread_uniformly(col: Column, cells: np.ndarray, rng: np.random.Generator) -> pa.Array:
    """A ``uniform`` numeric column: each record's number drawn uniformly in its bin ``[lo, hi)`` (an open top
    bin and the missing cell keep their value from :meth:`Column.codes`)."""
    edges = np.asarray(col.bins, dtype=float)
    n_bins = len(edges) - 1
    binned = cells < n_bins
    lo = edges[np.minimum(cells, n_bins - 1)]
    hi = edges[np.minimum(cells, n_bins - 1) + 1]
    closed = binned & np.isfinite(hi)
    u = rng.random(len(cells))
    value = np.where(closed, lo + u * np.where(closed, hi - lo, 0.0), lo)
    value = np.where(closed, np.minimum(value, np.nextafter(hi, lo)), value)  # stay below hi despite rounding
    return pa.array(value, type=pa.float64(), mask=~binned if col.nullable else None)


def released_columns(schema: Schema, model: CliqueModel) -> tuple[str, ...]:
    """The columns of the synthetic file, in schema order: the model's, and the lookups attached to them."""
    attached = {lk.column for lk in schema.lookup_index() if lk.source in model.attributes}
    return tuple(a for a in schema.names if a in model.attributes or a in attached)


def write_part(
    model: CliqueModel,
    schema: Schema,
    rows: int,
    seed: int,
    chunk_rows: int,
    chunks: range,
    path: Path,
    sampling: Sampling | None = None,
) -> int:
    """Draw chunks ``chunks`` of a ``rows``-record sample and write them (decoded to schema codes) to ``path``, one
    row group per chunk; return the records written. Depends on nothing but its arguments."""
    how = sampling or sampling_default.SAMPLING
    plans = plan_columns(model)
    zeros = zeros_within(schema.zero_cells(), model.attributes)
    attached = {lk.column: lk for lk in schema.lookup_index() if lk.source in model.attributes}
    released = released_columns(schema, model)
    arrow_schema = arrow_schema_of(schema, released)
    lookups = {a: _lookup(schema, a) for a in released}
    uniform = {
        a for a in model.attributes if schema.by_name[a].kind == "numeric" and schema.by_name[a].rule == "uniform"
    }
    done = 0
    with pq.ParquetWriter(path, arrow_schema, compression="zstd") as writer:
        for i in chunks:
            chunk = _chunk(plans, min(chunk_rows, rows - i * chunk_rows), chunk_rng(seed, i), zeros, how)
            for a, lk in attached.items():  # lookup columns: the source's cell through the public table
                chunk[a] = lk.index[chunk[lk.source]]
            spread = chunk_rng(seed, i, (_SPREAD,)) if uniform else None
            cols = [
                _spread_uniformly(schema.by_name[a], chunk[a], spread)  # type: ignore[arg-type]
                if a in uniform
                else lookups[a].take(pa.array(chunk[a]))
                for a in released
            ]
            writer.write_table(pa.Table.from_arrays(cols, schema=arrow_schema))
            done += len(cols[0])
    return done


def parts_in_flight(executor: Executor) -> int:
    """Parts handed to ``executor`` at once: one per worker it says it has (``workers``; below 1: every core), so
    every worker is busy while memory stays one chunk per worker, whatever N; 4 for an executor that does not say
    (the default serial one: progress every 4 parts)."""
    workers = getattr(executor, "workers", None)
    if not isinstance(workers, int):
        return 4
    return workers if workers >= 1 else (os.cpu_count() or 1)


def sample_to_parquet(
    model: CliqueModel,
    schema: Schema,
    rows: int,
    seed: int,
    path: Path,
    chunk_rows: int = CHUNK_ROWS,
    progress: Callable[[int, int], None] | None = None,
    executor: Executor | None = None,
    sampling: Sampling | None = None,
) -> int:
    """Write ``rows`` synthetic records (decoded to schema codes) to ``path`` atomically, drawn as ``sampling`` says
    (None: the default, :mod:`.sampling_default`); return rows written.

    The parts (:func:`write_part`) run through ``executor`` (default: here, one after the other), as many at a
    time as it has workers (:func:`parts_in_flight`) so that ``progress`` hears of each batch; then they are
    streamed into ``path`` and removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    parts_dir = path.with_name(f".{path.name}.parts")
    n_chunks = max(1, -(-rows // chunk_rows))
    parts = [range(s, min(s + PART_CHUNKS, n_chunks)) for s in range(0, n_chunks, PART_CHUNKS)]
    run = executor or SerialExecutor()
    how = sampling or sampling_default.SAMPLING
    done = 0
    try:
        if len(parts) == 1:
            done = write_part(model, schema, rows, seed, chunk_rows, parts[0], tmp, how)
        else:
            parts_dir.mkdir(exist_ok=True)
            files = [parts_dir / f"part-{k:05d}.parquet" for k in range(len(parts))]
            calls = [(model, schema, rows, seed, chunk_rows, r, f, how) for r, f in zip(parts, files)]
            step = parts_in_flight(run)
            for start in range(0, len(calls), step):
                done += sum(run.map(write_part, calls[start : start + step], "sample-part"))
                if progress:
                    progress(done, rows)
            with pq.ParquetWriter(
                tmp, arrow_schema_of(schema, released_columns(schema, model)), compression="zstd"
            ) as writer:
                for f in files:
                    part = pq.ParquetFile(f)
                    for g in range(part.num_row_groups):
                        writer.write_table(part.read_row_group(g))
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(parts_dir, ignore_errors=True)
    if progress and len(parts) == 1:
        progress(done, rows)
    return done
