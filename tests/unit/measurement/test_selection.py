"""Private selection (MST): the composed budget, the mechanism's choices, and the draw-once reuse of the 1-ways."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sdgov.agreement.spec import PrivacySpec, SelectionSpec
from sdgov.agreement.weights import cells_weight
from sdgov.base.errors import SpecError
from sdgov.budget.accounting import plan_privacy, rho_of_sigma
from sdgov.governance import ledger
from sdgov.governance.site import Site
from sdgov.measurement.selection.mst import (
    MARGIN_SENSITIVITY,
    TRIPLE_SENSITIVITY,
    gumbel_scale,
    interaction_scores,
    margin_scores,
    rho_of_gumbel,
    select_mst,
)
from sdgov.registry.log import Registry
from tests.fixtures.drafts import captured_cli, selection_draft
from tests.governance import controller_registry, sign_standing_approval, signed_proposal

ATTRS = [f"a{i}" for i in range(8)]


@settings(max_examples=40, deadline=None)
@given(
    rho=st.floats(1e-3, 10),
    share=st.floats(0.05, 0.95),
    one_way=st.floats(0.05, 0.95),
    n_ones=st.integers(2, 8),
    n_pairs=st.integers(0, 20),
)
def test_the_composed_plan_spends_exactly_the_budget_and_fixes_the_one_ways_sigma(rho, share, one_way, n_ones, n_pairs):
    """ρ(1-ways) + ρ(selection) + ρ(pairs) = the declared ρ (the pairs take what selection leaves), and the 1-ways'
    σ does not depend on how many pairs end up in Φ — so the release finds them at the σ they were drawn at."""
    p = PrivacySpec(rho=rho, selection=SelectionSpec(share=share, one_way=one_way))
    ones = [(a,) for a in ATTRS[:n_ones]]
    pairs = [(ATTRS[i % n_ones], f"b{i}") for i in range(n_pairs)]
    draft, final = plan_privacy(p, ones, delta=1e-3), plan_privacy(p, ones + pairs, delta=1e-3)
    assert final.selection_rho == pytest.approx(rho * share * (1 - one_way), rel=1e-12)
    ones_rho = math.fsum(m.rho or 0 for m in final.marginals if len(m.clique) == 1)
    assert ones_rho == pytest.approx(rho * share * one_way, rel=1e-9)
    expected = rho if pairs else rho * share  # a draft with no pairs leaves the pairs' share unspent
    assert final.rho == pytest.approx(expected, rel=1e-9) and final.rho <= rho * (1 + 1e-9)
    assert {m.clique: m.sigma for m in draft.marginals} == {m.clique: m.sigma for m in final.marginals[:n_ones]}
    assert final.epsilon is not None and final.rho == pytest.approx(
        math.fsum(rho_of_sigma(m.sigma) for m in final.marginals) + final.selection_rho, rel=1e-9
    )


def test_without_selection_the_plan_is_unchanged():
    p = PrivacySpec(rho=0.5)
    plan = plan_privacy(p, [("a",), ("b", "c")], delta=1e-2)
    assert plan.selection_rho is None and plan.rho == pytest.approx(0.5)
    assert "selection" not in p.model_dump(mode="json")  # the agreement hash of every existing spec is unchanged


def test_a_selection_needs_a_rho_budget():
    with pytest.raises(ValueError, match="spends a share of a budget"):
        PrivacySpec(sigma=3.0, selection=SelectionSpec())


@pytest.mark.parametrize("rho_round", [1e-4, 0.01, 0.3])
def test_the_gumbel_scale_is_opendps_for_the_round_budget(rho_round):
    scale = gumbel_scale(rho_round)
    assert rho_of_gumbel(scale) <= rho_round * (1 + 1e-9)
    assert rho_of_gumbel(scale * 0.99) > rho_round  # the smallest scale: no budget left on the table


def _toy(n=20000, seed=0):
    """x→y and z→w strongly dependent, the rest independent: MST's tree must contain x–y and z–w."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, n)
    y = (x + (rng.random(n) < 0.1)) % 3
    z = rng.integers(0, 4, n)
    w = (z + rng.integers(0, 2, n)) % 4
    v = rng.integers(0, 5, n)
    cols = {"x": x, "y": y, "z": z, "w": w, "v": v}
    sizes = {"x": 3, "y": 3, "z": 4, "w": 4, "v": 5}
    ones = {a: np.bincount(c, minlength=sizes[a]).astype(float) for a, c in cols.items()}

    def pair(a, b):
        t = np.zeros((sizes[a], sizes[b]))
        np.add.at(t, (cols[a], cols[b]), 1)
        return t

    return list(cols), sizes, ones, pair


def test_mst_finds_the_dependent_pairs_and_respects_forced_excluded_and_cell_limits():
    attrs, sizes, ones, pair = _toy()
    spec = SelectionSpec(force=[["v", "x"]], exclude=[["x", "z"]], extra=0, triples=False)  # the tree alone
    p = select_mst(attrs, sizes, ones, pair, spec, rho=1.0, max_marginal_cells=16)
    pairs = {frozenset(e.pair) for e in p.selected}
    assert {frozenset("xy"), frozenset("zw"), frozenset("vx")} <= pairs
    assert len(pairs) == len(attrs) - 1  # a spanning tree
    assert frozenset("xz") not in pairs and ["x", "z"] in p.excluded
    assert all(e.cells <= 16 for e in p.selected) and ["z", "v"] in p.over_cell_limit  # 20 cells
    assert [e.how for e in p.selected if frozenset(e.pair) == frozenset("vx")] == ["forced"]
    assert p.budget.rounds == 3 and p.budget.rho_mechanism + p.budget.rho_scores == pytest.approx(1.0)
    assert all(c.noisy_score is not None for c in p.near_threshold) and len(p.near_threshold) <= 5


def test_the_selection_refuses_unknown_or_contradictory_edges():
    attrs, sizes, ones, pair = _toy()
    with pytest.raises(SpecError, match="not modelled attributes"):
        select_mst(attrs, sizes, ones, pair, SelectionSpec(force=[["x", "nope"]]), 1.0, 10**6)
    with pytest.raises(SpecError, match="forces and excludes the same pair"):
        select_mst(attrs, sizes, ones, pair, SelectionSpec(force=[["x", "y"]], exclude=[["y", "x"]]), 1.0, 10**6)


def test_at_tiny_budget_the_choice_is_noisy_at_a_calibrated_rate():
    """With ρ → 0 the mechanism is nearly uniform: over many draws the strongest pair is not always first
    (a selection that ignored its noise would always pick it)."""
    attrs, sizes, ones, pair = _toy(n=2000)
    firsts = [
        frozenset(
            select_mst(attrs, sizes, ones, pair, SelectionSpec(scores=0, triples=False), 1e-9, 10**6).selected[0].pair
        )
        for _ in range(60)
    ]
    assert len(set(firsts)) > 3


def _xor(n=20000, seed=0, extra_attrs=1):
    """c = a XOR b (10 % flipped): every pair is independent, the triple a×b×c is not — only a 3-way marginal sees
    it; the other attributes are independent noise."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
    cols = {"a": a, "b": b, "c": (a ^ b) ^ (rng.random(n) < 0.1)}
    cols |= {f"n{i}": rng.integers(0, 3, n) for i in range(extra_attrs)}
    sizes = {k: int(v.max()) + 1 for k, v in cols.items()}
    ones = {k: np.bincount(v, minlength=sizes[k]).astype(float) for k, v in cols.items()}

    def table(clique):
        t = np.zeros(tuple(sizes[x] for x in clique))
        np.add.at(t, tuple(cols[x] for x in clique), 1)
        return t

    return list(cols), sizes, ones, table


def test_mst_extra_rounds_choose_the_triple_that_only_a_3_way_table_shows():
    """With ``triples`` the rounds after the tree add the pairs, then the triples that pay: the XOR triple's
    interaction (no pair explains it: ~N·0.8 in L1) is far above its measurement's noise and is chosen; with pairs
    only no extra round can see it."""
    attrs, sizes, ones, table = _xor()
    spec = SelectionSpec(extra=6, triples=True, scores=0)  # 3 pairs after the tree, then triples
    p = select_mst(attrs, sizes, ones, lambda x, y: table((x, y)), spec, rho=1.0, max_marginal_cells=10**6, exact=table)
    assert {"a", "b", "c"} in [set(e.pair) for e in p.selected if len(e.pair) == 3]
    assert all(e.how == "selected" and e.round is not None for e in p.selected)
    no_triples = select_mst(
        attrs,
        sizes,
        ones,
        lambda x, y: table((x, y)),
        spec.model_copy(update={"triples": False}),
        rho=1.0,
        max_marginal_cells=10**6,
        exact=table,
    )
    assert all(len(e.pair) == 2 for e in no_triples.selected)


@settings(max_examples=200, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
    seed=st.integers(0, 10**6),
    sparse=st.booleans(),
    remove=st.booleans(),
)
def test_a_triples_interaction_score_moves_by_at_most_its_sensitivity(shape, seed, sparse, remove):
    """One record added to (or removed from) a triple's table moves its interaction score — the L1 distance from the
    best conditional-independence estimate of its pairs — by at most TRIPLE_SENSITIVITY (4): what the exponential
    mechanism and the reviewers' Gaussian scores are calibrated for. Sparse tables put the record in empty slices."""
    rng = np.random.default_rng(seed)
    table = rng.poisson(0.3 if sparse else 5.0, size=shape).astype(float)
    cell = tuple(int(rng.integers(0, k)) for k in shape)
    if remove:
        if table[cell] == 0:
            table[cell] = 1
        other = table.copy()
        other[cell] -= 1
    else:
        other = table.copy()
        other[cell] += 1
    a, b = (interaction_scores(lambda c, t=t: t, [("x", "y", "z")])[0] for t in (table, other))
    assert abs(a - b) <= TRIPLE_SENSITIVITY + 1e-9


@settings(max_examples=200, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 6), st.integers(1, 6)),
    seed=st.integers(0, 10**6),
    sparse=st.booleans(),
    remove=st.booleans(),
)
def test_a_pairs_margin_score_moves_by_at_most_its_sensitivity(shape, seed, sparse, remove):
    """One record added to (or removed from) a pair's table moves its distance from the product of its own margins
    by at most MARGIN_SENSITIVITY (4): what the mechanism divides the scores by. Sparse tables: empty rows."""
    rng = np.random.default_rng(seed)
    table = rng.poisson(0.3 if sparse else 5.0, size=shape).astype(float)
    cell = tuple(int(rng.integers(0, k)) for k in shape)
    other = table.copy()
    if remove:
        table[cell] = max(table[cell], 1)
        other = table.copy()
        other[cell] -= 1
    else:
        other[cell] += 1
    a, b = (margin_scores(lambda c, t=t: t, [("x", "y")])[0] for t in (table, other))
    assert abs(a - b) <= MARGIN_SENSITIVITY + 1e-9


def test_the_margin_score_is_free_of_the_noisy_one_ways_bias():
    """Two independent attributes with many sparse cells (w, v: 40 values, 1 % of the records in most) and a
    dependent pair of two values each (y = x in 60 % of the records, 5,922 records from independence): against noisy
    1-ways (σ = 160, a small 1-way share) the independent pair scores 10,399 — the 1-ways' noise, not the data — and
    the tree joins it first; against the pairs' own margins it scores 2,659 (its sampling deviation) and the first
    round picks x–y. The mechanism's Gumbel noise is small at this ρ."""
    rng = np.random.default_rng(7)
    n = 30_000
    x = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.6, x, 1 - x)
    w = np.where(rng.random(n) < 0.6, 0, rng.integers(1, 40, n))
    v = np.where(rng.random(n) < 0.6, 0, rng.integers(1, 40, n))
    cols, sizes = {"x": x, "y": y, "w": w, "v": v}, {"x": 2, "y": 2, "w": 40, "v": 40}

    def exact(clique):
        t = np.zeros([sizes[a] for a in clique])
        np.add.at(t, tuple(cols[a] for a in clique), 1)
        return t

    noisy = {a: exact((a,)) + rng.normal(0, 160, sizes[a]) for a in cols}
    spec = SelectionSpec(extra=0, triples=False, scores=0)
    first = {
        how: select_mst(
            list(cols), sizes, noisy, lambda a, b: exact((a, b)), spec.model_copy(update={"pair_score": how}), 10.0,
            10**6, exact=exact, one_way_sigma=160.0,
        ).selected[0].pair
        for how in ("noisy_one_ways", "exact_margins", "debiased_one_ways")
    }  # fmt: skip
    assert set(first["noisy_one_ways"]) == {"w", "v"}
    assert set(first["exact_margins"]) == {"x", "y"}
    assert set(first["debiased_one_ways"]) == {"x", "y"}  # the 1-ways' expected noise (σ from the plan) taken off
    assert SelectionSpec().pair_scoring == "debiased_one_ways"  # the default since issue 40's third pass
    assert "pair_score" not in SelectionSpec().model_dump()  # unstated, every agreement hashes as it did before
    with pytest.raises(ValueError, match="MST's option"):
        SelectionSpec(method="aim", pair_score="exact_margins")


def test_the_interaction_score_is_zero_for_a_chain_and_large_for_xor():
    """A chain a → b → c is what its pairs give (score 0); c = a XOR b is what no pair shows."""
    chain = np.einsum("ab,bc->abc", np.array([[30.0, 10], [5, 55]]), np.array([[0.7, 0.3], [0.2, 0.8]]))
    xor = np.array([[[50.0, 0], [0, 50]], [[0, 50], [50, 0]]])
    scores = interaction_scores(lambda c: {"chain": chain, "xor": xor}[c[0]], [("chain", "b", "c"), ("xor", "b", "c")])
    assert scores[0] == pytest.approx(0, abs=1e-9) and scores[1] == pytest.approx(200)


def test_mst_triples_keep_the_exclusions_the_cell_limit_and_the_model_limit():
    """No triple holds an excluded pair; a triple over the cell limit is never a candidate and is listed as over it;
    ``fits`` bounds the model whatever the cliques; no clique proposed is inside another (a pair a later triple holds
    is left to the triple: the agreement refuses nested marginals)."""
    attrs, sizes, ones, table = _xor(extra_attrs=2)
    pair = lambda x, y: table((x, y))
    excl = select_mst(
        attrs, sizes, ones, pair, SelectionSpec(extra=6, triples=True, exclude=[["a", "b"]]), 1.0, 10**6, exact=table
    )
    assert not any({"a", "b"} <= set(e.pair) for e in excl.selected)
    small = select_mst(attrs, sizes, ones, pair, SelectionSpec(extra=6, triples=True), 1.0, 8, exact=table)
    assert all(e.cells <= 8 for e in small.selected) and ["a", "n0", "n1"] in small.over_cell_limit  # 18 cells
    capped = select_mst(
        attrs,
        sizes,
        ones,
        pair,
        SelectionSpec(extra=6, triples=True),
        1.0,
        10**6,
        fits=lambda cliques: all(len(c) == 2 for c in cliques),
        exact=table,
    )
    assert all(len(e.pair) == 2 for e in capped.selected)
    for sel in (excl, small):  # no clique inside another: Φ lists no marginal another implies
        cliques = [set(e.pair) for e in sel.selected]
        assert not any(c < d for c in cliques for d in cliques)


def test_mst_extra_rounds_stop_when_no_clique_pays_for_its_noise():
    """Independent attributes and a release σ large enough that every triple's expected noise exceeds its interaction
    score: after the pairs, the "stop" candidate wins the first triple round, so no triple is added."""
    rng = np.random.default_rng(1)
    n, attrs = 2000, ["p", "q", "r", "s"]
    cols = {x: rng.integers(0, 4, n) for x in attrs}
    sizes = dict.fromkeys(attrs, 4)
    ones = {x: np.bincount(v, minlength=4).astype(float) for x, v in cols.items()}

    def table(clique):
        t = np.zeros((4,) * len(clique))
        np.add.at(t, tuple(cols[x] for x in clique), 1)
        return t

    spec = SelectionSpec(extra=10, triples=True, scores=0, share=0.99)  # the release gets 1 %: a large σ
    p = select_mst(attrs, sizes, ones, lambda x, y: table((x, y)), spec, rho=0.5, max_marginal_cells=10**6, exact=table)
    assert len(p.selected) == 6 and all(len(e.pair) == 2 for e in p.selected)  # every pair, then "stop": no triple


def test_propose_select_spends_once_and_the_release_reuses_the_one_ways(tmp_path):
    """sdgov propose --select mst (task code): the 1-ways drawn by selection are *reused* by the release of the
    proposed spec, the ledger holds ρ(1-ways) + ρ(selection) + ρ(pairs) = the agreed ρ, and proposing the same
    draft again reads the logged proposal back (no second selection, no second spend)."""
    from sdgov.tasks.measure import measure
    from sdgov.tasks.select_phi import propose_selection, write_proposed_spec
    from tests.conftest import agree

    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = selection_draft(tmp_path)
    proposals, summary = propose_selection(
        str(draft), Site.resolve(root), "sel1", "Ada Analyst", None, None, signed_proposal(root, draft, keys)
    )
    proposal = proposals[None]  # one model: no split parts
    assert summary["how"] == "drawn" and set(summary["one_ways"].values()) == {"drawn"}
    assert len(proposal.selected) == 4 and proposal.selected[0].how == "forced"
    agains, summary2 = propose_selection(
        str(draft), Site.resolve(root), "sel2", "Ada Analyst", None, None, signed_proposal(root, draft, keys)
    )
    again = agains[None]  # one model: no split parts
    assert summary2["how"] == "reused" and set(summary2["one_ways"].values()) == {"reused"}
    assert again.pairs == proposal.pairs

    proposed = write_proposed_spec(draft, {None: proposal.pairs}, draft.with_name("proposed.yaml"))
    spec = yaml.safe_load(proposed.read_text())
    spec["approvals"] = "approvals.yaml"
    proposed.write_text(yaml.safe_dump(spec, sort_keys=False))
    sign_standing_approval(proposed, root, keys)  # the agreed Φ's standing approval, signed by its people
    agreed = agree(proposed, Site.resolve(str(root)), "rel1")
    measured = measure.fn(agreed, Site.resolve(str(root)))
    budget = json.loads(Path(measured.statement.path).read_text())
    hows = {tuple(s["attributes"]): s["how"] for s in budget["statistics"]}
    assert all(h == "reused" for c, h in hows.items() if len(c) == 1)
    assert all(h == "drawn" for c, h in hows.items() if len(c) == 2)
    plan = json.loads((Path(agreed.run_dir) / "privacy_plan.json").read_text())
    acct = ledger.account(Site.resolve(root), agreed.data.name, agreed.data.fingerprint)
    assert acct.spent_rho == pytest.approx(plan["rho"], rel=1e-9)  # ρ(1-ways) + ρ(selection) + ρ(pairs), once
    assert plan["selection_rho"] == pytest.approx(proposal.budget.rho)


def test_a_second_registry_reads_the_selection_back_from_the_authority(tmp_path):
    """One budget per controller: the same draft on the same data, proposed in a second registry, copies the
    selection and its 1-ways (same pairs, same bytes) and charges nothing."""
    from sdgov.tasks.select_phi import propose_selection

    first, second = tmp_path / "a", tmp_path / "b"
    keys_a = controller_registry(first, tmp_path / "keys-a")
    keys_b = controller_registry(second, tmp_path / "keys-b")
    draft = selection_draft(tmp_path)
    proposals, _ = propose_selection(
        str(draft), Site.resolve(first), "sel1", "Ada Analyst", None, None, signed_proposal(first, draft, keys_a)
    )
    proposal = proposals[None]  # one model: no split parts
    agains, summary = propose_selection(
        str(draft), Site.resolve(second), "sel2", "Ada Analyst", None, None, signed_proposal(second, draft, keys_b)
    )
    again = agains[None]  # one model: no split parts
    assert summary["how"] == "reused" and set(summary["one_ways"].values()) == {"reused"}
    assert again.pairs == proposal.pairs
    assert [e.event for e in Registry(second).events()].count(ledger.SPENT) == 0
    assert {p.name: p.read_bytes() for p in (second / "measurements").glob("*.json")} == {
        p.name: p.read_bytes() for p in (first / "measurements").glob("*.json")
    }
    assert Registry(second).verify() == []


def test_the_extra_pairs_stay_within_the_exact_inference_limit(tmp_path):
    """``privacy.selection.extra`` adds the best pairs beyond the tree while the model stays within
    ``limits.max_exact_cells`` (so the proposed Φ is fitted exactly): unlimited, all 10 pairs of the 5 attributes
    are chosen; limited, fewer, and the chosen model is within the limit."""
    from sdgov.data.schema import load_schema
    from sdgov.generators.registry import generator
    from sdgov.tasks.select_phi import propose_selection

    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = selection_draft(tmp_path)
    raw = yaml.safe_load(draft.read_text())
    raw["privacy"]["selection"]["extra"] = 6
    attrs = raw["phi"]["all_kway"][0]["attributes"]
    sizes = load_schema(draft.parent / raw["schema"]).domain(attrs)

    def proposed(limits: dict, name: str) -> list[tuple[str, ...]]:
        raw["limits"] = limits
        path = draft.with_name(f"{name}.yaml")
        path.write_text(yaml.safe_dump(raw, sort_keys=False))
        proposals, _ = propose_selection(
            str(path), Site.resolve(root), name, "Ada Analyst", None, None, signed_proposal(root, path, keys)
        )
        proposal = proposals[None]  # one model: no split parts
        return [tuple(p) for p in proposal.pairs]

    def cells(pairs: list[tuple[str, ...]]) -> int:
        return generator("pgm").model_cells(attrs, [(a,) for a in attrs] + pairs, sizes)

    everything = proposed({}, "unlimited")
    assert len(everything) == 10
    limit = (cells(everything) + cells(everything[:4])) // 2  # room for the tree and some, not every pair
    within = proposed({"max_exact_cells": limit}, "limited")
    assert 4 <= len(within) < 10 and cells(within) <= limit


def test_the_cli_writes_a_proposal_and_a_proposed_spec_that_resolves(tmp_path, capsys):
    from sdgov.agreement.load import load_spec

    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = selection_draft(tmp_path)
    out = tmp_path / "elsewhere" / "proposed.yaml"
    out.parent.mkdir()
    code, stdout, err = captured_cli(
        capsys,
        "propose",
        "--select",
        "mst",
        "--spec",
        str(draft),
        "--as",
        "Ada Analyst",
        "--key",
        str(keys["Ada Analyst"]),
        "--root",
        str(root),
        "--out",
        str(out),
    )
    assert code == 0, err
    assert "forced   Age × Health" in stdout and "proposed spec:" in stdout
    loaded = load_spec(out)  # paths made absolute: it resolves from another directory
    ag = loaded.agreement
    assert f"proposed agreement: {ag.sha256()}" in stdout  # what will be signed, without a validate run to learn it
    assert sum(len(c) == 1 for c in ag.cliques) == 5 and sum(len(c) == 2 for c in ag.cliques) == 4
    assert ("Age", "Health") in ag.cliques
    # the agreement states each selected pair's weight, its cells^(1/3): the hash binds how Φ's budget is split
    sizes = loaded.schema_.domain(ag.attributes)
    assert ag.privacy.weights == {
        ",".join(c): cells_weight(sizes[c[0]] * sizes[c[1]], 1 / 3) for c in ag.cliques if len(c) == 2
    }
    events = [e.event for e in Registry(root).events()]
    assert events.count("budget_spent") == 2 and events[-1] == "phi_selected"  # 1-ways, then the selection


def test_a_sandbox_registry_refuses_a_selection_naming_the_commands_that_make_it_work(tmp_path, capsys):
    """A registry made by ``sdgov init`` alone runs a release on a standing approval, but a proposal needs its
    analyst in a committed approvers registry: one line that says which commands set one up, nothing spent."""
    from tests.conftest import init_registry

    root = init_registry(tmp_path / "registry")
    draft = selection_draft(tmp_path)
    code, _, err = captured_cli(
        capsys, "propose", "--select", "mst", "--spec", str(draft), "--as", "Ada Analyst", "--root", str(root)
    )
    assert code == 2 and err.count("\n") == 1
    assert "'sdgov keygen'" in err and "'sdgov approvers commit" in err and "approvers.yaml" in err
    assert "budget_spent" not in [e.event for e in Registry(root).events()]


def test_a_draft_with_pairs_is_refused_in_one_line_before_any_spend(tmp_path, capsys):
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = selection_draft(tmp_path)
    raw = yaml.safe_load(draft.read_text())
    raw["phi"]["marginals"] = [["Age", "Sex"]]
    draft.write_text(yaml.safe_dump(raw, sort_keys=False))
    code, _, err = captured_cli(
        capsys,
        "propose",
        "--select",
        "mst",
        "--spec",
        str(draft),
        "--as",
        "Ada Analyst",
        "--key",
        str(keys["Ada Analyst"]),
        "--root",
        str(root),
    )
    assert code == 2 and err.count("\n") == 1 and "lists only 1-way marginals" in err
    assert "budget_spent" not in [e.event for e in Registry(root).events()]


def test_the_card_states_the_selection_budget():
    from sdgov.budget.statement import guarantee
    from tests.statements import statement_of

    p = PrivacySpec(rho=0.03, selection=SelectionSpec(share=0.5, one_way=0.5))
    plan = plan_privacy(p, [("a",), ("b",), ("a", "b")], delta=1e-3)
    text = guarantee(statement_of(plan))
    assert f"ρ = {0.03 * 0.5 * 0.5:.6g} of that total went to the exponential mechanism" in text
    plain_plan = plan_privacy(PrivacySpec(rho=0.03), [("a", "b")], delta=1e-3)
    assert "private selection" not in guarantee(statement_of(plain_plan))
    # the PLD figure composed only the marginals' Gaussians and left the selection's ρ out: no PLD ε then
    from sdgov.budget.accounting import epsilon_pld

    assert epsilon_pld(plan) is None and epsilon_pld(plan_privacy(PrivacySpec(rho=0.03), [("a", "b")])) is not None


def test_a_selection_persisted_by_a_run_that_died_is_adopted_not_selected_again(tmp_path, monkeypatch):
    """Crash after the proposal was persisted but before it was logged: the re-run adopts that proposal under the
    earlier reservation — a second selection would be a second noisy look at the same scores."""
    import sdgov.measurement.selection.store as store
    from sdgov.tasks.select_phi import propose_selection

    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = selection_draft(tmp_path)

    def die(*args, **kwargs):
        raise SystemExit("killed after persisting the proposal")

    with monkeypatch.context() as m:
        m.setattr(store, "_log", die)
        with pytest.raises(SystemExit):
            propose_selection(
                str(draft), Site.resolve(root), "sel1", "Ada Analyst", None, None, signed_proposal(root, draft, keys)
            )
    before = [json.loads(p.read_text()) for p in (root / "measurements").glob("*.json")]
    before = [d for d in before if d.get("method") == "mst"]  # the proposal, beside the 1-way statistics
    assert len(before) == 1
    proposals, summary = propose_selection(
        str(draft), Site.resolve(root), "sel2", "Ada Analyst", None, None, signed_proposal(root, draft, keys)
    )
    proposal = proposals[None]  # one model: no split parts
    assert summary["how"] == "adopted" and proposal.model_dump(mode="json") == before[0]
    assert [e.event for e in Registry(root).events()].count("budget_spent") == 2  # 1-ways once, selection once


def test_the_records_a_selection_needs_count_the_margin_scores_sensitivity(tmp_path):
    """The pre-flight's bound on the records a selection needs (its round's Gumbel noise on the score) is four times
    as large with ``pair_score: exact_margins``: the score is divided by its sensitivity 4 before the mechanism."""
    from sdgov.agreement.load import load_spec
    from sdgov.measurement.selection.feasibility import min_selection_records, round_noise

    loaded = load_spec(selection_draft(tmp_path))
    agreement = loaded.agreement
    sizes = loaded.schema_.domain(agreement.attributes)
    sel = agreement.privacy.selection
    margins = agreement.model_copy(
        update={
            "privacy": agreement.privacy.model_copy(
                update={"selection": sel.model_copy(update={"pair_score": "exact_margins"})}
            )
        }
    )
    (noisy, m), (exact, m2) = round_noise(agreement, sizes, 0.01), round_noise(margins, sizes, 0.01)
    assert m == m2 and exact == pytest.approx(4 * noisy)
    assert min_selection_records(margins, sizes, 0.01) >= 4 * min_selection_records(agreement, sizes, 0.01) - 4
