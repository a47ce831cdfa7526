"""What one PGM fit compiles (sdgov/generators/pgm_mbi.py ``fit_pgm``), and that compiling less changes nothing.

- The sampled model's tables: where the junction tree's cliques are the fitted ones, the message passing runs on
  the fitted potentials as they are — the program mbi's estimator compiled — and gives the tables the expanded
  potentials give, bit for bit; a triangulated Φ still expands them. One fit compiles one message passing (the
  expansion traced a second: without JAX's cache, 4–5 CPU-s on the Adult MST tree).
- The loss mbi's estimator evaluates outside its compiled steps is one compiled program (inlined within them), not
  one per array operation per marginal; the fitted model is the same, bit for bit."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from sdgov.data.structures import ZeroCells
from sdgov.generators import pgm_mbi
from sdgov.generators.settings import GeneratorSpec
from tests.conftest import REPO
from tests.fixtures.pgm_tables import TREE, measurement_set

CYCLE = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]  # a 4-cycle: triangulated into triples
ZERO = ZeroCells(("a", "b"), ((0,), (1, 2)), "a=0 never has b in {1, 2}")


def _always_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pgm_mbi, "_over_nodes", lambda potentials, nodes: pgm_mbi._expand(potentials, tuple(nodes)))


@pytest.mark.parametrize("zeros", [[], [ZERO]], ids=["no zeros", "a structural zero"])
def test_the_fitted_potentials_give_the_expanded_potentials_tables_bit_for_bit(monkeypatch, zeros):
    mset, params = measurement_set(TREE, zero=bool(zeros)), GeneratorSpec(iterations=60)
    direct = pgm_mbi.fit_pgm(mset, params, zeros)
    _always_expanded(monkeypatch)
    expanded = pgm_mbi.fit_pgm(mset, params, zeros)
    assert direct.cliques == expanded.cliques
    assert all(np.array_equal(x, y) for x, y in zip(direct.marginals, expanded.marginals, strict=True))
    node = next(c for c in direct.cliques if set(c) == {"a", "b"})
    ab = direct.marginals[direct.cliques.index(node)]
    ab = ab if node[0] == "a" else ab.T
    assert (ab[0, 1:3].sum() == 0.0) == bool(zeros), "the structural zero, and only it, has probability 0"


def test_the_compiled_loss_fits_the_model_the_estimators_own_loss_fits(monkeypatch):
    zeros = [ZERO]
    mset, params = measurement_set(TREE, zero=True), GeneratorSpec(iterations=80)
    compiled = pgm_mbi.fit_pgm(mset, params, zeros)
    monkeypatch.setattr(pgm_mbi, "_compiled_loss", lambda loss: loss)  # the loss as mbi builds it: eager in _init
    plain = pgm_mbi.fit_pgm(mset, params, zeros)
    assert compiled.cliques == plain.cliques
    assert all(np.array_equal(x, y) for x, y in zip(compiled.marginals, plain.marginals, strict=True))


def test_a_triangulated_phi_is_expanded_over_the_junction_trees_cliques():
    model = pgm_mbi.fit_pgm(measurement_set(CYCLE), GeneratorSpec(iterations=20))
    assert max(len(c) for c in model.cliques) == 3, "the 4-cycle's junction tree holds triples, not Φ's pairs"
    assert all(np.isclose(t.sum(), 1.0) for t in model.marginals)


FIT = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.fixtures.pgm_tables import TREE, measurement_set
from sdgov.generators.settings import GeneratorSpec
from sdgov.generators.pgm_mbi import fit_pgm
fit_pgm(measurement_set(TREE), GeneratorSpec(iterations=10))
"""


def test_a_cold_fit_compiles_its_steps_and_one_message_passing_only():
    """A fit from zero potentials compiles the estimator's steps once and the sampled model's message passing once:
    no message passing or loss for the start (its marginals are uniform, its loss never read), no program per array
    operation (the start's zero tables), and no second compilation of the steps (the start's state has the types
    the steps return; a mismatch traces them again). No persistent cache: every program is compiled here, in a fresh
    process."""
    env = {**os.environ, "SDGOV_JAX_CACHE_DIR": "", "JAX_LOG_COMPILES": "1", "PYTHONHASHSEED": "0"}
    run = subprocess.run([sys.executable, "-c", FIT, str(REPO)], env=env, capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]
    compiled = [ln.split(" in ")[0].rsplit(" ", 1)[-1] for ln in run.stderr.splitlines() if "Finished XLA comp" in ln]
    assert compiled.count("jit(_multi_step)") == 1, compiled
    assert compiled.count("jit(message_passing_hugin)") == 1, compiled
    assert "jit(_l2_loss)" not in compiled, compiled
    assert not {"jit(vdot)", "jit(subtract)", "jit(true_divide)", "jit(broadcast_in_dim)"} & set(compiled), compiled


def test_the_closed_form_start_is_the_message_passings_start():
    """Zero potentials start the fit with marginals spread evenly over each clique's cells: what mbi's start computes
    by message passing, to the last few units in the last place."""
    mset = measurement_set(TREE)
    domain = pgm_mbi._domain(mset.attributes, mset.domain)
    loss = pgm_mbi.marginal_loss.from_linear_measurements(
        [pgm_mbi.mbi.LinearMeasurement(m.array().ravel(), tuple(m.clique)) for m in mset.measurements], domain
    )
    ours = pgm_mbi.OneOracleMirrorDescent()._init(domain, loss, 1234.0)
    theirs = pgm_mbi.MirrorDescent()._init(domain, loss, 1234.0)
    for clique in loss.cliques:
        np.testing.assert_allclose(ours.mu[clique].values, theirs.mu[clique].values, rtol=1e-14, atol=0)
        assert np.array_equal(ours.potentials[clique].values, theirs.potentials[clique].values)
    assert ours.alpha == theirs.alpha


@pytest.mark.parametrize(
    ("phi", "zeros"), [(TREE, []), (TREE, [ZERO]), (CYCLE, [])], ids=["tree", "tree with a zero", "triangulated"]
)
def test_one_oracle_call_per_iteration_fits_the_model_mbis_mirror_descent_fits(monkeypatch, phi, zeros):
    """The estimator carries the line search's marginals to the next step instead of recomputing them: the same
    iterates as mbi's own MirrorDescent, which calls the oracle twice per iteration (bit for bit where XLA fuses the
    two programs alike, as on these trees; within a few units in the last place on the triangulated cycle)."""
    mset, params = measurement_set(phi, zero=bool(zeros)), GeneratorSpec(iterations=120)
    ours = pgm_mbi.fit_pgm(mset, params, zeros)
    with monkeypatch.context() as m:  # the steps alone, from mbi's start (its start's marginals by message passing)
        m.setattr(pgm_mbi.OneOracleMirrorDescent, "_init", pgm_mbi.MirrorDescent._init)
        ours_from_mbis_start = pgm_mbi.fit_pgm(mset, params, zeros)
    monkeypatch.setattr(pgm_mbi, "OneOracleMirrorDescent", pgm_mbi.MirrorDescent)
    theirs = pgm_mbi.fit_pgm(mset, params, zeros)
    assert ours.cliques == theirs.cliques
    assert all(np.allclose(x, y, rtol=0, atol=1e-15) for x, y in zip(ours.marginals, theirs.marginals, strict=True))
    if phi is TREE:
        pairs = zip(ours_from_mbis_start.marginals, theirs.marginals, strict=True)
        assert all(np.array_equal(x, y) for x, y in pairs)
