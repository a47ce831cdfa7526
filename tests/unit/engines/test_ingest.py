"""Ingest that real files need (issue 15 item 7): UCI Adult as distributed — no header row, ', ' separators, '?' for
a missing value — releases under a schema written from its public description (``examples/uci_adult``).

No download is possible here, so the test writes a UCI-Adult-like file with the schema's declared values; it
also checks Parquet input, ``sdgov schema check`` (controller only: nothing written) and the one-line refusals.
The release itself is ``tests/system/test_uci_adult.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sdgov.engines import load_encoded
from tests.conftest import tree_bytes
from tests.fixtures.adult import MISSING, write_adult
from tests.fixtures.cli import cli


def test_headerless_file_with_question_marks_encodes_and_the_parquet_copy_agrees(adult, tmp_path: Path) -> None:
    inputs, schema, records = adult
    codes = load_encoded(inputs / "adult.data", schema)
    assert len(codes) == len(records)
    for j, name in enumerate(schema.file_columns):
        col = schema.by_name[name]
        if name in MISSING:  # '?' is the declared 'Unknown' category, and nothing else is
            unknown = [str(c.code) for c in col.categories].index("Unknown")  # type: ignore[union-attr]
            assert (codes[name] == unknown).sum() == sum(r[j] == "?" for r in records) > 0
    frame = pd.DataFrame(records, columns=schema.file_columns)
    frame["age"] = frame["age"].astype(int)  # a Parquet export has typed columns
    frame.to_parquet(tmp_path / "adult.parquet", index=False)
    pd.testing.assert_frame_equal(load_encoded(tmp_path / "adult.parquet", schema), codes)


def test_schema_check_lists_undeclared_values_and_writes_nothing(adult) -> None:
    inputs, schema, records = adult
    rc, out, _ = cli("schema", "check", "--spec", str(inputs / "spec.yaml"))
    assert rc == 0 and "ok: every column and value is declared" in out
    records[5][1], records[6][1], records[7][13] = "Self-employed", "Self-employed", "Atlantis"
    write_adult(inputs / "adult.data", records)
    before = tree_bytes(inputs)
    rc, out, _ = cli("schema", "check", "--spec", str(inputs / "spec.yaml"), "--json")
    assert rc == 1
    found = json.loads(out)["undeclared_values"]
    assert found == {
        "workclass": [{"value": " Self-employed", "rows": 2}],
        "native-country": [{"value": " Atlantis", "rows": 1}],
    }
    assert tree_bytes(inputs) == before  # listed on the terminal only


@pytest.mark.parametrize(
    "mutate, expect",
    [
        (lambda rs: rs[3].append("7"), "row 4 (line 4) has 16 field(s), but the file has 15"),  # no header row
        (lambda rs: rs[3].__setitem__(9, "?"), "'sex': 1 empty/NaN or missing-token value(s)"),  # no missing_as
        (lambda rs: rs[3].__setitem__(0, "?"), "'age': 1 empty/NaN or missing-token value(s)"),
        (lambda rs: rs[3].__setitem__(0, "seventeen"), "'age': non-numeric value(s)"),
    ],
    ids=["extra-field", "question-mark-where-none-declared", "question-mark-numeric", "text-in-numeric"],
)
def test_refusals_are_one_line(adult, mutate, expect) -> None:
    inputs, _, records = adult
    mutate(records)
    write_adult(inputs / "adult.data", records)
    rc, _, err = cli("validate", "--spec", str(inputs / "spec.yaml"))
    assert rc == 2 and len(err.strip().splitlines()) == 1 and expect in err, err
