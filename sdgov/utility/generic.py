"""The generic fidelity measures as :class:`~sdgov.utility.metric.Metric` plug-ins.

Each wraps the function that computes it (:mod:`.univariate`, :mod:`.bivariate`, :mod:`.distinguish`,
:mod:`.wasserstein`) and types its result; the numbers are those functions' own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sdgov.base.model import Frozen
from sdgov.engines.recordset import RecordSet
from sdgov.utility import bivariate, distinguish, univariate, wasserstein
from sdgov.utility.metric import MetricContext
from sdgov.utility.summary import UtilitySummary, utility_summary


def ratio_score(ratio: float | None) -> float | None:
    """A ratio to a null (≈ 1 = indistinguishable) on [0, 1]: 1 up to ratio 1, then 1 − log10(ratio) / 2 (0 at 100)."""
    if ratio is None:
        return None
    return float(1 - min(1.0, np.log10(max(ratio, 1.0)) / 2))


class UnivariateResult(Frozen):
    columns: list[dict[str, Any]]
    mean_coverage: float
    mean_similarity: float


class Univariate:
    name, title = "univariate", "One-way similarity and coverage"

    def compute(self, ctx: MetricContext, synthetic: RecordSet) -> UnivariateResult:
        """Coverage and similarity of every column (:func:`~sdgov.utility.univariate.univariate`)."""
        return UnivariateResult(**univariate.univariate(ctx.real, synthetic, ctx.schema, ctx.attributes))

    def line(self, result: UnivariateResult) -> str:
        """Mean similarity and mean coverage, to three decimals."""
        return f"mean similarity {result.mean_similarity:.3f}, mean coverage {result.mean_coverage:.3f}"

    def radar(self, result: UnivariateResult) -> dict[str, float | None]:
        """Two axes: mean one-way similarity and mean coverage."""
        return {"univariate similarity": result.mean_similarity, "coverage": result.mean_coverage}


class BivariateResult(Frozen):
    synthetic: list[list[float]]
    B: list[list[float]]
    mean_B: float | None
    mean_B_in_phi: float | None
    mean_B_not_in_phi: float | None
    worst_pairs: list[dict[str, Any]]


class Bivariate:
    name, title = "bivariate", "Pairwise association, B = 1 − |R − S| / 2"

    def compute(self, ctx: MetricContext, synthetic: RecordSet) -> BivariateResult:
        """B against the real association matrix held in ``ctx`` (:func:`~sdgov.utility.bivariate.bivariate`)."""
        return BivariateResult(
            **bivariate.bivariate(ctx.real_association, synthetic, ctx.schema, ctx.attributes, ctx.in_phi)
        )

    def line(self, result: BivariateResult) -> str:
        """Mean B off the diagonal, to four decimals (— without a pair)."""
        return "mean B —" if result.mean_B is None else f"mean B {result.mean_B:.4f}"

    def radar(self, result: BivariateResult) -> dict[str, float | None]:
        """One axis: mean B."""
        return {"pairwise association (mean B)": result.mean_B}  # one B everywhere: 1 − |R − S| / 2


class SpecksResult(Frozen):
    ks: list[float]
    median_ks: float
    seeds: int
    rows_per_side: int
    trees: int


class Specks:
    name, title = "specks", "SPECKS (random-forest propensity, KS distance)"

    def compute(self, ctx: MetricContext, synthetic: RecordSet) -> SpecksResult:
        """SPECKS on the real and synthetic samples with the settings' seeds, rows and trees
        (:func:`~sdgov.utility.distinguish.specks`)."""
        st = ctx.settings
        return SpecksResult(
            **distinguish.specks(
                ctx.real.sample(),
                synthetic.sample(),
                ctx.attributes,
                st.specks_seeds,
                st.specks_rows,
                st.specks_trees,
                st.seed,
            )
        )

    def line(self, result: SpecksResult) -> str:
        """Median KS and the number of seeds it is over."""
        return f"median KS {result.median_ks:.3f} over {result.seeds} seeds"

    def radar(self, result: SpecksResult) -> dict[str, float | None]:
        """One axis: 1 − median SPECKS (1 = indistinguishable)."""
        return {"1 − SPECKS": 1 - result.median_ks}


class PmseResult(Frozen):
    pmse: float
    null_mean: float
    ratio: float | None
    model: str
    rows_per_side: int


class Pmse:
    name, title = "pmse", "pMSE ratio (CART propensity)"

    def compute(self, ctx: MetricContext, synthetic: RecordSet) -> PmseResult:
        """The pMSE ratio on the real and synthetic samples with the settings' rows and permutations
        (:func:`~sdgov.utility.distinguish.pmse`)."""
        st = ctx.settings
        return PmseResult(
            **distinguish.pmse(
                ctx.real.sample(), synthetic.sample(), ctx.attributes, st.pmse_rows, st.pmse_permutations, seed=st.seed
            )
        )

    def line(self, result: PmseResult) -> str:
        """The pMSE ratio to three significant digits (— when undefined)."""
        return "ratio —" if result.ratio is None else f"ratio {result.ratio:.3g}"

    def radar(self, result: PmseResult) -> dict[str, float | None]:
        """One axis: the pMSE ratio scored on [0, 1] by :func:`ratio_score`."""
        return {"pMSE ratio score": ratio_score(result.ratio)}


class WassersteinResult(Frozen):
    columns: list[dict[str, Any]]
    mean_ratio: float
    mean_score: float  # columns scored 1 within the randomisation's 95th percentile (sdgov.utility.wasserstein)
    median_ratio: float
    replicates: int


class Wasserstein:
    name, title = "wasserstein", "1-way Wasserstein randomisation ratio"

    def compute(self, ctx: MetricContext, synthetic: RecordSet) -> WassersteinResult:
        """The 1-way Wasserstein randomisation ratio of every column, with the settings' replicates and seed
        (:func:`~sdgov.utility.wasserstein.wasserstein`)."""
        return WassersteinResult(
            **wasserstein.wasserstein(
                ctx.real, synthetic, ctx.attributes, ctx.settings.wasserstein_replicates, ctx.settings.seed
            )
        )

    def line(self, result: WassersteinResult) -> str:
        """Mean randomisation ratio, to three significant digits."""
        return f"mean ratio {result.mean_ratio:.3g}"

    def radar(self, result: WassersteinResult) -> dict[str, float | None]:
        """One axis: the mean of the columns' Wasserstein scores."""
        return {"Wasserstein score": result.mean_score}


class Marginals:
    """The error of every Φ marginal and of all one- and two-way tables: the summary the generator card shows."""

    name, title = "marginals", "Marginal errors (TVD, RMSE): Φ, one-way, two-way"

    def compute(self, ctx: MetricContext, synthetic: RecordSet) -> UtilitySummary:
        """TVD and RMSE of every Φ marginal, one-way and two-way table
        (:func:`~sdgov.utility.summary.utility_summary`)."""
        return utility_summary(ctx.real, synthetic, ctx.attributes, ctx.cliques)

    def line(self, result: UtilitySummary) -> str:
        """The largest TVD over Φ and the worst two-way TVD."""
        worst_two_way = max((m.tvd for m in result.two_way), default=0.0)
        return f"max TVD in Φ {result.max_phi_tvd:.3f}, worst two-way TVD {worst_two_way:.3f}"

    def radar(self, result: UtilitySummary) -> dict[str, float | None]:
        """No axis: the marginal errors are not on the radar."""
        return {}
