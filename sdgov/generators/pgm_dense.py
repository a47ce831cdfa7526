"""The marginal oracle of a dense Φ: a junction tree of one large clique, its marginals by two matrix products.

When Φ's junction tree is a single clique (Application 3: all 21 pairs of 7 census attributes triangulate into one
1.56M-cell clique), mbi's message passing has nothing to pass: it sums the 21 pair potentials into the clique's
log-table by broadcasting, normalises it, exponentiates it, and sums it back onto each pair — 21 reductions over
all 1.56M cells, each with its own strided index arithmetic, plus the broadcasts computed twice. That is ~27 of the
~35 CPU-ms of one mirror-descent iteration on this machine, and a fit is 1,000 iterations.

Here the clique's attributes are split into a leading block L and a trailing block R (the table, row-major, is then
an |L| × |R| matrix), and every potential that spans both blocks is a bilinear form: θ_c(x) = e_{c_L}(l)ᵀ Θ_c
e_{c_R}(r), with e the one-hot indicator of the clique's cells. So the log-table is

    log P = E_L Θ E_Rᵀ + a ⊕ b        (a, b: the potentials inside L and inside R, broadcast)

and every spanning marginal is a block of E_Lᵀ P E_R; the marginals inside L or R come from P's row or column
sums. Two dense matrix products do what 21 broadcasts and 21 reductions did, in BLAS kernels, at ~14 CPU-ms an
iteration on Application 3. The model is the same: the same marginals of the same potentials, summed in another
order (they agree with mbi's to rounding, ``tests/unit/generators/test_pgm_dense.py``).

Any other junction tree keeps mbi's own oracle, and so do potentials with structural zeros (``-inf``: a product with a
one-hot matrix would turn them into NaN).
"""

from __future__ import annotations

import functools
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
    splits = [(used[:k], used[k:]) for k in range(1, len(used))]
    left, right = min(splits, key=lambda s: _split_cost(s[0], s[1], cliques, sizes))
    spanning = [c for c in cliques if set(c) & set(left) and set(c) & set(right)]
    rows = tuple(dict.fromkeys(tuple(a for a in left if a in c) for c in spanning))
    cols = tuple(dict.fromkeys(tuple(a for a in right if a in c) for c in spanning))
    return _Layout(left, right, rows, cols, tuple((a, sizes[a]) for a in used))


def dense_layout(
    domain: mbi.Domain, cliques: Sequence[tuple[str, ...]], min_cells: int = DENSE_MIN_CELLS
) -> _Layout | None:
    """How :func:`dense_oracle` lays out a model of these cliques, or None where their junction tree has more than
    one clique or one of fewer than ``min_cells`` cells (mbi's message passing is then the oracle)."""
    return _layout(tuple(domain.attributes), tuple(domain.shape), tuple(tuple(c) for c in cliques), int(min_cells))


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


def _dense(potentials: mbi.CliqueVector, total: jax.Array | float, lay: _Layout) -> mbi.CliqueVector:
    left, right, rows, cols = lay.left, lay.right, lay.rows, lay.cols
    e_left = jnp.asarray(lay.indicators(left, rows))
    e_right = jnp.asarray(lay.indicators(right, cols))
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
    log_table = (e_left @ theta) @ e_right.T + a[:, None] + b[None, :]
    table = jnp.exp(log_table - jax.nn.logsumexp(log_table) + jnp.log(total))
    spanning = e_left.T @ (table @ e_right)
    left_table = table.sum(axis=1).reshape(lay.shape(left))
    right_table = table.sum(axis=0).reshape(lay.shape(right))
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
