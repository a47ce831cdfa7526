"""The utility ``Metric`` protocol: one measure of how close synthetic records are to the real ones.

A metric is a small object with a ``name`` (its key in each dataset's section of the report), a ``title``, and
``compute(ctx, synthetic)`` returning a typed (pydantic) result. Records come as a
:class:`~sdgov.engines.recordset.RecordSet`: exact tables of every record (``table``), and ``sample()`` for a measure
that
fits a model (all the records, or a uniform sample at scale), so a metric works at any number of records. The
report runs every registered metric (:data:`sdgov.utility.registry.METRICS`) on the synthetic data and on each
baseline, puts the results in :class:`~sdgov.utility.report.UtilityReport`, shows each metric's ``line`` in the
report's overview table and its ``radar`` scores (if any) on the radar chart. Adding a metric is one module and one
line in ``METRICS`` (docs/extending.md shows a worked example).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
from pydantic import BaseModel

from sdgov.data.schema import Schema
from sdgov.engines.recordset import SAMPLE_ROWS, RecordSet


@dataclass(frozen=True)
class ReportSettings:
    """How thoroughly the utility report measures (seeds, rows, replicates): carried to every metric in its
    :class:`MetricContext`."""

    specks_seeds: int = 20
    baseline_specks_seeds: int = 10  # the baselines are reference points: their median, not their spread, is read
    specks_rows: int = 3000  # records per side in each SPECKS fit
    specks_trees: int = 30
    wasserstein_replicates: int = 100
    pmse_rows: int = 20000  # records per side for the CART propensity model
    pmse_permutations: int = 5
    holdout: float = 0.2  # share of the real records held out for task models
    baselines: bool = True
    seed: int = 0
    sample_rows: int = SAMPLE_ROWS  # records the models see at most per record set (sdgov.engines.recordset)


@dataclass(frozen=True)
class MetricContext:
    """Everything a metric may use besides the records it scores. ``real`` holds the encoded confidential records
    (their tables, their sample); the association matrix and the Φ pairs are computed once for all metrics."""

    real: RecordSet
    schema: Schema
    attributes: list[str]
    cliques: list[tuple[str, ...]]
    real_association: np.ndarray
    in_phi: np.ndarray
    settings: ReportSettings


R = TypeVar("R", bound=BaseModel)


class Metric(Protocol[R]):
    name: str
    title: str

    def compute(self, ctx: MetricContext, synthetic: RecordSet) -> R:
        """The measure for ``synthetic`` (encoded like ``ctx.real``) against ``ctx.real``."""
        ...

    def line(self, result: R) -> str:
        """The result in one line, for the report's overview table."""
        ...

    def radar(self, result: R) -> dict[str, float | None]:
        """Axes this metric puts on the radar chart, each in [0, 1] with 1 = as the real data (may be empty)."""
        ...
