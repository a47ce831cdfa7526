"""Φ canonicalisation and hashing, and schema encoding round trips (property tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdgov.agreement.resolve import resolve
from sdgov.agreement.spec import ReleaseSpec
from sdgov.data.encoding import decode, encode
from sdgov.data.schema import Category, Column, Schema

SCHEMA = Schema(
    name="t",
    identifiers=["id"],
    columns=[
        Column(name="A", categories=[Category(code=c, label=f"a{c}") for c in (1, 2, -9)]),
        Column(name="B", categories=[Category(code=c, label=c) for c in ("x", "y", "z", "w")]),
        Column(name="C", categories=[Category(code=c, label=str(c)) for c in range(1, 6)]),
        Column(name="N", kind="numeric", bins=[0, 10, 20, 65, 120], nullable=True),
    ],
)


def spec(**kw) -> ReleaseSpec:
    base = {
        "name": "t",
        "dataset": {"name": "d", "path": "d.csv"},
        "schema": "s.yaml",
        "phi": {"marginals": [["B", "A"], ["C", "B"]]},
        "privacy": {"rho": 1.0},
        "seed": 1,
    }
    base.update(kw)
    return ReleaseSpec.model_validate(base)


def test_agreement_hash_ignores_order_but_not_content():
    a = resolve(spec(), SCHEMA)
    b = resolve(spec(phi={"marginals": [["B", "C"], ["A", "B"]]}), SCHEMA)
    assert a.cliques == [("A", "B"), ("B", "C")] and a.sha256() == b.sha256()
    assert resolve(spec(privacy={"rho": 0.5}), SCHEMA).sha256() != a.sha256()
    assert resolve(spec(seed=2), SCHEMA).sha256() != a.sha256()


def test_all_kway_shorthand_expands():
    a = resolve(spec(phi={"all_kway": [{"k": 2, "attributes": ["A", "B", "C"]}]}), SCHEMA)
    assert a.cliques == [("A", "B"), ("A", "C"), ("B", "C")] and a.attributes == ["A", "B", "C"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=50
    )
)
def test_decode_then_encode_is_identity(rows):
    codes = pd.DataFrame(rows, columns=["A", "B", "C", "N"]).astype(np.int32)
    df = decode(codes, SCHEMA)
    df["N"] = [
        None if v is None or pd.isna(v) else {"[0, 10)": 5, "[10, 20)": 15, "[20, 65)": 30, "[65, 120)": 100}[v]
        for v in df["N"]
    ]
    df.insert(0, "id", range(len(df)))
    back = encode(df.astype(object).where(df.notna(), None).astype(str).replace("None", ""), SCHEMA)
    assert (back.to_numpy() == codes.to_numpy()).all()


@pytest.mark.parametrize(
    "value,ok", [("1", True), ("+2", True), ("-9", True), ("01", True), ("1.0", False), ("3", False)]
)
def test_integer_codes_are_matched_as_integers(value, ok):
    from sdgov.base.errors import DataError

    df = pd.DataFrame({"id": ["1"], "A": [value], "B": ["x"], "C": ["1"], "N": ["3"]})
    if ok:
        assert encode(df, SCHEMA)["A"].iloc[0] in (0, 1, 2)
    else:
        with pytest.raises(DataError, match="'A'"):
            encode(df, SCHEMA)
