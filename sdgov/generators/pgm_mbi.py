"""Private-PGM (mbi 2.x): the maximum-entropy graphical model consistent with the noisy marginals.

Exact inference runs on the junction tree of Φ. When that tree is larger than the domain limit (a dense Φ: all
pairs of 17 census attributes triangulate into a 10^12-cell clique), the agreement says ``inference: approximate``
(:func:`sdgov.agreement.resolve.resolve`) and :func:`fit_pgm` uses mbi's approximate inference instead of refusing:
mirror descent over the region graph of Φ with convex generalized belief propagation (``ApproxMirrorDescent``) estimates
consistent pseudo-marginals for *every* agreed marginal from all of them at once. Region graphs cannot be sampled,
so the sampled model is then the maximum-entropy model, fitted exactly, of the strongest of those denoised
marginals (by mutual information) whose junction tree stays within ``SAMPLING_CELLS``; the card lists which.

The estimator is mbi's mirror descent computing the model's marginals once an iteration instead of twice
(:class:`OneOracleMirrorDescent`); on a dense Φ, whose junction tree is one large clique (Application 3), the marginals
come from small matrix products instead of message passing (:mod:`sdgov.generators.pgm_dense`). The release, its dry
run and every audit fit through this one function, so the audits fit the generator that is released.

Importing this module loads JAX; :mod:`sdgov.generators.pgm` (the registered plugin) imports it only when a PGM
is fitted or sized, so that reading a spec does not pay for JAX.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

# isort: off
import sdgov.base.jaxsetup  # noqa: F401  (must run before mbi is imported: x64 floats, no persistent JIT cache)
import jax
import mbi
from mbi import Constraint, junction_tree, marginal_loss, marginal_oracles
from mbi.approximate_oracles import ApproxMirrorDescent
from mbi.estimation import MirrorDescent, MirrorDescentState

# isort: on
import numpy as np
from scipy.cluster.hierarchy import DisjointSet

from sdgov.data.schema import Clique
from sdgov.data.structures import ZeroCells, discard_zero_noise
from sdgov.generators.model import CliqueModel
from sdgov.generators.pgm_dense import dense_layout, dense_oracle, oracle_name
from sdgov.generators.plugin import InferenceParams

if TYPE_CHECKING:
    from sdgov.data.psi import Measurement, MeasurementSet
    from sdgov.generators.settings import GeneratorSpec


def _domain(attributes: list[str] | tuple[str, ...], sizes: dict[str, int]) -> mbi.Domain:
    return mbi.Domain(tuple(attributes), tuple(sizes[a] for a in attributes))


def junction_tree_cells(attributes: list[str], cliques: list[Clique], sizes: dict[str, int]) -> int:
    """Cells of every junction-tree clique together, from mbi's own junction tree (what the fit will allocate)."""
    domain = _domain(attributes, sizes)
    jtree, _ = junction_tree.make_junction_tree(domain, [tuple(c) for c in cliques])
    return sum(int(np.prod([domain[a] for a in node], dtype=np.float64)) for node in jtree.nodes)


SAMPLING_CELLS = 100_000  # the approximate path's sampled model: largest junction-tree clique it may hold


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
    info: dict[str, object] = {"inference": "exact (junction tree)"}
    if params.own(InferenceParams).inference == "approximate":
        measurements, info = _approximate(domain, measurements, total, params.iterations)
    loss = _compiled_loss(marginal_loss.from_linear_measurements(measurements, domain))
    fitting = estimator(domain, loss.cliques, cons)
    model = fitting.estimate(domain, loss, known_total=total, iters=params.iterations, constraints=cons)

    fitted = [tuple(c) for c in model.cliques]
    added = [c.clique for c in cons if c.clique not in fitted]
    jtree, elimination = junction_tree.make_junction_tree(domain, fitted + added)
    nodes = list(jtree.nodes)
    # Shafer-Shenoy with structural zeros: the message passing mbi uses for -inf potentials
    oracle = marginal_oracles.message_passing_shafer_shenoy if cons else marginal_oracles.message_passing_stable
    marginals = oracle(_over_nodes(model.potentials, nodes), 1.0, constraints=cons)
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
            **info,
            "estimator": "mbi MirrorDescent",
            "iterations": params.iterations,
            "marginal_oracle": oracle_name(layout)
            if fitting.marginal_oracle and (layout := dense_layout(domain, loss.cliques))
            else "mbi message passing (junction tree)",
            "fitted_marginals": [list(c) for c in model.cliques],
            "junction_tree_cliques": [list(c) for c in node_cliques],
            **({"structural_zero_cliques": [list(z.attributes) for z in zeros]} if zeros else {}),
        },
    )


@dataclasses.dataclass(frozen=True)
class OneOracleMirrorDescent(MirrorDescent):
    """mbi's mirror descent with its Armijo line search, computing the model's marginals once per iteration, not twice.

    mbi's step computes the marginals μ of the current potentials θ (one call of the marginal oracle: message passing
    over the junction tree), takes the gradient step θ' = θ − α∇L(μ), and computes the marginals μ' of θ' for the
    line search (a second call); the next step then computes μ' again from scratch, as the marginals of the
    potentials it accepted. Here the step carries the marginals of the potentials it keeps (μ' if the step was
    accepted, else μ) to the next step. The iterates are the same — the same operations on the same numbers
    (``tests/unit/generators/test_pgm_tables.py``: bit for bit on a tree of cliques, a few units in the last place
    where XLA fuses the two programs differently) — at half the cost, the oracle being almost all of an iteration: on
    Application 3's 1.56M-cell clique, 65–90 CPU-ms an iteration with mbi's step, 34–43 with this one.

    The state's ``mu`` is therefore the marginals of the state's own potentials (mbi's holds those of the previous
    potentials); the loss it carries is the same in both."""

    def _init(
        self,
        domain: mbi.Domain,
        loss_fn: marginal_loss.MarginalLossFn,
        known_total: float,
        *,
        warm_start: mbi.MarkovRandomField | mbi.CliqueVector | None = None,
        constraints: Sequence[Constraint] = (),
    ) -> MirrorDescentState:
        """A cold start without structural zeros in closed form: zero potentials, whose model is uniform, so every
        clique's marginal is ``known_total`` spread evenly over its cells.

        mbi's start computes those marginals by message passing and evaluates the loss on them, each a program of
        its own that XLA compiles once per model — the message passing over the whole junction tree, ~1 CPU-s on
        Adult's default model — and builds each zero table by an eager ``jnp.zeros`` (a small compile per shape).
        None of it is needed: the marginals of zero potentials are known, and the start's loss is never read (a step
        computes the loss of the marginals it is given; :meth:`_step`). Here the tables are NumPy arrays handed to
        JAX, and the start's loss is +inf (what a line search starting anywhere improves on). A warm start or
        structural zeros (whose model is not uniform) start as mbi's does."""
        if warm_start is not None or constraints:
            return super()._init(domain, loss_fn, known_total, warm_start=warm_start, constraints=constraints)
        zeros, uniform = {}, {}
        for clique in loss_fn.cliques:
            sub = domain.project(clique)
            zeros[clique] = mbi.Factor(sub, jax.device_put(np.zeros(sub.shape)))
            uniform[clique] = mbi.Factor(sub, jax.device_put(np.full(sub.shape, known_total / sub.size())))
        alpha = 2.0 / (loss_fn.lipschitz * known_total)  # mbi's first step size
        return MirrorDescentState(
            mbi.CliqueVector(domain, loss_fn.cliques, uniform),
            mbi.CliqueVector(domain, loss_fn.cliques, zeros),
            alpha,
            jax.device_put(np.float64(np.inf)),
        )

    def _finalize(
        self, state: MirrorDescentState, known_total: float, constraints: Sequence[Constraint] = ()
    ) -> mbi.MarkovRandomField:
        """The model of the last potentials with the marginals the state already holds (those of its potentials,
        :meth:`_step`), where mbi's computes them again by a message passing of its own (a compile, at a cold
        start)."""
        return mbi.MarkovRandomField(
            potentials=state.potentials, marginals=state.mu, total=known_total, constraints=tuple(constraints)
        )

    def _step(
        self,
        state: MirrorDescentState,
        loss_fn: marginal_loss.MarginalLossFn,
        known_total: jax.Array | float,
        constraints: Sequence[Constraint] = (),
    ) -> MirrorDescentState:
        oracle = self._oracle(loss_fn.cliques, state.potentials.domain, constraints=constraints)
        mu = state.mu
        loss, grad = jax.value_and_grad(loss_fn)(mu)
        theta = state.potentials - state.alpha * grad
        mu_next = oracle(theta, known_total)
        loss_next = loss_fn(mu_next)
        accept = loss - loss_next >= 0.5 * state.alpha * grad.dot(mu - mu_next)
        return MirrorDescentState(
            jax.lax.cond(accept, lambda: mu_next, lambda: mu),
            jax.lax.cond(accept, lambda: theta, lambda: state.potentials),
            jax.lax.select(accept, 1.01 * state.alpha, 0.5 * state.alpha),
            jax.lax.select(accept, loss_next, loss),
        )


def estimator(domain: mbi.Domain, cliques: Sequence[tuple[str, ...]], cons: Sequence[Constraint] = ()) -> MirrorDescent:
    """The fit's estimator: mirror descent with one oracle call per iteration; for a dense Φ (a junction tree of one
    large clique) and no structural zeros, the clique's marginals by matrix products (:mod:`.pgm_dense`)."""
    layout = None if cons else dense_layout(domain, cliques)
    return OneOracleMirrorDescent(marginal_oracle=dense_oracle(layout) if layout else None)


def marginal_estimator(
    attributes: list[str], sizes: dict[str, int], iterations: int
) -> Callable[[list[Measurement]], Callable[[Clique], np.ndarray]]:
    """AIM's model between rounds (:class:`sdgov.measurement.selection.aim.Aim`): mbi mirror descent on the
    measurements
    so far, warm-started from the previous round's potentials (as AIM's reference does). Its tables — counts, axes
    in clique order — of every pair come from one pass of mbi's ``calculate_many_marginals`` (belief propagation
    over pairs of junction-tree cliques, no compilation per query); a triple no pair of cliques holds falls back to
    ``model.project`` (variable elimination)."""
    domain = _domain(attributes, sizes)
    pairs = [tuple(p) for p in itertools.combinations(attributes, 2)]
    previous: list[mbi.MarkovRandomField] = []

    def estimate(measurements: list[Measurement]) -> Callable[[Clique], np.ndarray]:
        linear = [
            mbi.LinearMeasurement(m.array().astype(np.float64).ravel(), tuple(m.clique), stddev=m.sigma or 1.0)
            for m in measurements
        ]
        model = MirrorDescent().estimate(
            domain, linear, iters=iterations, warm_start=previous[-1] if previous else None
        )
        previous[:] = [model]
        cache: dict[tuple[str, ...], np.ndarray] = {}

        def table(clique: Clique) -> np.ndarray:
            if not cache:
                cache.update(_pair_tables(model, pairs))
            key = tuple(clique)
            if key not in cache:
                cache[key] = _ordered(model.project(key), key)
            return cache[key]

        return table

    return estimate


def _pair_tables(model: mbi.MarkovRandomField, pairs: list[tuple[str, ...]]) -> dict[tuple[str, ...], np.ndarray]:
    """Every pair's table: within a connected part of the model by ``calculate_many_marginals``; across parts (the
    model makes them independent) the product of the two 1-ways — mbi would otherwise compile a variable
    elimination per pair."""
    parts = DisjointSet(model.domain.attributes)
    for clique in model.potentials.cliques:
        for a in clique[1:]:
            parts.merge(clique[0], a)
    inside = [p for p in pairs if parts.connected(*p)]
    out: dict[tuple[str, ...], np.ndarray] = {}
    if inside:
        many = marginal_oracles.calculate_many_marginals(model.potentials, inside, model.total)
        out.update({p: _ordered(many[p], p) for p in inside})
    ones = {a: _ordered(model.project((a,)), (a,)) for a in model.domain.attributes}
    total = float(model.total)
    for a, b in (p for p in pairs if not parts.connected(*p)):
        out[(a, b)] = np.outer(ones[a], ones[b]) / max(total, 1e-12)
    return out


def _ordered(factor: mbi.Factor, clique: tuple[str, ...]) -> np.ndarray:
    out = np.asarray(factor.datavector(flatten=False), dtype=np.float64)
    return np.transpose(out, [list(factor.domain.attributes).index(a) for a in clique])


def _compiled_loss(loss: marginal_loss.MarginalLossFn) -> marginal_loss.MarginalLossFn:
    """The fit's loss, compiled as one program where mbi's estimator evaluates it outside its compiled steps.

    mbi's start (``MirrorDescent._init``, which :meth:`OneOracleMirrorDescent._init` keeps for a warm start or
    structural zeros; a cold start without them evaluates no loss) evaluates the loss once eagerly: one small XLA
    program per array operation per measured marginal — ~50 on the Adult MST tree, ~3 CPU-s to compile in the
    process that first sees a model and ~1 s to trace and load in every later one. Jitted with ``inline=True`` it is
    one program there, and inside the estimator's compiled steps it is inlined: they compute what they computed and
    the fitted model is bit-identical (``tests/unit/generators/test_pgm_tables.py``), though the scan's program now
    lowers with its arguments in another order, so a cache written before compiles it once more. The initial loss
    is only reported, never used by a step."""
    return dataclasses.replace(loss, loss_fn=_inlined(loss.loss_fn))


@functools.cache
def _inlined(fn: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    """One jitted wrapper per loss function: the estimator's compiled steps take it as static metadata, so a new
    wrapper per fit would trace them again."""
    return jax.jit(fn, inline=True)


def _over_nodes(potentials: mbi.CliqueVector, nodes: list[tuple[str, ...]]) -> mbi.CliqueVector:
    """The fitted potentials as the junction tree's message passing takes them, for the sampled model's tables.

    Where the junction tree's cliques are the fitted cliques themselves (a chordal Φ: MST's tree, a draft's
    1-ways), the potentials go in as they are: no expansion is traced or compiled, and the tables are bit-identical to
    those of the expanded potentials (``tests/unit/generators/test_pgm_tables.py``). The message passing is then also
    the program mbi's own start and finish compile for a fit with structural zeros (its oracle, with the same
    constraints; the total is an argument, not a constant), so such a fit compiles it once; a cold start without them
    runs no message passing outside the estimator's steps, and this one is the fit's only. Otherwise (a triangulated
    Φ) the potentials are expanded over the tree's cliques."""
    if {frozenset(n) for n in nodes} == {frozenset(c) for c in potentials.cliques}:
        return potentials
    return _expand(potentials, tuple(nodes))


@functools.partial(jax.jit, static_argnums=1)
def _expand(potentials: mbi.CliqueVector, nodes: tuple[tuple[str, ...], ...]) -> mbi.CliqueVector:
    """The fitted potentials re-expressed over the junction tree's cliques, as one compiled XLA program (compiled
    once per junction tree and process: the pre-flight dry run and the fit share it).

    mbi's ``CliqueVector.expand`` run eagerly dispatches and compiles three array operations on the whole
    junction-tree clique per fitted marginal: 6.4 CPU-seconds for the 2.2-million-cell clique of all pairs of
    eight Adult attributes, against 0.1 s compiled, with bit-identical potentials."""
    return potentials.expand(list(nodes))


def _approximate(
    domain: mbi.Domain, measurements: list[mbi.LinearMeasurement], total: float, iters: int
) -> tuple[list[mbi.LinearMeasurement], dict[str, object]]:
    """Pseudo-marginals of every agreed marginal by approximate inference; the sub-Φ the sampled model keeps."""
    loss = marginal_loss.from_linear_measurements(measurements, domain)
    stepsize = 2.0 / (loss.lipschitz * total)
    mu = ApproxMirrorDescent(stepsize=stepsize).estimate(domain, loss, known_total=total, iters=iters)
    tables = {}
    for m in measurements:
        t = np.clip(np.asarray(mu.project(m.clique).datavector(flatten=False), dtype=np.float64), 0, None)
        tables[m.clique] = t / t.sum() if t.sum() > 0 else np.full(t.shape, 1.0 / t.size)
    kept: list[tuple[str, ...]] = []
    for clique in sorted(tables, key=lambda c: -_mutual_information(tables[c])):
        trial = kept + [clique]
        if len(clique) == 1 or _largest(domain, trial) <= SAMPLING_CELLS:
            kept = trial
    kept_set = set(kept)
    ones = {a for c in kept for a in c}
    kept += [(a,) for a in domain.attributes if a not in ones]
    denoised = [
        mbi.LinearMeasurement(
            total * (tables[c] if c in tables else _one_way(tables, c[0], domain)).ravel(), c, stddev=1.0
        )
        for c in kept
    ]
    info: dict[str, object] = {
        "inference": "approximate (mbi ApproxMirrorDescent: convex generalized belief propagation on the region "
        "graph of Φ)",
        "approximate_iterations": iters,
        "sampled_marginals": [list(c) for c in kept if c in kept_set],
        "not_in_sampled_model": [list(c) for c in tables if c not in kept_set],
        "sampling_cells_limit": SAMPLING_CELLS,
    }
    return denoised, info


def largest_clique_cells(attributes: list[str], cliques: list[Clique], sizes: dict[str, int]) -> int:
    """Cells of the largest junction-tree clique (what :data:`SAMPLING_CELLS` bounds)."""
    return _largest(_domain(attributes, sizes), [tuple(c) for c in cliques])


def _largest(domain: mbi.Domain, cliques: list[tuple[str, ...]]) -> int:
    jtree, _ = junction_tree.make_junction_tree(domain, cliques)
    return max(int(np.prod([domain[a] for a in node], dtype=np.float64)) for node in jtree.nodes)


def _one_way(tables: dict[tuple[str, ...], np.ndarray], attr: str, domain: mbi.Domain) -> np.ndarray:
    for clique, t in tables.items():
        if attr in clique:
            return t.sum(axis=tuple(i for i, a in enumerate(clique) if a != attr))
    return np.full(domain[attr], 1.0 / domain[attr])


def _mutual_information(p: np.ndarray) -> float:
    """Total correlation of a probability table (0 for a 1-way): how much the marginal says beyond its 1-ways."""
    if p.ndim < 2:
        return 0.0
    prod = np.ones_like(p)
    for axis in range(p.ndim):
        other = tuple(i for i in range(p.ndim) if i != axis)
        shape = [1] * p.ndim
        shape[axis] = p.shape[axis]
        prod = prod * p.sum(axis=other).reshape(shape)
    mask = p > 0
    return float((p[mask] * np.log(p[mask] / prod[mask])).sum())
