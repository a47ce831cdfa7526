"""The synthetic file is validated against the schema and encoded once per release (issue 26): the audit stage's
structural check does it through :meth:`AuditContext.synthetic_problem`, keeps the cells for the utility and card
stages, and a file that does not fit is one line, with no cells kept. (The count through a real release:
``tests/system/test_read_once.py``.)"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from sdgov.audits.protocol import AuditContext
from sdgov.data.encoding import encode, read_csv_strict
from sdgov.data.schema import load_schema
from sdgov.engines.duckdb_engine import DuckDBEngine


def _context(synthetic: Path, cells: Path) -> AuditContext:
    from sdgov.demo import inputs

    schema = load_schema(inputs() / "schema.yaml")
    return AuditContext(
        agreement=SimpleNamespace(attributes=list(schema.domain().keys())),  # type: ignore[arg-type]
        agreement_sha256="",
        schema=schema,
        measurements=None,  # type: ignore[arg-type]
        measurements_ref=None,  # type: ignore[arg-type]
        plan=None,  # type: ignore[arg-type]
        generate_record=None,  # type: ignore[arg-type]
        model_info={},
        synthetic_file=synthetic,
        requested_rows=0,
        read_confidential=lambda: pd.DataFrame(),
        synthetic_codes_file=cells,
    )


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data

    schema = load_schema(inputs() / "schema.yaml")
    path = write_demo_data(schema, tmp_path / "synthetic.csv", rows=60)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame[schema.names].to_csv(path, index=False)  # as a release writes it: the schema's columns, no identifier
    return path


def test_the_synthetic_file_is_encoded_once_and_its_cells_kept(synthetic: Path, monkeypatch) -> None:
    context = _context(synthetic, synthetic.with_name("synthetic_codes.parquet"))
    calls: list[Path] = []
    real = DuckDBEngine.encode_columns
    monkeypatch.setattr(DuckDBEngine, "encode_columns", lambda self, p, *a: calls.append(p) or real(self, p, *a))
    assert context.synthetic_problem() is None and context.synthetic_problem() is None
    assert calls == [synthetic]  # asked twice, encoded once
    attrs = context.agreement.attributes
    expected = encode(read_csv_strict(synthetic), context.schema, columns=attrs)
    pd.testing.assert_frame_equal(pd.read_parquet(context.synthetic_codes_file), expected, check_dtype=False)


def test_a_synthetic_file_outside_the_schema_is_one_line_and_keeps_no_cells(synthetic: Path) -> None:
    lines = synthetic.read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index("Sex")] = "Martian"
    synthetic.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")
    context = _context(synthetic, synthetic.with_name("synthetic_codes.parquet"))
    problem = context.synthetic_problem()
    assert problem is not None and "Martian" in problem and "\n" not in problem
    assert not context.synthetic_codes_file.exists()
