"""Private selection by AIM: its rounds stay within the declared ρ, it keeps the draft's forced/excluded pairs and
the cell limit, and a retry after a crash replays the journal instead of drawing again.

The model between rounds is mbi in a release (:func:`sdgov.generators.pgm_mbi.marginal_estimator`); most tests
give AIM a cheap stand-in (measured tables where measured, else the product of the 1-ways), since what they check —
the accounting, the candidates, the journal — does not depend on how good the model is.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import sdgov.measurement.selection.aim as aim
from sdgov.agreement.spec import SelectionSpec
from sdgov.budget.accounting import rho_of_sigma
from sdgov.data.psi import Measurement
from sdgov.governance.site import Site
from sdgov.measurement.selection.aim import Aim, AimJournal
from sdgov.measurement.selection.mst import rho_of_gumbel
from sdgov.registry.log import Registry
from tests.fixtures.drafts import captured_cli, selection_draft
from tests.governance import controller_registry, signed_proposal


def _data(n_attrs: int, rows: int = 2000, seed: int = 0):
    """A small categorical table: a chain a0 → a1 → … of noisy copies, so some pairs matter more than others."""
    rng = np.random.default_rng(seed)
    sizes = {f"a{i}": 2 + i % 3 for i in range(n_attrs)}
    attrs = list(sizes)
    cols = {attrs[0]: rng.integers(0, sizes[attrs[0]], rows)}
    for prev, a in zip(attrs, attrs[1:]):
        copy = rng.random(rows) < 0.7
        cols[a] = np.where(copy, cols[prev] % sizes[a], rng.integers(0, sizes[a], rows))

    def exact(clique):
        t = np.zeros([sizes[a] for a in clique])
        np.add.at(t, tuple(cols[a] for a in clique), 1)
        return t

    ones = [
        Measurement(clique=(a,), shape=(sizes[a],), sigma=5.0, noisy_counts=exact((a,)).astype(int).tolist())
        for a in attrs
    ]
    return attrs, sizes, ones, exact


def _estimate(measurements: list[Measurement]):
    """Stand-in model: the latest measurement of a clique, else the product of its 1-ways."""
    tables = {m.clique: np.clip(m.array().astype(float), 0, None) for m in measurements}
    total = float(np.mean([t.sum() for c, t in tables.items() if len(c) == 1]))

    def table(clique):
        if clique in tables:
            return tables[clique]
        out = np.ones(())
        for a in clique:
            p = tables[(a,)] / max(tables[(a,)].sum(), 1.0)
            out = np.multiply.outer(out, p)
        return total * out

    return table


def _cells(sizes):
    return lambda cliques: sum(math.prod(sizes[a] for a in c) for c in cliques)


def _run(attrs, sizes, ones, exact, spec, rho, cell_limit=10**6, **kw):
    selector = Aim(spec=spec, rho=rho, max_marginal_cells=cell_limit, max_model_cells=10**9, estimate=_estimate,
              model_cells=_cells(sizes), **kw)  # fmt: skip
    return selector.run(attrs, sizes, ones, exact)


@settings(max_examples=25, deadline=None)
@given(
    rho=st.floats(1e-4, 5.0),
    scores=st.sampled_from([0.0, 0.1, 0.5]),
    rounds=st.integers(1, 12),
    n_attrs=st.integers(3, 5),
    triples=st.booleans(),
    forced=st.booleans(),
)
def test_aims_rounds_never_spend_more_than_the_declared_selection_rho(rho, scores, rounds, n_attrs, triples, forced):
    """Whatever the budget, the planned rounds and the annealing, the rounds' OpenDP-mapped ρ (Gumbel selections +
    Gaussian measurements) plus the reviewers' scores is at most the declared ρ — and AIM leaves little unspent."""
    attrs, sizes, ones, exact = _data(n_attrs, rows=500)
    spec = SelectionSpec(
        method="aim", scores=scores, rounds=rounds, triples=triples, force=[["a0", "a1"]] if forced else []
    )
    p = _run(attrs, sizes, ones, exact, spec, rho)
    per_round = [r.rho_measure + r.rho_select for r in p.aim_rounds]
    assert all(r.rho_measure == rho_of_sigma(r.sigma) for r in p.aim_rounds)
    assert all(r.gumbel_scale is None or r.rho_select == rho_of_gumbel(r.gumbel_scale) for r in p.aim_rounds)
    total = math.fsum(per_round) + p.budget.rho_scores
    assert p.budget.rho_spent == pytest.approx(total, rel=1e-12)
    assert total <= rho * (1 + 1e-9)
    assert total >= rho * (1 - 1e-6)  # the last round takes what is left


def test_aim_keeps_forced_and_excluded_pairs_and_the_cell_limit():
    attrs, sizes, ones, exact = _data(5)  # sizes 2, 3, 4, 2, 3
    spec = SelectionSpec(method="aim", triples=True, rounds=20, force=[["a3", "a4"]], exclude=[["a0", "a1"]])
    p = _run(attrs, sizes, ones, exact, spec, rho=2.0, cell_limit=12)
    measured = [set(r.clique) for r in p.aim_rounds]
    assert p.aim_rounds[0].how == "forced" and measured[0] == {"a3", "a4"}
    assert any({"a3", "a4"} <= set(e.pair) for e in p.selected)  # in Φ: as itself, or inside a later triple
    assert all(not {"a0", "a1"} <= c for c in measured)  # no pair, and no triple holding the excluded pair
    assert all(math.prod(sizes[a] for a in c) <= 12 for c in measured)
    assert ["a1", "a2", "a4"] in p.over_cell_limit  # 36 cells: never a candidate
    assert any(len(c) == 3 for c in measured)  # triples were candidates (a0×a3×a4: 12 cells)
    assert len({tuple(e.pair) for e in p.selected}) == len(p.selected)  # a clique measured again is listed once
    assert all(e.noisy_score is not None for e in p.selected if e.how == "selected")  # the reviewers' scores


def test_aim_finds_the_chain_at_a_generous_budget():
    attrs, sizes, ones, exact = _data(4, rows=5000)
    p = _run(attrs, sizes, ones, exact, SelectionSpec(method="aim", rounds=6, triples=False), rho=5.0)
    assert {frozenset(e.pair) for e in p.selected[:3]} == {frozenset(("a0", "a1")), frozenset(("a1", "a2")),
                                                            frozenset(("a2", "a3"))}  # fmt: skip


def test_a_retry_replays_the_journal_and_draws_only_the_rounds_left(monkeypatch):
    """Crash after some rounds were persisted: the retry keeps those rounds' choices and noise (no second Gumbel or
    Gaussian draw for them) and draws only the rest, within the same ρ."""
    attrs, sizes, ones, exact = _data(4)
    spec = SelectionSpec(method="aim", rounds=8, force=[["a0", "a1"]])
    saved: list[AimJournal] = []

    def crash_on_the_fourth(journal: AimJournal) -> None:
        saved.append(journal)
        if len(saved) == 4:
            raise SystemExit("killed after persisting a round")

    with pytest.raises(SystemExit):
        _run(attrs, sizes, ones, exact, spec, rho=0.5, persist=crash_on_the_fourth)
    journal = saved[-1]
    assert len(journal.rounds) >= 2

    draws = {"gauss": 0, "gumbel": 0}
    real_noise, real_max = aim.add_noise, aim._noisy_max

    def counted_noise(*a, **k):
        draws["gauss"] += 1
        return real_noise(*a, **k)

    def counted_max(scale):
        draws["gumbel"] += 1
        return real_max(scale)

    monkeypatch.setattr(aim, "add_noise", counted_noise)
    monkeypatch.setattr(aim, "_noisy_max", counted_max)
    p = _run(attrs, sizes, ones, exact, spec, rho=0.5, journal=journal)
    replayed = len(journal.rounds)
    assert [r.model_dump(include={"clique", "sigma"}) for r in p.aim_rounds[:replayed]] == [
        r.model_dump(include={"clique", "sigma"}) for r in journal.rounds
    ]
    assert draws["gauss"] == len(p.aim_rounds) - replayed
    assert draws["gumbel"] == sum(r.how == "selected" for r in p.aim_rounds[replayed:])
    assert p.budget.rho_spent is not None and p.budget.rho_spent <= 0.5 * (1 + 1e-9)


def _aim_draft(tmp_path: Path, rounds: int = 4) -> Path:
    draft = selection_draft(tmp_path)
    raw = yaml.safe_load(draft.read_text())
    raw["privacy"]["selection"].update({"method": "aim", "rounds": rounds})
    draft.write_text(yaml.safe_dump(raw, sort_keys=False))
    return draft


def test_propose_select_aim_survives_a_crash_mid_rounds_without_a_second_spend(tmp_path, monkeypatch):
    """Through the registry: the selection's ρ is reserved once, before the first round; a run killed after two
    rounds leaves their draws in the journal; the retry continues them under that reservation (one spend) and logs
    the journal with the proposal."""
    import sdgov.generators.pgm_mbi as pgm_mbi
    from sdgov.measurement.selection.store import journal_path
    from sdgov.tasks.select_phi import propose_selection

    monkeypatch.setattr(pgm_mbi, "marginal_estimator", lambda attrs, sizes, iters: _estimate)  # model: see top
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = _aim_draft(tmp_path)
    real_noise, calls = aim.add_noise, []

    def dies_on_the_third(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise SystemExit("killed mid-rounds")
        return real_noise(*a, **k)

    with monkeypatch.context() as m:
        m.setattr(aim, "add_noise", dies_on_the_third)
        with pytest.raises(SystemExit):
            propose_selection(
                str(draft), Site.resolve(root), "sel1", "Ada Analyst", None, "aim", signed_proposal(root, draft, keys)
            )
    journals = list((root / "measurements").glob("*.aim-rounds.json"))
    assert len(journals) == 1
    before = json.loads(journals[0].read_text())["rounds"]
    assert len(before) == 2  # the forced pair and the first selected round, persisted before the crash

    proposals, summary = propose_selection(
        str(draft), Site.resolve(root), "sel2", "Ada Analyst", None, "aim", signed_proposal(root, draft, keys)
    )
    proposal = proposals[None]  # one model: no split parts
    assert summary["how"] == "drawn" and proposal.method == "aim"
    after = json.loads(journal_path(Registry(root), summary["selection_statistic"]).read_text())["rounds"]
    assert after[:2] == before  # same choices, same noise
    events = Registry(root).events()
    assert [e.event for e in events].count("budget_spent") == 2  # 1-ways once, the selection once
    measured = [e for e in events if e.event == "measured" and "aim" in (e.comment or "")]
    assert len(measured) == 1 and any(k.endswith(".aim-rounds.json") for k in measured[0].artifacts)


def test_select_aim_on_an_mst_draft_is_refused_in_one_line_before_any_spend(tmp_path, capsys):
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft = selection_draft(tmp_path)  # method: mst (the default)
    code, _, err = captured_cli(capsys, "propose", "--select", "aim", "--spec", str(draft), "--as", "Ada Analyst",
                        "--key", str(keys["Ada Analyst"]), "--root",
                        str(root))  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "privacy.selection.method is mst" in err
    assert "budget_spent" not in [e.event for e in Registry(root).events()]


def test_aims_options_are_refused_for_mst_and_msts_for_aim():
    with pytest.raises(ValueError, match="AIM's option"):
        SelectionSpec(method="mst", rounds=5)
    assert SelectionSpec(method="mst", triples=True).triples  # MST's extra rounds may choose triples too
    with pytest.raises(ValueError, match="MST's option"):
        SelectionSpec(method="aim", extra=3)
    default = SelectionSpec()  # issue 40: pairs then triples, up to 48 rounds after the tree, share 0.2
    assert (default.triples, default.extra_rounds, default.share, default.model_cells) == (True, 48, 0.2, 250_000)
    assert "extra" not in default.model_dump(mode="json")  # absent: the default number of rounds


def test_the_card_says_aim_spent_the_selection_rho_on_its_rounds():
    from sdgov.agreement.spec import PrivacySpec
    from sdgov.budget.accounting import plan_privacy
    from sdgov.budget.statement import guarantee
    from tests.statements import statement_of

    def privacy_statement(plan):
        return guarantee(statement_of(plan))

    p = PrivacySpec(rho=0.03, selection=SelectionSpec(method="aim", share=0.5, one_way=0.5))
    text = privacy_statement(plan_privacy(p, [("a",), ("b",), ("a", "b")], delta=1e-3))
    assert f"private selection (AIM): ρ = {0.03 * 0.5 * 0.5:.6g} of that total went to AIM's rounds" in text
    mst = plan_privacy(PrivacySpec(rho=0.03, selection=SelectionSpec()), [("a",), ("a", "b")], delta=1e-3)
    assert "selection_method" not in plan_privacy(PrivacySpec(rho=0.03), [("a", "b")], delta=1e-3).model_dump()
    assert mst.selection_method == "mst" and "(MST)" in privacy_statement(mst)


def test_the_model_between_rounds_is_mbi_and_answers_every_pair():
    """mbi's estimate of a measured pair is that pair; a pair joined through a measured chain is inferred from it
    (much closer than independence); the axes follow the asked order."""
    from sdgov.generators.pgm_mbi import marginal_estimator

    attrs, sizes, ones, exact = _data(4)

    def measured(c):
        return Measurement(
            clique=c, shape=exact(c).shape, sigma=1.0, noisy_counts=exact(c).astype(int).ravel().tolist()
        )

    table = marginal_estimator(attrs, sizes, 200)([*ones, measured(("a0", "a1")), measured(("a1", "a2"))])
    assert np.abs(table(("a0", "a1")) - exact(("a0", "a1"))).sum() < 10
    assert np.allclose(table(("a2", "a1")), table(("a1", "a2")).T)
    independent = np.multiply.outer(exact(("a0",)), exact(("a2",))) / 2000
    chain = np.abs(table(("a0", "a2")) - exact(("a0", "a2"))).sum()
    assert chain < 0.5 * np.abs(independent - exact(("a0", "a2"))).sum()
