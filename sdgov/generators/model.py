"""A fitted model in the one form the sampler needs: probability tables over the cliques of a junction tree."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sdgov.base.errors import InternalError
from sdgov.data.schema import Clique


@dataclass(frozen=True)
class CliqueModel:
    attributes: tuple[str, ...]
    domain: dict[str, int]
    cliques: list[Clique]
    marginals: list[np.ndarray]  # probability tables (sum 1), axes in clique order
    order: list[str]  # sampling order: every attribute once, parents before children
    total: float  # the model's (noisy) record total
    fit_info: dict = field(default_factory=dict)

    def marginal(self, attrs: Clique) -> np.ndarray:
        """Probability table of ``attrs`` (axes in that order), from any clique that contains them."""
        for clique, table in zip(self.cliques, self.marginals):
            if set(attrs) <= set(clique):
                drop = tuple(i for i, a in enumerate(clique) if a not in attrs)
                kept = [a for a in clique if a in attrs]
                out = table.sum(axis=drop) if drop else table
                return np.transpose(out, [kept.index(a) for a in attrs])
        raise InternalError(
            f"no clique of the fitted model contains {attrs}: a generator's sampling order must keep each attribute "
            "in one clique with its parents"
        )
