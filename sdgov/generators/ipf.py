"""Iterative proportional fitting on the full joint table: exact max-entropy fit for small domains.

The noisy marginals may be negative or mutually inconsistent; they are clipped at zero and each normalised to
a distribution, and IPF cycles over them until the largest change in any cell is below ``tol``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from importlib.metadata import version
from typing import TYPE_CHECKING

import numpy as np

from sdgov.data.schema import Clique
from sdgov.data.structures import ZeroCells, discard_zero_noise, impossible
from sdgov.generators.model import CliqueModel
from sdgov.generators.plugin import GeneratorPlugin

if TYPE_CHECKING:
    from sdgov.data.psi import MeasurementSet
    from sdgov.generators.settings import GeneratorSpec

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
        targets.append(_Margin(shape, axes, target))
    sweeps = 0
    before, change = np.empty_like(joint), np.empty_like(joint)  # reused: a fresh 12 MB array per sweep page-faults
    for sweeps in range(1, params.iterations + 1):  # noqa: B007 (read after the loop: sweeps run)
        np.copyto(before, joint)
        for t in targets:
            t.update(joint)
        np.subtract(joint, before, out=change)
        if np.abs(change, out=change).max() < TOL:
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


class _Margin:
    """One fitted marginal as a view of the joint that keeps its axes apart: (rest, a₀, rest, a₁, …, rest).

    Neighbouring attributes outside the marginal are merged into one axis; the marginal is an ``einsum`` over that
    view (numpy's own loops, no BLAS: the same bits on every CPU kernel), and the update multiplies through a few
    long inner loops instead of a 7-dimensional broadcast. ``joint.sum(axis=others)`` adds in another order: the
    fitted joint differs from it by rounding only (App 3, 30 sweeps: ≤ 1.4e-14 relative), far below anything a
    sample can see — the decomposability audit's p-values are unchanged — while App 3's 1.56M-cell joint with 21
    2-way marginals fits in half the CPU time (numpy's reduction over small trailing axes is slow).
    """

    def __init__(self, shape: tuple[int, ...], axes: list[int], target: np.ndarray) -> None:
        order = np.argsort(axes)
        self.sorted_axes = [axes[i] for i in order]
        self.target = np.transpose(target, order)  # marginal axes in attribute order
        bounds = [-1, *self.sorted_axes, len(shape)]
        self.view: list[int] = []
        for lo, hi, ax in zip(bounds[:-1], bounds[1:], [*self.sorted_axes, None]):
            self.view.append(math.prod(shape[lo + 1 : hi]))  # the attributes between two marginal axes
            if ax is not None:
                self.view.append(shape[ax])
        self.reduce = tuple(range(0, len(self.view), 2))
        self.keep = list(range(1, len(self.view), 2))  # einsum's output axes: the marginal's
        # the update: the ratio repeated along a short trailing block, so the multiply's inner loop is long
        tail = self.view[-1]
        self.repeat = tail if tail < 64 else 1
        self.mul_view = [*self.view[:-2], self.view[-2] * self.repeat] if self.repeat > 1 else self.view
        self.expand = tuple(range(0, len(self.mul_view), 2)) if self.repeat > 1 else self.reduce

    def update(self, joint: np.ndarray) -> None:
        """Scale ``joint`` (in place) so that this marginal equals the target (cells with no mass stay 0)."""
        view = joint.reshape(self.view)
        current = np.einsum(view, list(range(view.ndim)), self.keep)
        ratio = np.divide(self.target, current, out=np.zeros_like(self.target), where=current > 0)
        if self.repeat > 1:
            ratio = np.repeat(ratio, self.repeat, axis=-1)
        joint.reshape(self.mul_view)[...] *= np.expand_dims(ratio, self.expand)


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
