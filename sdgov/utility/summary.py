"""Utility summary: how close the synthetic marginals are to the real ones.

TVD (total variation distance, ½Σ|p−q|, in [0, 1]) on proportions, RMSE on counts with the synthetic table
scaled to the real record total. Computed on the confidential data by the controller; these numbers are
*not* covered by the DP guarantee and the card says so.
"""

from __future__ import annotations

import itertools

import numpy as np

from sdgov.base.model import Frozen
from sdgov.data.schema import Clique
from sdgov.engines.recordset import RecordSet


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


def marginal_error(real: RecordSet, synth: RecordSet, clique: Clique, in_phi: bool) -> MarginalError:
    """One clique's error: TVD of the proportions and RMSE in counts with the synthetic table scaled to the real
    total."""
    r = real.table(clique).astype(np.float64).ravel()
    s = synth.table(clique).astype(np.float64).ravel()
    p, q = r / r.sum(), s / max(s.sum(), 1.0)
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


def utility_summary(real: RecordSet, synth: RecordSet, attributes: list[str], cliques: list[Clique]) -> UtilitySummary:
    """The errors of every Φ clique, every attribute and every pair (``in_phi``: the table lies inside a Φ clique), each
    record set counted in one batch."""
    covered = {frozenset(s) for c in cliques for k in range(1, len(c) + 1) for s in itertools.combinations(c, k)}
    for records in (real, synth):
        records.prefetch(summary_tables(attributes, cliques))

    def err(c: Clique) -> MarginalError:
        return marginal_error(real, synth, c, frozenset(c) in covered)

    return UtilitySummary(
        real_rows=real.rows,
        synthetic_rows=synth.rows,
        phi=[err(c) for c in cliques],
        one_way=[err((a,)) for a in attributes],
        two_way=[err(c) for c in itertools.combinations(attributes, 2)],
    )
