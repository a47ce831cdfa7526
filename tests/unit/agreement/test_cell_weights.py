"""A selected Φ's marginals weighed by their cells (issue 40): the rule, the agreement that states it, and the
selection's forecast of each marginal's σ, which must be the σ the plan then gives it."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from sdgov.agreement.spec import DEFAULT_CELLS_EXPONENT, PrivacySpec, SelectionSpec
from sdgov.agreement.weights import cells_weight, with_cell_weights
from sdgov.budget.accounting import plan_privacy
from sdgov.measurement.selection.mst import release_sigma

SIZES = {"A": 2, "B": 9, "C": 10, "D": 4}
ONES = [("A",), ("B",), ("C",), ("D",)]
PHI = [("A", "B"), ("B", "C"), ("A", "C", "D"), ("C", "D")]


def selection_privacy(**selection: object) -> PrivacySpec:
    return PrivacySpec(rho=0.05, selection=SelectionSpec(**selection))


def test_a_weight_is_the_cells_to_the_power_in_three_decimals():
    assert cells_weight(8, 1 / 3) == 2.0 and cells_weight(1000, 1 / 3) == 10.0 and cells_weight(90, 0) == 1.0
    assert cells_weight(90, 1 / 3) == 4.481 and cells_weight(90, 0.5) == 9.487  # 90^(1/3) = 4.4814…, √90 = 9.4868…


def test_a_weight_is_the_exact_cube_root_rounded_to_three_decimals():
    """The agreement's hash binds the weights, so they come from decimal arithmetic, never the platform's ``pow``
    (which may differ in its last bit): each is the cube root rounded half-even to 1e-3, checked in exact rationals."""
    for cells in [*range(1, 3000), 10**6, 999_999]:
        w = Fraction(str(cells_weight(cells, 1 / 3)))
        half = Fraction(1, 2000)
        assert (w - half) ** 3 <= cells <= (w + half) ** 3, cells


def test_mst_weighs_every_marginal_beyond_the_one_ways_and_keeps_a_stated_weight():
    p = selection_privacy().model_copy(update={"weights": {"C,B": 7.0}})
    out = with_cell_weights(p, ONES + PHI, SIZES)
    assert SelectionSpec().cells_exponent == DEFAULT_CELLS_EXPONENT == 1 / 3
    assert out.weights == {"C,B": 7.0, "A,B": cells_weight(18, 1 / 3), "A,C,D": 4.309, "C,D": cells_weight(40, 1 / 3)}


@pytest.mark.parametrize(
    "privacy",
    [
        PrivacySpec(rho=0.05),  # Φ written by hand: its weights are the spec's
        selection_privacy(method="aim"),  # AIM measured its rounds at their own σ: equal weights unless stated
        selection_privacy(weigh_by_cells=0),
    ],
    ids=["no selection", "aim", "exponent 0"],
)
def test_without_mst_or_at_exponent_zero_the_weights_are_the_specs(privacy):
    assert with_cell_weights(privacy, ONES + PHI, SIZES) is privacy


def test_a_draft_of_one_ways_or_a_name_with_a_comma_gets_no_weights():
    p = selection_privacy()
    assert with_cell_weights(p, ONES, SIZES) is p  # before its selection: the hash a draft had
    commas = {"A,x": 2, "B": 3}
    assert with_cell_weights(p, [("A,x",), ("B",), ("A,x", "B")], commas) is p  # 'A,x,B' could not name it


def test_the_weights_give_large_marginals_the_smaller_sigma_and_spend_the_same_rho():
    p = selection_privacy()
    equal = plan_privacy(p, ONES + PHI)
    weighed = plan_privacy(with_cell_weights(p, ONES + PHI, SIZES), ONES + PHI)
    assert weighed.rho == pytest.approx(equal.rho, rel=1e-12)
    s = weighed.sigmas
    assert s[("B", "C")] < s[("A", "C", "D")] < s[("C", "D")] < s[("A", "B")]  # 90, 80, 40 and 18 cells
    assert {c: s[c] for c in ONES} == {c: equal.sigmas[c] for c in ONES}  # the 1-ways keep the σ they were drawn at


def test_the_selection_forecasts_the_sigma_the_plan_gives_each_marginal():
    """A triple round values a candidate net of the noise the release will measure it with: the σ it forecasts
    (:func:`release_sigma`) is the plan's for that Φ, weights and all — else it prices triples wrongly."""
    for spec in (SelectionSpec(), SelectionSpec(weigh_by_cells=0), SelectionSpec(weigh_by_cells=2 / 3, share=0.3)):
        p = PrivacySpec(rho=0.05, selection=spec)
        plan = plan_privacy(with_cell_weights(p, ONES + PHI, SIZES), ONES + PHI)
        assert plan.selection_rho is not None
        weights = {c: cells_weight(math.prod(SIZES[a] for a in c), spec.cells_exponent) for c in PHI}
        for c in PHI:
            others = [w for d, w in weights.items() if d != c]
            assert release_sigma(spec, plan.selection_rho, others, weights[c]) == pytest.approx(
                plan.sigmas[c], rel=1e-12
            )
