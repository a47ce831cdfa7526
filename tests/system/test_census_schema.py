"""The census 2011 teaching-file schema matches the ONS variable list, and the 50k extract fits it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sdgov.data.schema import load_schema
from sdgov.engines import load_encoded

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "examples" / "census2011" / "schema.yaml"
DATA_PATH = ROOT / ".." / "shared" / "data" / "census2011_teaching_50k.csv"

HEADER = [
    "Person ID",
    "Region",
    "Residence Type",
    "Family Composition",
    "Population Base",
    "Sex",
    "Age",
    "Marital Status",
    "Student",
    "Country of Birth",
    "Health",
    "Ethnic Group",
    "Religion",
    "Economic Activity",
    "Occupation",
    "Industry",
    "Hours worked per week",
    "Approximated Social Grade",
]

# Number of categories per variable as the ONS variable list declares them ("N (also -9)" counts as N + 1).
EXPECTED_COUNTS = {
    "Region": 10,
    "Residence Type": 2,
    "Family Composition": 6 + 1,
    "Population Base": 3,
    "Sex": 2,
    "Age": 8,
    "Marital Status": 5,
    "Student": 2,
    "Country of Birth": 2 + 1,
    "Health": 5 + 1,
    "Ethnic Group": 5 + 1,
    "Religion": 9 + 1,
    "Economic Activity": 9 + 1,
    "Occupation": 9 + 1,
    "Industry": 12 + 1,
    "Hours worked per week": 4 + 1,
    "Approximated Social Grade": 4 + 1,
}

# Variables whose list entry says "(also -9)".
HAS_NO_CODE_REQUIRED = {
    "Family Composition",
    "Country of Birth",
    "Health",
    "Ethnic Group",
    "Religion",
    "Economic Activity",
    "Occupation",
    "Industry",
    "Hours worked per week",
    "Approximated Social Grade",
}


@pytest.fixture(scope="module")
def schema():
    return load_schema(SCHEMA_PATH)


def test_columns_and_order(schema):
    assert schema.identifiers == ["Person ID"]
    assert len(schema.columns) == 17
    assert schema.names == HEADER[1:]
    assert all(c.kind == "categorical" for c in schema.columns)


def test_category_counts_match_variable_list(schema):
    assert set(EXPECTED_COUNTS) == set(schema.names)
    got = {c.name: len(c.categories) for c in schema.columns}
    assert got == EXPECTED_COUNTS


def test_code_types_and_no_code_required(schema):
    for col in schema.columns:
        codes = [c.code for c in col.categories]
        if col.name in {"Region", "Residence Type"}:
            assert all(isinstance(c, str) for c in codes), col.name
        else:
            assert all(isinstance(c, int) for c in codes), col.name
        assert (-9 in codes) == (col.name in HAS_NO_CODE_REQUIRED), col.name
        assert all(c.label.strip() for c in col.categories), col.name


def test_extract_fits_schema(schema):
    if not DATA_PATH.is_file():
        pytest.skip(f"teaching-file extract not available at {DATA_PATH}")
    with DATA_PATH.open(encoding="utf-8") as fh:
        assert fh.readline().rstrip("\r\n").split(",") == HEADER
    encoded = load_encoded(DATA_PATH, schema)
    assert len(encoded) == 50_000
    assert list(encoded.columns) == schema.names
    for col in schema.columns:
        codes = encoded[col.name].to_numpy()
        assert codes.dtype == np.int32, col.name
        assert codes.min() >= 0 and codes.max() < col.size, col.name
