"""Private-PGM (mbi 2.x): the maximum-entropy graphical model consistent with the noisy marginals.

Importing this module loads JAX; :mod:`sdgov.generators.pgm` (the registered plugin) imports it only when a PGM
is fitted or sized, so that reading a spec does not pay for JAX.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

# isort: off
import sdgov.jaxsetup  # noqa: F401  (must run before mbi is imported: x64 floats, no persistent JIT cache)
import mbi
from mbi import Constraint, junction_tree, marginal_oracles
from mbi.estimation import MirrorDescent

# isort: on
import numpy as np

from sdgov.generators.model import CliqueModel
from sdgov.schema import Clique
from sdgov.structures import ZeroCells, discard_zero_noise

if TYPE_CHECKING:
    from sdgov.measure import MeasurementSet
    from sdgov.spec import GeneratorSpec


def _domain(attributes: list[str] | tuple[str, ...], sizes: dict[str, int]) -> mbi.Domain:
    return mbi.Domain(tuple(attributes), tuple(sizes[a] for a in attributes))


def junction_tree_cells(attributes: list[str], cliques: list[Clique], sizes: dict[str, int]) -> int:
    """Cells of every junction-tree clique together, from mbi's own junction tree (what the fit will allocate)."""
    domain = _domain(attributes, sizes)
    jtree, _ = junction_tree.make_junction_tree(domain, [tuple(c) for c in cliques])
    return sum(int(np.prod([domain[a] for a in node], dtype=np.float64)) for node in jtree.nodes)


def constraints(domain: mbi.Domain, zeros: Sequence[ZeroCells]) -> tuple[Constraint, ...]:
    """The structural zeros as mbi 2.x constraints: log-potentials of -inf on the impossible cells."""
    out = []
    for z in zeros:
        sub = domain.project(z.attributes)
        shape = dict(zip(sub.attributes, sub.shape))
        out.append(Constraint(sub, invalid=z.invalid_combinations({a: shape[a] for a in z.attributes})))
    return tuple(out)


def fit_pgm(mset: MeasurementSet, params: GeneratorSpec, zeros: Sequence[ZeroCells] = ()) -> CliqueModel:
    """Mirror descent on Φ; structural zeros are mbi constraints, so the model gives them probability 0 exactly,
    and the noise measured on those cells is discarded before the fit (their true count is publicly 0)."""
    domain = _domain(mset.attributes, mset.domain)
    zeros = [z for z in zeros if set(z.attributes) <= set(mset.attributes)]
    cons = constraints(domain, zeros)
    measurements = [
        mbi.LinearMeasurement(
            discard_zero_noise(m.array().astype(np.float64), m.clique, zeros).ravel(),
            tuple(m.clique),
            stddev=m.sigma or 1.0,
        )
        for m in mset.measurements
    ]
    total = max(mset.noisy_total(), 1.0)
    model = MirrorDescent().estimate(domain, measurements, known_total=total, iters=params.iterations, constraints=cons)

    fitted = [tuple(c) for c in model.cliques]
    added = [c.clique for c in cons if c.clique not in fitted]
    jtree, elimination = junction_tree.make_junction_tree(domain, fitted + added)
    nodes = list(jtree.nodes)
    if cons:  # Shafer-Shenoy: the message passing mbi uses for -inf potentials
        marginals = marginal_oracles.message_passing_shafer_shenoy(
            model.potentials.expand(nodes), 1.0, constraints=cons
        )
    else:
        marginals = marginal_oracles.message_passing_stable(model.potentials.expand(nodes), 1.0)
    tables, node_cliques = [], []
    for node in nodes:
        factor = marginals.project(tuple(node))
        node_cliques.append(tuple(factor.domain.attributes))
        t = np.clip(np.nan_to_num(np.asarray(factor.datavector(flatten=False), dtype=np.float64)), 0, None)
        tables.append(t / t.sum())
    order = list(elimination[::-1])
    order += [a for a in mset.attributes if a not in order]
    return CliqueModel(
        attributes=tuple(mset.attributes),
        domain=dict(mset.domain),
        cliques=node_cliques,
        marginals=tables,
        order=order,
        total=total,
        fit_info={
            "estimator": "mbi MirrorDescent",
            "iterations": params.iterations,
            "fitted_marginals": [list(c) for c in model.cliques],
            "junction_tree_cliques": [list(c) for c in node_cliques],
            **({"structural_zero_cliques": [list(z.attributes) for z in zeros]} if zeros else {}),
        },
    )
