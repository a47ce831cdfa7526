"""Public structure declared in the schema: lookups (a column derived from another by a public table) and
structural zeros (combinations that cannot occur).

Both are facts from public documentation, like the categories themselves, so using them costs no privacy budget:

- a **lookup** column (region from local authority, a coarser age band from age) is *not modelled*: the model
  never sees it, no marginal measures it, and it is attached to every synthetic record after sampling by
  mapping the record's source value through the declared table — so a synthetic record's two geographies always
  agree, whatever the model learnt;
- a **structural zero** (a child who is retired) is a set of cells of a few columns that no record can fall in.
  The generators fit with them as exact zeros (mbi 2.x ``Constraint`` potentials of ``-inf`` for Private-PGM, zeroed
  cells of the joint for IPF), the noisy counts measured on those cells are discarded (set to 0 before the fit:
  the true count is publicly known to be 0, so this is post-processing; the marginal's ρ is what it is — the
  noise was drawn on the whole table), and the sampler redraws any record that would fall in one, so no synthetic
  record carries an impossible combination whatever generator is plugged in.

This module holds the declarations (validated against the schema's columns by :class:`sdgov.data.schema.Schema`)
and the array forms the generators and the sampler use, in cell-index space.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import Field, field_validator

from sdgov.base.model import Frozen

Code = int | str


class Lookup(Frozen):
    """``column`` is derived from ``source`` by ``table`` (source code → column code), a public table."""

    column: str = Field(min_length=1, description="the derived column (declared in 'columns'); never modelled")
    source: str = Field(min_length=1, description="the column it is derived from (modelled as usual)")
    table: dict[str, Code] = Field(min_length=1, description="every source code → the derived column's code")
    description: str = ""

    @field_validator("table", mode="before")
    @classmethod
    def _text_keys(cls, table: object) -> object:
        """YAML reads ``1: A`` with an integer key: codes are compared as text, as the data is read."""
        return {str(k).strip(): v for k, v in table.items()} if isinstance(table, Mapping) else table


class StructuralZero(Frozen):
    """Every combination of the listed codes is impossible: e.g. ``{Age: [1], Economic Activity: [1, 2, 5]}``."""

    description: str = ""
    cells: dict[str, list[Code]] = Field(min_length=2, description="column → codes; their product is impossible")

    @field_validator("cells")
    @classmethod
    def _nonempty(cls, cells: dict[str, list[Code]]) -> dict[str, list[Code]]:
        empty = [c for c, codes in cells.items() if not codes]
        if empty:
            raise ValueError(f"structural zero lists no codes for {empty}")
        return cells


@dataclass(frozen=True)
class ZeroCells:
    """A structural zero in cell-index space: ``attributes`` and, per attribute, the impossible cell indices."""

    attributes: tuple[str, ...]
    cells: tuple[tuple[int, ...], ...]  # one tuple of impossible cell indices per attribute
    description: str = ""

    def mask(self, shape: Mapping[str, int]) -> np.ndarray:
        """Boolean table over ``attributes`` (axes in that order): True where the combination is impossible."""
        out = np.ones(tuple(shape[a] for a in self.attributes), dtype=bool)
        for axis, idx in enumerate(self.cells):
            keep = np.zeros(shape[self.attributes[axis]], dtype=bool)
            keep[list(idx)] = True
            out &= np.expand_dims(keep, [i for i in range(len(self.attributes)) if i != axis])
        return out

    def invalid_combinations(self, shape: Mapping[str, int]) -> np.ndarray:
        """The impossible combinations as rows of cell indices (mbi's ``Constraint(invalid=...)`` form)."""
        return np.argwhere(self.mask(shape)).astype(np.int64)

    def violations(self, records: Mapping[str, np.ndarray]) -> np.ndarray:
        """Boolean per record: True where the record falls in this zero."""
        hit: np.ndarray | None = None
        for a, idx in zip(self.attributes, self.cells):
            h = np.isin(records[a], idx)
            hit = h if hit is None else hit & h
        assert hit is not None  # a zero has at least two attributes (validated)
        return hit


def zeros_within(zeros: Sequence[ZeroCells], attributes: Sequence[str]) -> list[ZeroCells]:
    """The zeros whose columns are all modelled (a zero on a column that is not released constrains nothing)."""
    have = set(attributes)
    return [z for z in zeros if set(z.attributes) <= have]


def impossible(zeros: Sequence[ZeroCells], attributes: Sequence[str], shape: Sequence[int]) -> np.ndarray:
    """Boolean table over ``attributes`` (axes in that order): True on every cell some zero makes impossible.

    Only a zero whose columns all lie in ``attributes`` makes whole cells of the table impossible; a cell that
    sums over one of a zero's columns holds possible records too."""
    out = np.zeros(tuple(shape), dtype=bool)
    sizes = dict(zip(attributes, shape))
    for z in zeros:
        if set(z.attributes) <= set(attributes):
            mask = np.transpose(z.mask(sizes), [z.attributes.index(a) for a in attributes if a in z.attributes])
            rest = [i for i, a in enumerate(attributes) if a not in z.attributes]
            out |= np.broadcast_to(np.expand_dims(mask, rest), out.shape)
    return out


def discard_zero_noise(table: np.ndarray, clique: Sequence[str], zeros: Sequence[ZeroCells]) -> np.ndarray:
    """A noisy marginal with the cells known to be structurally zero set to 0 (their noise is discarded)."""
    out = np.array(table, copy=True)
    out[impossible(zeros, clique, out.shape)] = 0
    return out


@dataclass(frozen=True)
class LookupIndex:
    """A lookup in cell-index space: ``derived_cell = index[source_cell]``."""

    column: str
    source: str
    index: np.ndarray
