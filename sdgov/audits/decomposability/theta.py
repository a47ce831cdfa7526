"""Θ, the joint table over the audited attributes held at its occupied cells, and φ, its Φ marginals."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from sdgov.audits.generator_protocol import AuditError
from sdgov.data.schema import Clique

MAX_JOINT = 2**62


class ThetaSpace:
    """The joint table over the audited attributes, held only at the occupied cells of D*."""

    def __init__(self, records: pd.DataFrame, cliques: list[Clique], domain: dict[str, int]) -> None:
        self.attributes = list(domain)
        self.domain = dict(domain)
        self.shape = tuple(domain[a] for a in self.attributes)
        if math.prod(self.shape) >= MAX_JOINT:
            raise AuditError(
                f"the joint table has {math.prod(self.shape):.3g} cells, too many to index",
                "decomposability",
                "audit fewer attributes at a time",
            )
        missing = [a for a in self.attributes if a not in records.columns]
        if missing:
            raise AuditError(f"the data lacks audited column(s) {missing}", "decomposability")
        if len(records) == 0:
            raise AuditError("no records to audit on", "decomposability")
        self.pos = {a: i for i, a in enumerate(self.attributes)}
        self.cliques = [tuple(sorted(c, key=self.pos.__getitem__)) for c in cliques]
        flat = np.ravel_multi_index(tuple(records[a].to_numpy().astype(np.int64) for a in self.attributes), self.shape)
        self.cells, counts = np.unique(flat, return_counts=True)
        self.x = counts.astype(np.int64)
        self.values = np.stack(np.unravel_index(self.cells, self.shape), axis=1).astype(np.int64)  # C × m
        self.records = pd.DataFrame({a: self.values[:, i].astype(np.int32) for i, a in enumerate(self.attributes)})
        self.index = {int(c): i for i, c in enumerate(self.cells)}

    def extend(self, flats: np.ndarray) -> None:
        """Add (empty) cells to the cell list — cells an extremal dataset may put records into."""
        new = np.setdiff1d(np.unique(flats), self.cells)
        if len(new) == 0:
            return
        cells = np.concatenate([self.cells, new])
        order = np.argsort(cells)
        self.cells = cells[order]
        self.x = np.concatenate([self.x, np.zeros(len(new), dtype=np.int64)])[order]
        self.values = np.stack(np.unravel_index(self.cells, self.shape), axis=1).astype(np.int64)
        self.records = pd.DataFrame({a: self.values[:, i].astype(np.int32) for i, a in enumerate(self.attributes)})
        self.index = {int(c): i for i, c in enumerate(self.cells)}

    @property
    def C(self) -> int:
        """The number of cells held (the occupied cells of D*, plus any added by :meth:`extend`)."""
        return len(self.cells)

    def inside_phi(self, s: tuple[str, ...]) -> bool:
        """Whether the attribute set ``s`` lies inside one Φ marginal."""
        return any(set(s) <= set(c) for c in self.cliques)

    def minimal_non_phi_sets(self) -> list[tuple[str, ...]]:
        """The attribute sets outside Φ none of whose proper subsets is, by size then attribute order."""
        out: list[tuple[str, ...]] = []
        for k in range(1, len(self.attributes) + 1):
            for s in itertools.combinations(self.attributes, k):
                if not self.inside_phi(s) and not any(set(t) <= set(s) for t in out):
                    out.append(s)
        return out

    def phi_of(self, weights: np.ndarray) -> list[np.ndarray]:
        """Exact integer Φ marginals of a count vector on the occupied cells."""
        out = []
        for c in self.cliques:
            idx = [self.pos[a] for a in c]
            flat = np.ravel_multi_index(tuple(self.values[:, i] for i in idx), tuple(self.shape[i] for i in idx))
            out.append(_int_bincount(flat, weights, math.prod(self.shape[i] for i in idx)))
        return out

    def indicator_matrix(self) -> sparse.csr_matrix:
        """Marginal-indicator rows of Φ restricted to the occupied cells (rows: Φ cells, columns: occupied cells)."""
        blocks = []
        for c in self.cliques:
            idx = [self.pos[a] for a in c]
            size = math.prod(self.shape[i] for i in idx)
            flat = np.ravel_multi_index(tuple(self.values[:, i] for i in idx), tuple(self.shape[i] for i in idx))
            blocks.append(sparse.csr_matrix((np.ones(self.C), (flat, np.arange(self.C))), shape=(size, self.C)))
        return sparse.vstack(blocks).tocsr()

    def describe_cell(self, i: int, labels: dict[str, list[str]] | None) -> dict[str, Any]:
        """Cell ``i`` as attribute → value: its label where ``labels`` has one, else its cell index."""
        out = {}
        for j, a in enumerate(self.attributes):
            v = int(self.values[i, j])
            out[a] = labels[a][v] if labels and a in labels and v < len(labels[a]) else v
        return out


def _int_bincount(flat: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.int64)
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, flat, w)
    return out
