"""The dense-clique marginal oracle (sdgov/generators/pgm_dense.py): the marginals mbi's message passing gives, by
two matrix products or, where two attributes only meet the rest in cliques of one of them, three small ones, for any
mix of cliques inside one junction-tree clique; everything else goes to mbi."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from sdgov.generators import pgm_dense, pgm_mbi
from tests.conftest import REPO

import jax.numpy as jnp  # isort: skip  (after sdgov: x64 first)
import mbi  # isort: skip
from mbi import marginal_oracles  # isort: skip

SIZES = {"a": 3, "b": 4, "c": 2, "d": 5, "e": 3}
DOMAIN = mbi.Domain(tuple(SIZES), tuple(SIZES.values()))
ALL_PAIRS = list(itertools.combinations(SIZES, 2))


def _potentials(cliques: list[tuple[str, ...]], seed: int = 0, scale: float = 1.5) -> mbi.CliqueVector:
    rng = np.random.default_rng(seed)
    tables = {
        c: mbi.Factor(DOMAIN.project(c), jnp.asarray(rng.normal(0, scale, DOMAIN.project(c).shape))) for c in cliques
    }
    return mbi.CliqueVector(DOMAIN, cliques, tables)


@pytest.mark.parametrize(
    ("cliques", "factored"),
    [
        (ALL_PAIRS, True),
        (
            [
                ("a", "b", "c"),
                ("c", "d", "e"),
                *[p for p in ALL_PAIRS if not (set(p) <= {"a", "b", "c"} or set(p) <= {"c", "d", "e"})],
            ],
            True,
        ),
        (
            [
                ("e", "a"),
                ("d", "b"),
                ("c", "a"),
                *[p for p in ALL_PAIRS if p not in {("a", "e"), ("b", "d"), ("a", "c")}],
            ],
            True,
        ),
        (list(itertools.combinations("abcd", 3)) + [(x, "e") for x in "abcd"], True),
        (list(itertools.combinations("abcde", 3)), False),
    ],
    ids=["all pairs", "triples and pairs", "pairs in other axis orders", "triples, pairs", "all triples"],
)
@pytest.mark.parametrize("scale", [1.5, 40.0], ids=["mild", "steep"])
def test_the_dense_oracle_gives_the_message_passings_marginals(cliques, factored, scale):
    """Both ways — the two products over the table, and the factored sums where R's two attributes never meet L
    together — give mbi's marginals, also for potentials steep enough that an unshifted exponential overflows."""
    pots = _potentials(cliques, scale=scale)
    layout = pgm_dense.dense_layout(DOMAIN, cliques, min_cells=1)
    assert layout is not None and layout.left and layout.right
    assert layout.factored == factored
    ours = pgm_dense._dense(pots, 360.0, layout)
    theirs = marginal_oracles.message_passing_hugin(pots, 360.0)
    for c in cliques:
        assert ours[c].domain.attributes == theirs[c].domain.attributes
        np.testing.assert_allclose(np.asarray(ours[c].values), np.asarray(theirs[c].values), rtol=1e-12, atol=1e-12)
    assert np.isclose(float(sum(np.asarray(ours[c].values).sum() for c in cliques[:1])), 360.0)


def test_only_one_large_junction_tree_clique_uses_it():
    assert pgm_dense.dense_layout(DOMAIN, ALL_PAIRS) is None, "360 cells is below the default limit"
    assert pgm_dense.dense_layout(DOMAIN, [("a", "b"), ("b", "c"), ("c", "d")], min_cells=1) is None, "a chain"
    assert pgm_dense.dense_layout(DOMAIN, ALL_PAIRS, min_cells=1) is not None


def test_a_fit_with_the_dense_oracle_is_the_fit_with_mbis(monkeypatch):
    """The whole mirror descent on a dense Φ, once with each oracle: the same model to rounding."""
    from sdgov.generators.settings import GeneratorSpec
    from tests.fixtures.pgm_tables import measurement_set  # a made-up noisy table over a, b, c, d

    phi = list(itertools.combinations("abcd", 2))
    mset, params = measurement_set(phi), GeneratorSpec(iterations=200)
    monkeypatch.setattr(pgm_mbi, "dense_layout", lambda d, c: pgm_dense.dense_layout(d, c, min_cells=1))
    assert pgm_mbi.estimator(pgm_mbi._domain(list("abcd"), dict(mset.domain)), phi).marginal_oracle is not None
    dense = pgm_mbi.fit_pgm(mset, params)
    monkeypatch.setattr(pgm_mbi, "dense_layout", lambda d, c: None)
    plain = pgm_mbi.fit_pgm(mset, params)
    assert dense.cliques == plain.cliques
    assert dense.fit_info["marginal_oracle"].startswith("dense clique"), "model_info states how the fit computed"
    assert plain.fit_info["marginal_oracle"].startswith("mbi message passing")
    for x, y in zip(dense.marginals, plain.marginals, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


TWO_FITS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import itertools
from tests.fixtures.pgm_tables import measurement_set
from sdgov.generators.settings import GeneratorSpec
from sdgov.base.jax_compiles import compilations
from sdgov.generators import pgm_dense, pgm_mbi
if sys.argv[2] == "dense":
    pgm_mbi.dense_layout = lambda d, c: pgm_dense.dense_layout(d, c, min_cells=1)
phi = list(itertools.combinations("abcd", 2))
first, second = measurement_set(phi), measurement_set(phi)
moved = [m.model_copy(update={"noisy_counts": [v + 3 for v in m.noisy_counts]}) for m in second.measurements]
second = second.model_copy(update={"measurements": moved})
counts = []
for mset in (first, second):
    with compilations() as seen:
        pgm_mbi.fit_pgm(mset, GeneratorSpec(iterations=100))
    counts.append(dict(seen))
print(json.dumps(counts))
"""


@pytest.mark.parametrize("oracle", ["dense", "message passing"])
def test_a_second_fit_of_the_same_junction_tree_compiles_nothing(oracle):
    """One traced, compiled program per junction tree: a second fit with other measurements (and another total)
    runs the programs the first compiled, the measurements' values being arguments, not constants (a fresh process,
    no persistent cache: every program is compiled here)."""
    env = {**os.environ, "SDGOV_JAX_CACHE_DIR": ""}
    run = subprocess.run(
        [sys.executable, "-c", TWO_FITS, str(REPO), oracle.split()[0]],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    first, second = json.loads(run.stdout.strip().splitlines()[-1])
    assert sum(first.values()) > 0, "the first fit compiles the model's programs"
    assert first.get("jit(_multi_step)") == 1, first
    assert "jit(oracle)" not in first, "a cold start needs no marginals outside the estimator's steps"
    assert second == {}, f"the second fit compiled {second}"
