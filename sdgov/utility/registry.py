"""The utility metrics every report runs, in report order (their radar axes come in this order too).

Adding a metric: write its module (see :mod:`sdgov.utility.metric` and docs/extending.md), add one line here.
"""

from __future__ import annotations

from typing import Any

from sdgov.utility.generic import Bivariate, Marginals, Pmse, Specks, Univariate, Wasserstein
from sdgov.utility.metric import Metric

METRICS: tuple[Metric[Any], ...] = (
    Univariate(),
    Bivariate(),
    Specks(),
    Pmse(),
    Wasserstein(),
    Marginals(),
)
