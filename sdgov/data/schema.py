"""The declared domain: every column, every category, every bin — written down before any data is seen.

Learning categories or ranges from the confidential data leaks it (a rare category shows up in the output only
when the record holding it is in the input). So the domain comes from a schema file written from public
documentation, and data that does not fit is refused, never widened to fit.

Reading and encoding data against the schema is :mod:`sdgov.data.encoding`.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, field_serializer, field_validator, model_validator

from sdgov.base.errors import SchemaError, shorten
from sdgov.base.hashing import sha256_json
from sdgov.base.loading import load_model_file
from sdgov.base.model import Frozen
from sdgov.data.structures import Lookup, LookupIndex, StructuralZero, ZeroCells

Code = int | str
Clique = tuple[str, ...]  # a set of attributes in a fixed order: one marginal, one model table

MAX_COLUMNS = 10_000  # columns in a schema or a data file's header (a 200k-column header is refused up front)
MAX_CATEGORIES = 1_000_000  # per column: more than the ONS cell limit, so it could not be measured even 1-way
MAX_EDGE = 1e15  # bin edges beyond this are a unit mistake (or 1e300); only an explicit open top bin (.inf)
MAX_HEADER_BYTES = 4 * 1024 * 1024
ReleaseRule = Literal["uniform", "midpoint", "label"]


def nfc(text: str) -> str:
    """Unicode NFC: the same name typed on two systems (a precomposed 'é' or 'e' + combining accent) is one name."""
    return unicodedata.normalize("NFC", text)


def check_attribute_name(name: str) -> str:
    """An attribute (column) name becomes part of file names, table headers and report paths: refuse a path
    separator or a control character (a line break, a tab, NUL, …), naming the attribute."""
    if "/" in name or "\\" in name:
        raise ValueError(f"attribute name {name!r} holds a path separator ('/' or '\\'): rename the attribute")
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name):
        raise ValueError(f"attribute name {name!r} holds a control character or line break: rename the attribute")
    return name


def repeated(items: list[str]) -> list[str]:
    """The items that occur more than once, sorted (one pass: schemas may list 10^5 categories)."""
    return sorted(k for k, n in Counter(items).items() if n > 1)


class Category(Frozen):
    code: Code
    label: str

    @field_validator("code")
    @classmethod
    def _nfc_code(cls, code: Code) -> Code:
        return nfc(code) if isinstance(code, str) else code

    @field_validator("label")
    @classmethod
    def _nfc_label(cls, label: str) -> str:
        return nfc(label)


class Column(Frozen):
    """A categorical column lists its categories; a numeric one declares bin edges.

    Bins are **left-closed, right-open** ``[lo, hi)``: a value equal to the top edge is outside the domain and
    refused (declare a higher edge, or ``.inf`` as the top edge for an open-ended last bin ``[lo, ∞)``).
    ``release_as`` says what the synthetic data holds for a numeric column: ``label`` (the bin's label, text —
    the default), ``midpoint`` (the bin's middle) or ``uniform`` (a number drawn uniformly within the bin with
    the public seed). An open-ended bin has no middle: ``midpoint`` and ``uniform`` release its lower edge.
    """

    name: str = Field(min_length=1)
    kind: Literal["categorical", "numeric"] = "categorical"
    description: str = ""
    categories: list[Category] | None = Field(default=None, max_length=MAX_CATEGORIES)
    bins: list[float] | None = Field(default=None, max_length=MAX_CATEGORIES + 1)
    bin_labels: list[str] | None = None
    release_as: ReleaseRule | None = Field(default=None, exclude_if=lambda v: v is None)  # absent: same hash
    nullable: bool = False
    missing_as: Code | None = Field(default=None, exclude_if=lambda v: v is None)  # absent: same hash

    @field_validator("name")
    @classmethod
    def _nfc_name(cls, name: str) -> str:
        return check_attribute_name(nfc(name))

    @field_serializer("bins", when_used="json")
    def _json_bins(self, bins: list[float] | None) -> list[float | str] | None:
        """An open top edge as the string "inf" in JSON (the schema hash, artifacts): JSON has no infinity."""
        return None if bins is None else [b if math.isfinite(b) else "inf" for b in bins]

    @model_validator(mode="after")
    def _check(self) -> Column:
        if self.kind == "categorical":
            self._check_categories()
        else:
            self._check_bins()
        return self

    def _check_categories(self) -> None:
        if not self.categories:
            raise ValueError(f"categorical column {self.name!r} needs a non-empty 'categories' list")
        if self.bins is not None or self.release_as is not None:
            raise ValueError(f"categorical column {self.name!r} must not declare 'bins' or 'release_as'")
        # data values are read stripped: codes that differ only by surrounding space would be one category
        dupes = repeated([str(c.code).strip() for c in self.categories])
        if dupes:
            shown = shorten(repr(dupes), 120)
            raise ValueError(
                f"column {self.name!r} declares category code(s) {shown} more than once "
                "(after Unicode NFC and trimming spaces)"
            )
        padded = [c.code for c in self.categories if isinstance(c.code, str) and c.code != c.code.strip()]
        if padded:
            raise ValueError(f"column {self.name!r}: code {shorten(repr(padded[0]), 60)} has surrounding spaces")
        if len({type(c.code) for c in self.categories}) > 1:
            raise ValueError(f"column {self.name!r} mixes integer and text codes; use one type")
        if self.missing_as is not None and str(self.missing_as) not in {str(c.code) for c in self.categories}:
            raise ValueError(
                f"column {self.name!r}: missing_as {shorten(repr(self.missing_as), 40)} is not one of its categories"
            )
        if self.missing_as is not None and self.nullable:
            raise ValueError(f"column {self.name!r}: declare either 'missing_as' or 'nullable', not both")

    def _check_bins(self) -> None:
        bins = self.bins
        if not bins or len(bins) < 2:
            raise ValueError(f"numeric column {self.name!r} needs 'bins': at least two increasing edges")
        inner = bins if bins[-1] != math.inf else bins[:-1]
        bad = [b for b in inner if not math.isfinite(b) or abs(b) > MAX_EDGE]
        if bad:
            raise ValueError(
                f"numeric column {self.name!r}: bin edge {bad[0]!r} is not a finite number within ±{MAX_EDGE:g} "
                "(only the top edge may be .inf, for an open-ended last bin)"
            )
        if any(b <= a for a, b in zip(bins, bins[1:])):
            raise ValueError(f"numeric column {self.name!r}: bin edges must be strictly increasing")
        if self.categories is not None:
            raise ValueError(f"numeric column {self.name!r} must not declare 'categories'")
        if self.missing_as is not None:
            raise ValueError(f"numeric column {self.name!r}: 'missing_as' is for categorical columns (use 'nullable')")
        if self.bin_labels is not None and len(self.bin_labels) != len(bins) - 1:
            raise ValueError(f"numeric column {self.name!r}: need one bin label per bin ({len(bins) - 1})")
        if self.bin_labels is not None and repeated([nfc(b).strip() for b in self.bin_labels]):
            raise ValueError(f"numeric column {self.name!r}: bin labels must differ")

    @property
    def rule(self) -> ReleaseRule:
        """How a numeric column's synthetic values are written (``label`` unless the schema says otherwise)."""
        return self.release_as or "label"

    @property
    def released_numbers(self) -> bool:
        """True when the synthetic file holds numbers for this column (a numeric column not released as labels)."""
        return self.kind == "numeric" and self.rule != "label"

    def representatives(self) -> list[float]:
        """The number released for each bin by ``midpoint`` (also the fallback of ``uniform`` for an open bin)."""
        edges = self.bins or []
        return [lo if math.isinf(hi) else lo + (hi - lo) / 2 for lo, hi in zip(edges, edges[1:])]

    @property
    def size(self) -> int:
        """Number of cells this column contributes (plus one for 'missing' when nullable)."""
        base = len(self.categories) if self.kind == "categorical" else len(self.bins) - 1  # type: ignore[arg-type]
        return base + int(self.nullable)

    @property
    def integer_codes(self) -> bool:
        """True for a categorical column whose codes are ints (judged by its first category), False otherwise."""
        return self.kind == "categorical" and isinstance(self.categories[0].code, int)  # type: ignore[index]

    def labels(self) -> list[str]:
        """Human-readable label of every cell index, in order."""
        if self.kind == "categorical":
            out = [c.label for c in self.categories]  # type: ignore[union-attr]
        else:
            edges = self.bins or []  # a numeric column has at least two edges (validated)
            out = self.bin_labels or [
                f"[{lo:g}, ∞)" if math.isinf(hi) else f"[{lo:g}, {hi:g})" for lo, hi in zip(edges, edges[1:])
            ]
        return out + (["(missing)"] if self.nullable else [])

    def codes(self) -> list[Code | float | None]:
        """The value written back for every cell index when decoding synthetic data (a ``uniform`` numeric
        column writes its bin's lower edge here; the sampler spreads it within the bin)."""
        if self.kind == "categorical":
            out: list[Code | float | None] = [c.code for c in self.categories]  # type: ignore[union-attr]
        elif self.rule == "label":
            out = list(self.labels()[: len(self.bins) - 1])  # type: ignore[arg-type]
        else:
            out = list(self.representatives())
        return out + ([None] if self.nullable else [])


class Schema(Frozen):
    """A dataset's declared domain."""

    name: str = Field(min_length=1)
    description: str = ""
    source: str = ""
    identifiers: list[str] = Field(
        default_factory=list, max_length=MAX_COLUMNS, description="ID columns: required in the data, never used"
    )
    columns: list[Column] = Field(min_length=1, max_length=MAX_COLUMNS)
    # How the data file is written (issue 15 item 7); absent: the schema's hash is as before.
    header: bool = Field(
        default=True,
        exclude_if=lambda v: v is True,
        description="false: the CSV has no header row; its fields are the identifiers then the columns, in order",
    )
    missing_values: list[str] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        max_length=100,
        description="tokens that mean 'missing' in the data (e.g. UCI Adult's '?'), besides an empty field",
    )
    # public structure (sdgov.data.structures); absent when empty, so a schema without any keeps its hash
    lookups: list[Lookup] = Field(default_factory=list, exclude_if=lambda v: not v)
    structural_zeros: list[StructuralZero] = Field(default_factory=list, exclude_if=lambda v: not v)

    @field_validator("identifiers")
    @classmethod
    def _nfc_identifiers(cls, names: list[str]) -> list[str]:
        return [check_attribute_name(nfc(n)) for n in names]

    @field_validator("missing_values")
    @classmethod
    def _nfc_tokens(cls, tokens: list[str]) -> list[str]:
        out = [nfc(t).strip() for t in tokens]
        if any(not t for t in out):
            raise ValueError("a missing-value token must not be empty (an empty field is always missing)")
        return out

    @model_validator(mode="after")
    def _unique(self) -> Schema:
        dupes = repeated([c.name for c in self.columns] + list(self.identifiers))
        if dupes:
            raise ValueError(f"column name(s) {dupes} declared more than once")
        self.lookup_index()  # each raises ValueError naming the first problem
        self.zero_cells()
        return self

    @property
    def file_columns(self) -> list[str]:
        """The data file's columns: the identifiers, then the modelled columns (the order of a header-less file)."""
        return list(self.identifiers) + self.names

    @property
    def derived(self) -> dict[str, str]:
        """Lookup column → its source column: columns attached after sampling, never modelled."""
        return {lk.column: lk.source for lk in self.lookups}

    def lookup_index(self) -> list[LookupIndex]:
        """Every lookup as ``derived cell = index[source cell]``; an incomplete or unknown table is a ValueError."""
        names = {c.name for c in self.columns}
        out: list[LookupIndex] = []
        for lk in self.lookups:
            where = f"lookup {lk.column!r} from {lk.source!r}"
            for n in (lk.column, lk.source):
                if n not in names:
                    raise ValueError(f"{where}: {n!r} is not a declared column")
            col, src = self.by_name[lk.column], self.by_name[lk.source]
            if col.kind != "categorical" or src.kind != "categorical":
                raise ValueError(f"{where}: lookups map categorical codes (both columns must be categorical)")
            if lk.source in self.derived or lk.column == lk.source:
                raise ValueError(f"{where}: the source is itself a lookup column; derive both from a modelled one")
            if repeated([x.column for x in self.lookups]):
                raise ValueError(f"{where}: column {lk.column!r} has more than one lookup")
            if src.nullable and not col.nullable:
                raise ValueError(f"{where}: the source may be missing, so {lk.column!r} must be nullable")
            keys = [str(c.code) for c in src.categories or []]
            missing = [k for k in keys if k not in lk.table]
            unknown = [k for k in lk.table if k not in keys]
            if missing or unknown:
                what = f"source code(s) {missing[:5]} not in the table" if missing else f"unknown code(s) {unknown[:5]}"
                raise ValueError(f"{where}: {what}; the table maps every declared code of {lk.source!r} once")
            targets = [str(c.code) for c in col.categories or []]
            bad = sorted({str(v) for v in lk.table.values()} - set(targets))
            if bad:
                raise ValueError(f"{where}: maps to undeclared code(s) {bad[:5]} of {lk.column!r}")
            index = [targets.index(str(lk.table[k])) for k in keys] + ([col.size - 1] if src.nullable else [])
            out.append(LookupIndex(lk.column, lk.source, np.asarray(index, dtype=np.int32)))
        return out

    def zero_cells(self) -> list[ZeroCells]:
        """Every structural zero as cell indices; an unknown column or code is a ValueError."""
        out: list[ZeroCells] = []
        for i, z in enumerate(self.structural_zeros):
            cells: list[tuple[int, ...]] = []
            for name, codes in z.cells.items():
                col = self.by_name.get(name)
                where = f"structural_zeros[{i}]"
                if col is None or col.kind != "categorical":
                    raise ValueError(f"{where} names {name!r}, which is not a declared categorical column")
                if name in self.derived:
                    raise ValueError(
                        f"{where} names lookup column {name!r}; state the zero on its source {self.derived[name]!r}"
                    )
                keys = [str(c.code) for c in col.categories or []]
                unknown = [c for c in codes if str(c).strip() not in keys]
                if unknown:
                    raise ValueError(f"{where}: code(s) {unknown[:5]} are not declared for {name!r}")
                cells.append(tuple(sorted({keys.index(str(c).strip()) for c in codes})))
            if all(len(c) == self.by_name[n].size for n, c in zip(z.cells, cells)):
                raise ValueError(f"structural_zeros[{i}] rules out every combination of {list(z.cells)}")
            out.append(ZeroCells(tuple(z.cells), tuple(cells), z.description))
        return out

    @cached_property
    def by_name(self) -> dict[str, Column]:
        """Column name → column, for every column of the schema (lookup columns included)."""
        return {c.name: c for c in self.columns}

    @property
    def names(self) -> list[str]:
        """Every column's name, in schema order: the canonical attribute order of cliques and domains."""
        return [c.name for c in self.columns]

    def domain(self, attrs: tuple[str, ...] | list[str] | None = None) -> dict[str, int]:
        """Attribute → number of categories, for ``attrs`` (default: every column) in that order: the form the
        measurements, the generators and the audits take a domain in."""
        return {a: self.by_name[a].size for a in (self.names if attrs is None else attrs)}

    def shape(self, attrs: tuple[str, ...] | list[str]) -> tuple[int, ...]:
        """The marginal's array shape over ``attrs``: each attribute's number of cells, in the order given."""
        return tuple(self.by_name[a].size for a in attrs)

    def cells(self, attrs: tuple[str, ...] | list[str]) -> int:
        """Number of cells in the marginal over ``attrs``, multiplied in float64 so a huge one cannot overflow."""
        return int(np.prod(self.shape(attrs), dtype=np.float64))

    def sha256(self) -> str:
        """Hex SHA-256 of the schema's canonical JSON, as the agreement records it (``schema_sha256``)."""
        return sha256_json(self.model_dump(mode="json"))


def load_schema(path: str | Path) -> Schema:
    """Read and validate the schema file at ``path``; an unreadable or invalid file is one ``SchemaError`` line."""
    return load_model_file(Schema, path, SchemaError, "schema")
