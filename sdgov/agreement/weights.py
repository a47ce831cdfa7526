"""How a selected Φ's measurement budget is split: each marginal weighed by its cells (issue 40).

With private selection, Φ's marginals beyond the 1-ways share what the selection leaves of ρ by weight
(:func:`sdgov.budget.accounting.plan_privacy`). Equal weights give every marginal the same σ, so a triple of 500
cells carries 500 cells of that noise and a pair of 4 cells 4: on the census (17 attributes, ε = 1, one selection of
13 triples and 25 pairs held fixed, fitted on its true counts for some marginals and noisy ones for the rest) the
triples' noise cost the all-triples TVD more than the pairs' (0.0034 against 0.0026). Weighing each marginal by its
cells^x gives the large ones a smaller σ; x = 1/3 cut the triples' TVD by 2–4 % on the census and 1–2 % on Adult at
fixed selections, and the default's by 3 % (census) and 2 % (Adult) over 8 seeds each. x = 2/3, the split that
minimises the summed L1 error of independent measurements, does less: Φ's marginals overlap and the model pools
them. ``benchmarks/README.md``, issue 40's fifth pass (``benchmarks/bench_noise_split.py``).

The weights are written into the agreement's ``privacy.weights`` when it is resolved, so its hash binds them and the
plan, the card and the sign-offs read them as any stated weight; a weight the spec states itself is kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal, localcontext

from sdgov.agreement.spec import PrivacySpec
from sdgov.data.schema import Clique


def cells_weight(cells: int, exponent: float) -> float:
    """``cells ** exponent`` to three decimals, computed in decimal arithmetic: the agreement's hash binds it, so it
    must come out the same on every machine (a platform's ``pow`` may differ in its last bit)."""
    if exponent == 0:
        return 1.0
    with localcontext() as ctx:
        ctx.prec = 28
        value = Decimal(cells) ** Decimal(repr(float(exponent)))
        return float(value.quantize(Decimal("0.001")))


def weight_key(clique: Clique) -> str:
    """A marginal as ``privacy.weights`` names it: its attributes joined by commas."""
    return ",".join(clique)


def weighed_attributes(key: str) -> frozenset[str]:
    """The attributes a key of ``privacy.weights`` names (``'A, B'`` or ``'A,B'``), in any order."""
    return frozenset(s.strip() for s in key.split(","))


def with_cell_weights(privacy: PrivacySpec, cliques: Sequence[Clique], sizes: dict[str, int]) -> PrivacySpec:
    """``privacy`` with a weight for each of Φ's marginals beyond the 1-ways that it does not weigh itself, by the
    selection's rule (:attr:`~sdgov.agreement.spec.SelectionSpec.cells_exponent`); unchanged without private
    selection, at exponent 0, when Φ holds 1-ways only (a draft before its selection), or when an attribute's name
    holds a comma (a key of ``privacy.weights`` could not name its marginal: every marginal keeps weight 1)."""
    selection = privacy.selection
    if selection is None or selection.cells_exponent == 0:
        return privacy
    if any("," in a for c in cliques if len(c) > 1 for a in c):  # 'A,B' could not name such a marginal
        return privacy
    stated = {weighed_attributes(k) for k in privacy.weights}
    added = {
        weight_key(c): cells_weight(math.prod(sizes[a] for a in c), selection.cells_exponent)
        for c in cliques
        if len(c) > 1 and frozenset(c) not in stated
    }
    if not added:
        return privacy
    return privacy.model_copy(update={"weights": {**privacy.weights, **added}})
