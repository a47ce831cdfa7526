"""Utility summary: how close the synthetic marginals are to the real ones.

TVD (total variation distance, ½Σ|p−q|, in [0, 1]) on proportions, RMSE on counts with the synthetic table
scaled to the real record total. Computed on the confidential data by the controller; these numbers are
*not* covered by the DP guarantee and the card says so.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from sdgov.base.model import Frozen
from sdgov.data.schema import Clique
from sdgov.engines.recordset import RecordSet

if TYPE_CHECKING:
    from sdgov.agreement.spec import AgreedSplit
    from sdgov.engines.base import RowFilter


class MarginalError(Frozen):
    clique: Clique
    in_phi: bool
    tvd: float
    rmse: float
    cells: int


class UtilitySummary(Frozen):
    real_rows: int
    synthetic_rows: int
    phi: list[MarginalError]
    one_way: list[MarginalError]
    two_way: list[MarginalError]

    @property
    def max_phi_tvd(self) -> float:
        """The largest TVD over the Φ marginals (ValueError if Φ is empty)."""
        return max(m.tvd for m in self.phi)


def marginal_error(
    real: RecordSet, synth: RecordSet, clique: Clique, in_phi: bool, records: RowFilter | None = None
) -> MarginalError:
    """One clique's error: TVD of the proportions and RMSE in counts with the synthetic table scaled to the real
    total (of the records ``records`` selects in both sets, when given: a part of a split synthesis)."""
    r = real.table(clique, records).astype(np.float64).ravel()
    s = synth.table(clique, records).astype(np.float64).ravel()
    p, q = r / max(r.sum(), 1.0), s / max(s.sum(), 1.0)
    return MarginalError(
        clique=clique,
        in_phi=in_phi,
        tvd=round(float(0.5 * np.abs(p - q).sum()), 6),
        rmse=round(float(np.sqrt(np.mean((r - q * r.sum()) ** 2))), 4),
        cells=int(r.size),
    )


def summary_tables(attributes: list[str], cliques: list[Clique]) -> list[Clique]:
    """Every table the summary compares: Φ's, and all one- and two-way tables of the attributes."""
    return [*cliques, *((a,) for a in attributes), *itertools.combinations(attributes, 2)]


def utility_summary(
    real: RecordSet,
    synth: RecordSet,
    attributes: list[str],
    cliques: list[Clique],
    records: RowFilter | None = None,
) -> UtilitySummary:
    """The errors of every Φ clique, every attribute and every pair (``in_phi``: the table lies inside a Φ clique), each
    record set counted in one batch — of the records ``records`` selects in both, when given."""
    covered = {frozenset(s) for c in cliques for k in range(1, len(c) + 1) for s in itertools.combinations(c, k)}
    for data in (real, synth):
        data.prefetch(summary_tables(attributes, cliques), records)

    def err(c: Clique) -> MarginalError:
        return marginal_error(real, synth, c, frozenset(c) in covered, records)

    def rows(data: RecordSet) -> int:
        return data.rows if records is None else int(data.table((records[0],), records).sum())

    return UtilitySummary(
        real_rows=rows(real),
        synthetic_rows=rows(synth),
        phi=[err(c) for c in cliques],
        one_way=[err((a,)) for a in attributes],
        two_way=[err(c) for c in itertools.combinations(attributes, 2)],
    )


def part_summaries(real: RecordSet, synth: RecordSet, split: AgreedSplit) -> dict[str, UtilitySummary]:
    """A split synthesis: each part's synthetic records against that part's real records, on the part's own Φ and
    every one- and two-way table of its attributes — a part poorly served by its model shows here even when the
    concatenated file looks fine overall."""
    return {
        p.name: utility_summary(real, synth, p.attributes, list(p.cliques), (split.attribute, list(p.cells)))
        for p in split.parts
    }
