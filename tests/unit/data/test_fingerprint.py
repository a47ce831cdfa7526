"""The dataset fingerprint on a domain too large for one integer per record (the lexicographic-sort path)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdgov.data.fingerprint import fingerprint
from sdgov.data.schema import Schema


def _wide(columns: int, size: int) -> Schema:
    cats = [{"code": i, "label": f"c{i}"} for i in range(size)]
    return Schema.model_validate(
        {"name": "wide", "columns": [{"name": f"x{j:02d}", "categories": cats} for j in range(columns)]}
    )


def test_a_domain_beyond_63_bits_is_still_order_free_and_content_sensitive():
    schema = _wide(22, 10)  # 10^22 cells: no mixed-radix int64 key
    assert np.prod([float(c.size) for c in schema.columns]) > 2**63
    rng = np.random.default_rng(1)
    codes = pd.DataFrame({c.name: rng.integers(0, 10, 5000).astype(np.int32) for c in schema.columns})
    base = fingerprint(codes, schema)
    assert fingerprint(codes.sample(frac=1, random_state=2)[codes.columns[::-1]], schema) == base
    changed = codes.copy()
    changed.iloc[0, 5] = (changed.iloc[0, 5] + 1) % 10
    assert fingerprint(changed, schema) != base
    swapped = codes.copy()  # the same values under other column names is other content
    swapped[["x00", "x01"]] = codes[["x01", "x00"]].to_numpy()
    assert fingerprint(swapped, schema) != base


def test_the_cell_encoding_is_part_of_the_identity():
    """The same indices under a schema that maps them to other categories are other records."""
    schema = _wide(3, 4)
    other = Schema.model_validate(
        {
            "name": "wide",
            "columns": [
                {"name": c.name, "categories": [{"code": 3 - i, "label": f"c{3 - i}"} for i in range(4)]}
                for c in schema.columns
            ],
        }
    )
    codes = pd.DataFrame({c.name: np.arange(8, dtype=np.int32) % 4 for c in schema.columns})
    assert fingerprint(codes, schema) != fingerprint(codes, other)
