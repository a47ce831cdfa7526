"""The selection's model-size count: the cells of the junction tree mbi builds, the pgm plugin's own count, exactly."""

from __future__ import annotations

import random

import pytest

from sdgov.data.schema import load_schema
from sdgov.generators.registry import generator
from sdgov.measurement.selection.model_size import bitset_tree_cells, model_cells
from tests.conftest import REPO

PGM = generator("pgm").model_cells


def _random_cliques(rng: random.Random, attrs: list[str]) -> list[tuple[str, ...]]:
    n = len(attrs)
    if rng.random() < 0.2 and n > 1:  # a tree over every attribute: mbi eliminates it leaf first
        return [(a,) for a in attrs] + [(attrs[i], attrs[rng.randrange(i)]) for i in range(1, n)]
    cliques: list[tuple[str, ...]] = [(a,) for a in attrs] if rng.random() < 0.7 else []
    cliques += [tuple(rng.sample(attrs, rng.randint(1, min(4, n)))) for _ in range(rng.randint(0, 2 * n))]
    return cliques


@pytest.mark.parametrize("seed", range(4))
def test_the_count_is_the_pgm_plugins_on_random_clique_sets(seed: int) -> None:
    """Trees, forests, cycles, cliques in any attribute order, attributes in no clique, ties between attributes of
    equal size (the greedy order's first-in-the-domain rule decides them): the same number as mbi's junction tree."""
    rng = random.Random(seed)
    for _ in range(150):
        attrs = [f"a{i}" for i in range(rng.randint(1, 12))]
        rng.shuffle(attrs)
        sizes = {a: rng.choice([1, 2, 3, 5, 7, 10, 50, 100]) for a in attrs}
        cliques = _random_cliques(rng, attrs)
        assert bitset_tree_cells(attrs, cliques, sizes) == PGM(attrs, cliques, sizes), (attrs, sizes, cliques)


def test_the_count_is_the_pgm_plugins_on_the_census_selections_own_kind_of_model() -> None:
    """The census's 17 attributes at their real sizes, a tree and extra pairs and triples as MST's rounds add them."""
    schema = load_schema(REPO / "examples" / "census2011" / "schema.yaml")
    attrs = [c.name for c in schema.columns]
    sizes = schema.domain(attrs)
    rng = random.Random(7)
    for _ in range(40):
        order = rng.sample(attrs, len(attrs))
        cliques: list[tuple[str, ...]] = [(a,) for a in attrs]
        cliques += [(order[i], order[rng.randrange(i)]) for i in range(1, len(order))]
        cliques += [tuple(rng.sample(attrs, rng.choice([2, 2, 3]))) for _ in range(rng.randint(0, 30))]
        assert bitset_tree_cells(attrs, cliques, sizes) == PGM(attrs, cliques, sizes)


def test_pgm_selections_count_with_it_and_other_generators_with_their_own() -> None:
    ipf = generator("ipf").model_cells
    assert model_cells("pgm", PGM) is bitset_tree_cells
    assert model_cells("ipf", ipf) is ipf
