#!/usr/bin/env python
"""A census-like file of any size, for the scale benchmarks: the ONS teaching extract expanded by perturbation.

    python benchmarks/census_like.py --rows 55000000 --csv /tmp/c55m.csv --parquet /tmp/c55m.parquet

Each output record starts from a random record of the extract and has two of its 17 attributes redrawn from
the values of other random records (so every column keeps roughly its marginal distribution and most pairs
their association). A perturbed record that still equals a record of the extract in all 17 attributes is
perturbed again, until none does: **no real record is ever copied unchanged**. ``Person ID`` is a fresh
sequence number. Rows are made and written in chunks of 1M (flat memory); output is seeded and reproducible.
The files are large (55M rows: ~2.4 GB CSV, ~0.3 GB Parquet) — write them under /tmp and delete them after.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sdgov.data.encoding import decode  # noqa: E402
from sdgov.data.schema import load_schema  # noqa: E402
from sdgov.engines import load_encoded  # noqa: E402

SCHEMA = REPO / "examples" / "census2011" / "schema.yaml"
EXTRACT = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"  # the default; --extract FILE
CHUNK = 1_000_000
REDRAWN = 2  # attributes redrawn per record


def perturbed_chunks(rows: int, seed: int, chunk: int = CHUNK, extract: Path = EXTRACT):
    """Yield (first person id, encoded chunk as {column: int32 array}) until ``rows`` records are made."""
    schema = load_schema(SCHEMA)
    codes = load_encoded(extract, schema)
    names = schema.names
    real = codes[names].to_numpy(np.int64)
    sizes = tuple(schema.by_name[n].size for n in names)
    real_keys = np.unique(np.ravel_multi_index(real.T, sizes))
    rng = np.random.default_rng(seed)
    done = 0
    while done < rows:
        n = min(chunk, rows - done)
        out = real[rng.integers(0, len(real), n)]
        todo = np.arange(n)
        while len(todo):
            for _ in range(REDRAWN):
                col = rng.integers(0, len(names), len(todo))
                out[todo, col] = real[rng.integers(0, len(real), len(todo)), col]
            keys = np.ravel_multi_index(out[todo].T, sizes)
            todo = todo[np.isin(keys, real_keys)]  # still a real record: perturb again
        yield done, {name: out[:, j].astype(np.int32) for j, name in enumerate(names)}
        done += n


def write(rows: int, seed: int, csv: Path | None, parquet: Path | None, extract: Path = EXTRACT) -> dict[str, float]:
    schema = load_schema(SCHEMA)
    t0 = time.perf_counter()
    csv_writer = pq_writer = None
    try:
        for first, enc in perturbed_chunks(rows, seed, extract=extract):
            df = decode(enc, schema)
            df.insert(0, "Person ID", np.arange(first, first + len(df), dtype=np.int64) + 10_000_000)
            table = pa.Table.from_pandas(df, preserve_index=False)
            if csv is not None:
                csv_writer = csv_writer or pacsv.CSVWriter(
                    csv, table.schema, write_options=pacsv.WriteOptions(quoting_style="needed")
                )
                csv_writer.write_table(table)
            if parquet is not None:
                pq_writer = pq_writer or pq.ParquetWriter(parquet, table.schema, compression="zstd")
                pq_writer.write_table(table)
            print(f"{first + len(df):,} rows ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    finally:
        for w in (csv_writer, pq_writer):
            if w is not None:
                w.close()
    return {"rows": rows, "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--csv", type=Path)
    ap.add_argument("--parquet", type=Path)
    ap.add_argument("--extract", type=Path, default=EXTRACT, help="the census extract (default: ../shared/data)")
    args = ap.parse_args()
    print(write(args.rows, args.seed, args.csv, args.parquet, args.extract))


if __name__ == "__main__":
    main()
