"""Iterative proportional fitting on the full joint table: exact max-entropy fit for small domains.

The noisy marginals may be negative or mutually inconsistent; they are clipped at zero and each normalised to
a distribution, and IPF cycles over them until the largest change in any cell is below ``tol``.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from typing import TYPE_CHECKING

import numpy as np

from sdgov.generators.model import CliqueModel
from sdgov.generators.plugin import GeneratorPlugin
from sdgov.schema import Clique
from sdgov.structures import ZeroCells, discard_zero_noise, impossible

if TYPE_CHECKING:
    from sdgov.measure import MeasurementSet
    from sdgov.spec import GeneratorSpec

TOL = 1e-10


def fit_ipf(mset: MeasurementSet, params: GeneratorSpec, zeros: Sequence[ZeroCells] = ()) -> CliqueModel:
    """IPF from the uniform joint; structural zeros start (and, IPF being multiplicative, stay) at exactly 0, and
    the noise measured on their cells is discarded (their true count is publicly 0)."""
    attrs = list(mset.attributes)
    shape = tuple(mset.domain[a] for a in attrs)
    zeros = [z for z in zeros if set(z.attributes) <= set(attrs)]
    joint = np.where(impossible(zeros, attrs, shape), 0.0, 1.0)
    joint /= joint.sum()
    targets = []
    for m in mset.measurements:
        target = np.clip(discard_zero_noise(m.array().astype(np.float64), m.clique, zeros), 0, None)
        target = target / target.sum() if target.sum() > 0 else np.full(target.shape, 1.0 / target.size)
        axes = [attrs.index(a) for a in m.clique]
        other = tuple(i for i in range(len(attrs)) if i not in axes)
        targets.append((axes, other, target))
    sweeps = 0
    for sweeps in range(1, params.iterations + 1):  # noqa: B007 (read after the loop: sweeps run)
        before = joint.copy()
        for axes, other, target in targets:
            current = joint.sum(axis=other)  # axes in increasing attribute order
            current = np.transpose(current, np.argsort(np.argsort(axes)))  # → clique order
            ratio = np.divide(target, current, out=np.zeros_like(target), where=current > 0)
            joint *= np.expand_dims(np.transpose(ratio, np.argsort(axes)), other)
        if np.abs(joint - before).max() < TOL:
            break
    joint /= joint.sum()
    return CliqueModel(
        attributes=tuple(attrs),
        domain=dict(mset.domain),
        cliques=[tuple(attrs)],
        marginals=[joint],
        order=attrs,
        total=max(mset.noisy_total(), 1.0),
        fit_info={
            "estimator": "IPF",
            "fitted_marginals": [list(m.clique) for m in mset.measurements],
            "sweeps": sweeps,
            "converged": sweeps < params.iterations,
            **({"structural_zero_cliques": [list(z.attributes) for z in zeros]} if zeros else {}),
        },
    )


def joint_cells(attributes: list[str], cliques: list[Clique], domain: dict[str, int]) -> int:
    """IPF holds the full joint table, whatever Φ is."""
    return int(np.prod([domain[a] for a in attributes], dtype=np.float64))


IPF = GeneratorPlugin(
    name="ipf",
    label="IPF on the full joint, numpy",
    version=lambda: f"sdgov {version('sdgov')}",
    fit=fit_ipf,
    model_cells=joint_cells,
    fit_with_zeros=fit_ipf,
)
