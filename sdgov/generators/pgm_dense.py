"""The marginal oracle of a dense Φ: a junction tree of one large clique, its marginals without message passing.

When Φ's junction tree is a single clique (Application 3: all 21 pairs of 7 census attributes triangulate into one
1.56M-cell clique), mbi's message passing has nothing to pass: it sums the 21 pair potentials into the clique's
log-table by broadcasting, normalises it, exponentiates it, and sums it back onto each pair — 21 reductions over
all 1.56M cells, each with its own strided index arithmetic, plus the broadcasts computed twice. That is ~27 of the
~35 CPU-ms of one mirror-descent iteration on this machine, and a fit is 1,000 iterations.

Here the clique's attributes are split into a block L and a block R, and every potential that spans both blocks is
a bilinear form: θ_c(x) = e_{c_L}(l)ᵀ Θ_c e_{c_R}(r), with e the one-hot indicator of the clique's cells. So the
log-table, an |L| × |R| matrix, is

    log P = E_L Θ E_Rᵀ + a ⊕ b        (a, b: the potentials inside L and inside R, broadcast)

and every spanning marginal is a block of E_Lᵀ P E_R; the marginals inside L or R come from P's row or column sums.

* **Factored** — where two attributes u, v meet the others only in cliques holding one of them (every clique of a
  Φ of pairs: Application 3), R = (u, v) and log P(l, u, v) = A(l, u) + B(l, v) + C(u, v): P is a product of three
  small factors, and its sums onto (l, u), (l, v) and (u, v) are three small matrix products. The 1.56M-cell table
  is never formed, and the exponentials are over |L|·(|u| + |v|) cells (276,000 on Application 3) instead of
  1.56M: one oracle call 2.7 CPU-ms on one core of this machine, a fit 7.3 → 2.7 CPU-s (issue 37).
* **By products** — any other single clique (a Φ of triples): L and R a leading and a trailing block in the
  domain's order (the table row-major), P formed by one product ([E_L Θ | a | 1] · [E_Rᵀ ; 1 ; bᵀ] also adds
  a ⊕ b), exponentiated once, and E_Lᵀ P E_R with P's row sums by a second ([E_R | 1]).

Either way the marginals are normalised after the reduction, on their few hundred cells. The model is the same: the
same marginals of the same potentials, summed in another order (they agree with mbi's to rounding,
``tests/unit/generators/test_pgm_dense.py``; a whole App 3 fit with the factored oracle is 6.4 × 10⁻⁵ in total
variation from the one by products, where a redraw of the noise moves it by 0.78).

Any other junction tree keeps mbi's own oracle, and so do potentials with structural zeros (``-inf``: a product with a
one-hot matrix would turn them into NaN).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

# isort: off
import sdgov.base.jaxsetup  # noqa: F401  (must run before mbi is imported)
import jax
import jax.numpy as jnp
import mbi
from mbi import Constraint, Factor, junction_tree, marginal_oracles

# isort: on
import numpy as np

DENSE_MIN_CELLS = 100_000  # a single junction-tree clique at least this large uses the matrix products


@dataclass(frozen=True)
class _Layout:
    """How one dense clique's table is laid out as an |L| × |R| matrix, and where each potential goes in it."""

    left: tuple[str, ...]
    right: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]  # the distinct L-parts of the spanning cliques: Θ's row blocks
    cols: tuple[tuple[str, ...], ...]  # and their R-parts: Θ's column blocks
    sizes: tuple[tuple[str, int], ...]
    factored: bool = False  # R is two attributes no clique joins with L: the table is never formed (below)

    def size(self, attrs: Sequence[str]) -> int:
        sizes = dict(self.sizes)
        return math.prod(sizes[a] for a in attrs)

    def shape(self, attrs: Sequence[str]) -> tuple[int, ...]:
        sizes = dict(self.sizes)
        return tuple(sizes[a] for a in attrs)

    def indicators(self, block: tuple[str, ...], parts: tuple[tuple[str, ...], ...]) -> np.ndarray:
        """E: one row per cell of ``block`` (row-major), the one-hot indicator of its cell of each part, side by
        side."""
        cells = np.indices(self.shape(block)).reshape(len(block), -1)
        out = []
        for part in parts:
            idx = np.ravel_multi_index(tuple(cells[block.index(a)] for a in part), self.shape(part))
            out.append(np.eye(self.size(part))[idx])
        return np.concatenate(out, axis=1)


def _split_cost(
    left: tuple[str, ...], right: tuple[str, ...], cliques: Sequence[tuple[str, ...]], sizes: dict[str, int]
) -> float:
    """Multiply-adds of one oracle call with this split: the two products over the table, the small ones, and the
    broadcasts and reductions of the potentials inside each block."""
    n_left, n_right = math.prod(sizes[a] for a in left), math.prod(sizes[a] for a in right)
    spanning = [c for c in cliques if set(c) & set(left) and set(c) & set(right)]
    w_left = sum(math.prod(sizes[a] for a in p) for p in {tuple(a for a in left if a in c) for c in spanning})
    w_right = sum(math.prod(sizes[a] for a in p) for p in {tuple(a for a in right if a in c) for c in spanning})
    inside_left = sum(1 for c in cliques if set(c) <= set(left))
    inside_right = sum(1 for c in cliques if set(c) <= set(right))
    return 2.0 * (n_left * n_right * w_right + n_left * w_left * w_right) + 2.0 * (
        n_left * inside_left + n_right * inside_right
    )


@functools.cache
def _layout(
    attributes: tuple[str, ...], shape: tuple[int, ...], cliques: tuple[tuple[str, ...], ...], min_cells: int
) -> _Layout | None:
    """The cheapest split of the one junction-tree clique, or None when the tree has more cliques or a small one."""
    domain = mbi.Domain(attributes, shape)
    used = domain.canonical(tuple({a for c in cliques for a in c}))
    sub = domain.project(used)
    nodes = list(junction_tree.make_junction_tree(sub, list(cliques))[0].nodes)
    if len(nodes) != 1 or sub.size() < min_cells or len(used) < 2:
        return None
    sizes = dict(zip(attributes, shape))
    pairs = [p for p in itertools.combinations(used, 2) if all(_separable(c, p) for c in cliques)]
    if pairs:
        right = min(pairs, key=lambda p: _factored_cost(p, used, cliques, sizes))
        left = tuple(a for a in used if a not in right)
        return _with_parts(left, right, cliques, sizes, factored=True)
    splits = [(used[:k], used[k:]) for k in range(1, len(used))]
    left, right = min(splits, key=lambda s: _split_cost(s[0], s[1], cliques, sizes))
    return _with_parts(left, right, cliques, sizes, factored=False)


def _with_parts(
    left: tuple[str, ...],
    right: tuple[str, ...],
    cliques: Sequence[tuple[str, ...]],
    sizes: dict[str, int],
    factored: bool,
) -> _Layout:
    spanning = [c for c in cliques if set(c) & set(left) and set(c) & set(right)]
    rows = tuple(dict.fromkeys(tuple(a for a in left if a in c) for c in spanning))
    cols = (
        tuple((a,) for a in right)
        if factored
        else tuple(dict.fromkeys(tuple(a for a in right if a in c) for c in spanning))
    )
    used = tuple(a for a in sizes if a in left or a in right)
    return _Layout(left, right, rows, cols, tuple((a, sizes[a]) for a in used), factored)


def _separable(clique: Sequence[str], pair: tuple[str, str]) -> bool:
    """Whether ``clique`` lies inside the pair or touches at most one of its two attributes."""
    return set(clique) <= set(pair) or not set(pair) <= set(clique)


def _factored_cost(
    pair: tuple[str, str], used: tuple[str, ...], cliques: Sequence[tuple[str, ...]], sizes: dict[str, int]
) -> float:
    """Work of one factored oracle call with ``pair`` as R: the exponentials and products over |L| × (|u| + |v|)
    and the indicator products of width w_L; the three |L|·|u|·|v| products are the same for every pair."""
    left = tuple(a for a in used if a not in pair)
    n_left = math.prod(sizes[a] for a in left)
    parts = {tuple(a for a in left if a in c) for c in cliques if set(c) & set(pair) and set(c) & set(left)}
    w_left = sum(math.prod(sizes[a] for a in p) for p in parts)
    return float(n_left * (sizes[pair[0]] + sizes[pair[1]]) * (1 + w_left))


def dense_layout(
    domain: mbi.Domain, cliques: Sequence[tuple[str, ...]], min_cells: int = DENSE_MIN_CELLS
) -> _Layout | None:
    """How :func:`dense_oracle` lays out a model of these cliques, or None where their junction tree has more than
    one clique or one of fewer than ``min_cells`` cells (mbi's message passing is then the oracle)."""
    return _layout(tuple(domain.attributes), tuple(domain.shape), tuple(tuple(c) for c in cliques), int(min_cells))


def oracle_name(layout: _Layout) -> str:
    """How a model fitted with this layout's oracle computed its marginals (its ``model_info.json`` says so)."""
    return "dense clique: factored, three small products" if layout.factored else "dense clique: two matrix products"


def _block_sum(values: jax.Array, clique: tuple[str, ...], block: tuple[str, ...], lay: _Layout) -> jax.Array:
    """A potential inside one block, broadcast over the block's cells (row-major, flattened)."""
    order = [clique.index(a) for a in block if a in clique]
    inner = tuple(block.index(a) for a in block if a in clique)
    return jax.lax.broadcast_in_dim(jnp.transpose(values, order), lay.shape(block), inner).reshape(-1)


def _reduce_to(table: jax.Array, block: tuple[str, ...], clique: tuple[str, ...]) -> jax.Array:
    """A block's table summed onto one clique inside it, axes in the clique's order."""
    kept = [a for a in block if a in clique]
    m = table.sum(axis=tuple(i for i, a in enumerate(block) if a not in clique))
    return jnp.transpose(m, [kept.index(a) for a in clique])


def _by_products(spans: jax.Array, a: jax.Array, b: jax.Array, lay: _Layout) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The unnormalised table P (|L| × |R|) summed onto each L-cell and R-part (P E_R), onto each L-cell, and onto
    each R-cell; ``spans`` = E_L Θ. The log-table in one product — [E_L Θ | a | 1] · [E_Rᵀ ; 1 ; bᵀ] =
    E_L Θ E_Rᵀ + a ⊕ b — exponentiated once (a log-sum-exp would take a second pass), and P E_R and the row sums in
    a second product ([E_R | 1])."""
    e_right = jnp.asarray(lay.indicators(lay.right, lay.cols))
    n_left, n_right = spans.shape[0], e_right.shape[0]
    lhs = jnp.concatenate([spans, a[:, None], jnp.ones((n_left, 1))], axis=1)
    rhs = jnp.concatenate([e_right.T, jnp.ones((1, n_right)), b[None, :]], axis=0)
    log_table = lhs @ rhs
    table = jnp.exp(log_table - log_table.max())
    by_row = table @ jnp.concatenate([e_right, jnp.ones((n_right, 1))], axis=1)
    return by_row[:, :-1], by_row[:, -1], table.sum(axis=0)


def _factored(spans: jax.Array, a: jax.Array, b: jax.Array, lay: _Layout) -> tuple[jax.Array, jax.Array, jax.Array]:
    """:func:`_by_products`' three sums where R is two attributes u, v that no clique joins with L: then
    log P(l, u, v) = A(l, u) + B(l, v) + C(u, v), so P = e^A · e^B · e^C and every sum is a small product —
    Σ_v P = e^A ⊙ (e^B e^Cᵀ), Σ_u P = e^B ⊙ (e^A e^C), Σ_l P = e^C ⊙ (e^Aᵀ e^B) — with exponentials over
    |L|·(|u| + |v|) cells instead of |L|·|u|·|v| (Application 3: 276,000 instead of 1.56M), and the table never
    formed. Each factor is shifted by its maximum (per L-cell for A and B, the shifts kept as row weights)."""
    n_u, n_v = lay.shape(lay.right)
    big_a = spans[:, :n_u] + a[:, None]
    big_b = spans[:, n_u:]
    max_a, max_b = big_a.max(axis=1), big_b.max(axis=1)
    weight = max_a + max_b
    e_a = jnp.exp(big_a - max_a[:, None]) * jnp.exp(weight - weight.max())[:, None]
    e_b = jnp.exp(big_b - max_b[:, None])
    c = b.reshape(n_u, n_v)
    e_c = jnp.exp(c - c.max())
    on_u = e_a * (e_b @ e_c.T)
    on_v = e_b * (e_a @ e_c)
    return jnp.concatenate([on_u, on_v], axis=1), on_u.sum(axis=1), e_c * (e_a.T @ e_b)


def _dense(potentials: mbi.CliqueVector, total: jax.Array | float, lay: _Layout) -> mbi.CliqueVector:
    left, right, rows, cols = lay.left, lay.right, lay.rows, lay.cols
    e_left = jnp.asarray(lay.indicators(left, rows))
    row_at = dict(zip(rows, np.cumsum([0, *[lay.size(p) for p in rows]])))
    col_at = dict(zip(cols, np.cumsum([0, *[lay.size(p) for p in cols]])))
    blocks: dict[tuple[tuple[str, ...], tuple[str, ...]], jax.Array] = {}
    a = jnp.zeros(lay.size(left))
    b = jnp.zeros(lay.size(right))
    for clique in potentials.cliques:
        factor = potentials[clique]
        attrs = tuple(factor.domain.attributes)
        part_l = tuple(x for x in left if x in attrs)
        part_r = tuple(x for x in right if x in attrs)
        if part_l and part_r:
            values = jnp.transpose(factor.values, [attrs.index(x) for x in part_l + part_r])
            blocks[part_l, part_r] = values.reshape(lay.size(part_l), lay.size(part_r))
        elif part_l:
            a = a + _block_sum(factor.values, attrs, left, lay)
        else:
            b = b + _block_sum(factor.values, attrs, right, lay)
    theta = jnp.concatenate(
        [
            jnp.concatenate([blocks.get((r, c), jnp.zeros((lay.size(r), lay.size(c)))) for c in cols], axis=1)
            for r in rows
        ],
        axis=0,
    )
    by_row, row_sums, by_column = (_factored if lay.factored else _by_products)(e_left @ theta, a, b, lay)
    scale = total / row_sums.sum()  # the marginals are normalised on their few cells, not on the table's
    spanning = (e_left.T @ by_row) * scale
    left_table = (row_sums * scale).reshape(lay.shape(left))
    right_table = (by_column * scale).reshape(lay.shape(right))
    out = {}
    for clique in potentials.cliques:
        factor = potentials[clique]
        attrs = tuple(factor.domain.attributes)
        part_l = tuple(x for x in left if x in attrs)
        part_r = tuple(x for x in right if x in attrs)
        if part_l and part_r:
            r0, c0 = int(row_at[part_l]), int(col_at[part_r])
            m = spanning[r0 : r0 + lay.size(part_l), c0 : c0 + lay.size(part_r)]
            m = m.reshape(lay.shape(part_l) + lay.shape(part_r))
            m = jnp.transpose(m, [(part_l + part_r).index(x) for x in attrs])
        elif part_l:
            m = _reduce_to(left_table, left, attrs)
        else:
            m = _reduce_to(right_table, right, attrs)
        out[clique] = Factor(factor.domain, m)
    return mbi.CliqueVector(potentials.domain, potentials.cliques, out)


@functools.cache
def dense_oracle(layout: _Layout) -> marginal_oracles.MarginalOracle:
    """mbi's marginal-oracle protocol for potentials laid out by ``layout``: their marginals, summing to ``total``, by
    the matrix products above. One compiled function per layout (per junction tree), so every fit of a model shares
    its programs; potentials with structural zeros go to mbi's message passing."""

    @jax.jit
    def oracle(
        potentials: mbi.CliqueVector, total: jax.Array | float = 1.0, *, constraints: Sequence[Constraint] = ()
    ) -> mbi.CliqueVector:
        if constraints:
            return marginal_oracles.message_passing_shafer_shenoy(potentials, total, constraints=constraints)
        return _dense(potentials, total, layout)

    return oracle
