"""Privacy-risk evidence (issue 4): the ε_lower formula, the leaky generators failing, the CLI JSON contract.

Tiny data and few shadow worlds throughout (no JAX fits: IPF and independent-marginal base generators), so the
file runs in well under a minute on two cores. Full-scale figures: benchmarks/bench_privacy_risk.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from sdgov.agreement.sections.privacy_risk import RiskPolicy, RiskSettings
from sdgov.audits.privacy.base import select_targets
from sdgov.audits.privacy.canary import epsilon_lower, epsilon_lower_k, log_null_bound
from sdgov.audits.privacy.policy import load_risk_policy
from sdgov.audits.privacy.run import PrivacyAuditRun
from tests.fixtures.rare_category import INDEPENDENT, rare_category_data, tiny_spec

REPO = Path(__file__).resolve().parents[3]


# ----------------------------------------------------------------------------------------- ε_lower formula


def test_epsilon_lower_monotone_in_nu_and_closed_form():
    m, d, n, beta = 200, 8, 1000, 0.05
    nus = np.linspace(0.5, 60, 40)
    eps = [epsilon_lower_k(float(nu), m, m, d, n, beta) for nu in nus]
    assert all(a >= b for a, b in zip(eps, eps[1:])), "ε_lower must not increase with ν̂"
    assert eps[0] > eps[10] > 0 and eps[-1] == 0.0
    # k = m, δ = 0: the closed form (log β − L_m(ν̂)) / m, L from gammaln
    nu = 5.0
    L = (
        m * (math.log(n) + math.lgamma(d + 1) + d / 2 * math.log(math.pi) - math.lgamma(d / 2 + 1))
        + d * m * math.log(nu)
        - math.lgamma(d * m + 1)
    )
    assert log_null_bound(nu, m, d, n) == pytest.approx(L, rel=1e-12)
    assert epsilon_lower_k(nu, m, m, d, n, beta) == pytest.approx(max(0.0, (math.log(beta) - L) / m), rel=1e-12)
    # k = 1 is the single-canary bound P(D ≤ t) ≤ n·V_d·t^d, union over the m canaries
    t = 0.01
    log_vd = d / 2 * math.log(math.pi) - math.lgamma(d / 2 + 1)
    assert log_null_bound(t, 1, d, n) == pytest.approx(math.log(n) + log_vd + d * math.log(t), rel=1e-12)
    # a δ > 0 can only weaken the bound
    for nu in (0.5, 2.0, 5.0):
        assert epsilon_lower_k(nu, 4, m, d, n, beta, delta=1e-5) <= epsilon_lower_k(nu, 4, m, d, n, beta) + 1e-9


def test_epsilon_lower_finite_for_large_m_times_d():
    m, d, n = 200_000, 500, 10**6  # m·d = 10^8: Γ(m·d + 1) overflows any float; gammaln does not
    for nu in (1e-3, 1.0, 1e3, 1e6):
        e = epsilon_lower_k(nu, m, m, d, n, 0.05)
        assert math.isfinite(e) and e >= 0
    assert math.isfinite(log_null_bound(1.0, m, d, n))
    assert epsilon_lower_k(1e-3, m, m, d, n, 0.05) > epsilon_lower_k(1e3, m, m, d, n, 0.05)


def test_epsilon_lower_is_zero_when_output_ignores_the_canaries():
    """Null world: synthetic points independent of the canaries never refute even ε = 0 (β = 5%)."""
    rng = np.random.default_rng(1)
    from scipy.spatial import cKDTree

    hits = 0
    for _ in range(20):
        d = int(rng.integers(2, 9))
        y, z = rng.random((500, d)), rng.random((200, d))
        dist, _ = cKDTree(y).query(z)
        hits += epsilon_lower(dist, d, 500, 0.05).epsilon_lower > 0
    assert hits <= 2


# ----------------------------------------------------------------------------------------- leaky generators


def _wide_data(n: int, d: int = 8, k: int = 16, seed: int = 0) -> tuple[np.ndarray, list[str], dict[str, int]]:
    rng = np.random.default_rng(seed)
    attrs = [f"X{j}" for j in range(d)]
    return rng.integers(0, k, size=(n, d)), attrs, dict.fromkeys(attrs, k)


def test_copier_fails_exact_match_and_epsilon_lower():
    real, attrs, dom = _wide_data(3000)
    cliques = [(attrs[j], attrs[j + 1]) for j in range(len(attrs) - 1)]
    st = RiskSettings(train_rows=400, canaries=400, disclosure_rows=900, n_jobs=1, seed=3)
    params = {"base": INDEPENDENT, "sigma": 5.0}
    # claimed (ε, δ) = (1, 1e-6): the δ-aware bound needs m·δ well below β (see sdgov.audits.privacy.canary)
    leaky = PrivacyAuditRun(
        real=real,
        attributes=attrs,
        domain=dom,
        cliques=cliques,
        generator="copier",
        params=params,
        settings=st,
        policy=RiskPolicy(),
        claimed_epsilon=1.0,
        claimed_delta=1e-6,
        parts=("canary", "disclosure"),
    ).run()
    checks = {c.name: c.level for c in leaky.checks}
    assert leaky.verdict == "fail"
    assert checks["exact matches of real-unique records"] == "fail"
    u = leaky.disclosure.unique
    assert u.synthetic >= 5 > u.independent and u.synthetic > 3 * u.synthetic_holdout and u.p_value < 0.01
    assert leaky.epsilon_lower > 1.0, "ε_lower must refute the claimed ε = 1"
    assert checks["DP lower bound"] == "fail"
    # the same audit of the honest base generator passes both checks
    honest = PrivacyAuditRun(
        real=real,
        attributes=attrs,
        domain=dom,
        cliques=cliques,
        generator=INDEPENDENT,
        params={"sigma": 5.0},
        settings=st,
        policy=RiskPolicy(),
        claimed_epsilon=1.0,
        claimed_delta=1e-6,
        parts=("canary", "disclosure"),
    ).run()
    hc = {c.name: c.level for c in honest.checks}
    assert honest.epsilon_lower == 0.0 and honest.epsilon_lower_pure == 0.0 and hc["DP lower bound"] == "pass"
    assert hc["exact matches of real-unique records"] == "pass"


def test_outlier_rule_picks_the_rare_category_first():
    real, attrs, dom = rare_category_data()
    t = select_targets(real, attrs, list(dom.values()), 3, 2, seed=0)
    assert [x.kind for x in t] == ["outlier"] * 3 + ["random"] * 2
    assert t[0].index == 17 and t[0].count_single == 1
    assert all(x.count_full <= y.count_full for x, y in zip(t[:3], t[3:]))


def test_metadata_leak_gives_low_privacy_gain_for_the_outlier():
    real, attrs, dom = rare_category_data()
    cliques = [("A", "B"), ("B", "C"), ("C", "D")]
    st = RiskSettings(
        n_outliers=1, n_random=0, n_shadow=8, n_synth=4, train_rows=200, folds=4, rf_trees=50, ai_sets=1, n_jobs=1
    )
    res = PrivacyAuditRun(
        real=real,
        attributes=attrs,
        domain=dom,
        cliques=cliques,
        generator="category_leak",
        params={"base": INDEPENDENT, "sigma": 5.0},
        settings=st,
        policy=RiskPolicy(),
        claimed_epsilon=1.0,
        claimed_delta=1e-4,
        parts=("mia",),
    ).run()
    (r,) = res.targets
    assert r.target.index == 17
    assert r.privacy_gain < 0.5 and r.privacy_gain_ci[1] < 0.5
    assert res.min_privacy_gain == r.privacy_gain and res.verdict == "fail"
    assert r.attribute is not None and r.attribute.sensitive == "D"


# ----------------------------------------------------------------------------------------- CLI contract


FAST = [
    "--outliers",
    "1",
    "--random-targets",
    "1",
    "--shadows",
    "2",
    "--synth-sets",
    "2",
    "--train-rows",
    "100",
    "--canaries",
    "50",
    "--jobs",
    "1",
    "--settings",
    '{"folds": 2, "rf_trees": 10, "disclosure_rows": 300, "beyond_phi_rows": 300, "beyond_phi_synth_rows": 20000, '
    '"beyond_phi_bootstrap": 19, "memorisation_worlds": 4, "memorisation_rows": 300, "memorisation_synth_factor": 5}',
]


def test_cli_privacy_json_contract(tmp_path, capsys):
    from sdgov.commands import main

    spec = tiny_spec(tmp_path)
    out = tmp_path / "evidence.json"
    rc = main(
        [
            "audit",
            "privacy",
            "--spec",
            str(spec),
            "--json",
            "--out",
            str(out),
            "--policy",
            str(REPO / "examples" / "privacy_policy.yaml"),
            *FAST,
        ]
    )
    payload = json.loads(capsys.readouterr().out)
    assert rc == (1 if payload["verdict"] == "fail" else 0)
    assert payload["verdict"] in {"pass", "warn", "fail"}
    for key in ("verdict", "epsilon_lower", "min_privacy_gain", "exact_matches", "seconds"):
        assert key in payload
    assert isinstance(payload["epsilon_lower"], float) and payload["epsilon_lower"] >= 0
    assert payload["min_privacy_gain"] + 1e-9 >= 0 and isinstance(payload["exact_matches"], int)
    assert payload["seconds"] > 0 and payload["generator"] == "honest_ipf"
    assert payload["claimed_epsilon"] == pytest.approx(1.0, rel=1e-6)
    from sdgov.audits.privacy.mia import membership_adv_bound  # the membership check's line: a replaced record's

    allowed = membership_adv_bound(payload["claimed_epsilon"], payload["claimed_delta"])
    assert payload["dp_adv_bound_tight"] == pytest.approx(allowed)
    assert len(payload["targets"]) == 2
    assert 0 < payload["beyond_phi_p_value"] <= 1  # a default part: interactions beyond Φ
    section = json.loads(out.read_text())["section"]
    assert section["pg_plot_svg"].startswith("<svg") and section["dcr_plot_svg"].startswith("<svg")


def test_cli_privacy_third_party_generator_and_bad_path(tmp_path, capsys):
    from sdgov.commands import main

    spec = tiny_spec(tmp_path)
    rc = main(
        [
            "audit",
            "privacy",
            "--spec",
            str(spec),
            "--json",
            "--generator",
            "copier",
            "--params",
            json.dumps({"base": INDEPENDENT, "sigma": 5.0}),
            "--parts",
            "disclosure",
            *FAST,
        ]
    )
    payload = json.loads(capsys.readouterr().out)
    assert rc in (0, 1) and payload["generator"] == "copier"
    assert payload["epsilon_lower"] is None and payload["min_privacy_gain"] is None
    rc = main(["audit", "privacy", "--spec", str(spec), "--json", "--generator", "no_such_module:factory", *FAST])
    err = capsys.readouterr()
    assert rc == 2 and json.loads(err.out)["ok"] is False and "no_such_module" in err.err


def test_cli_refuses_an_unknown_part_before_reading_the_data(tmp_path, capsys):
    """A misspelt ``--parts`` is one line and exit 2 before the spec's data is read: the data path here does not
    exist, so an audit that read it first would answer with the missing file instead."""
    from sdgov.commands import main

    spec = tiny_spec(tmp_path)
    missing = tmp_path / "no-such-data.csv"
    rc = main(["audit", "privacy", "--spec", str(spec), "--data", str(missing), "--parts", "mia,memorisatoin"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "memorisatoin" in err[0] and "no-such-data" not in err[0]


def test_policy_file_is_validated(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("membership: {fail_below_pgg: 0.5}\n")
    from sdgov.audits.generator_protocol import AuditError

    with pytest.raises(AuditError, match="fail_below_pgg"):
        load_risk_policy(bad)
    assert load_risk_policy(REPO / "examples" / "privacy_policy.yaml") == RiskPolicy()


def test_attribute_inference_models():
    """Categorical S: a random forest; numeric (binned) S: a linear model with a normal predictive over the bins.
    Each gives the probability that a guess drawn from it is the query's own value."""
    from sdgov.audits.privacy.attribute import p_correct

    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(400, 2))
    synth = np.column_stack([x, x[:, 0]])  # S = first attribute, exactly
    q = np.array([[0, 1, 0], [3, 2, 3], [2, 0, 2]])
    wrong = q.copy()
    wrong[:, 2] = (wrong[:, 2] + 1) % 4
    for numeric in (False, True):
        assert p_correct(synth, q, 2, numeric, [4, 4, 4], 10, 0).min() > 0.95
        assert p_correct(synth, wrong, 2, numeric, [4, 4, 4], 10, 0).max() < 0.05
    # S independent of the rest: a drawn guess is right about as often as S's own share, not 0 or 1
    noise = np.column_stack([x, rng.integers(0, 4, size=400)])
    assert 0.1 < float(p_correct(noise, q, 2, False, [4, 4, 4], 30, 0).mean()) < 0.45


def test_attribute_inference_sees_a_copier_and_not_an_honest_generator():
    """Issue 26 item 5: a copier's members are inferred (their record is in the output, their other attributes
    shared by no one), non-members are not; a generator reading only 1-way margins gives members nothing more."""
    from sdgov.audits.privacy.base import GeneratorRef
    from sdgov.audits.privacy.mia import linkability

    real, attrs, dom = _wide_data(3000, d=6, k=12, seed=4)
    cliques = [(a,) for a in attrs]
    targets = select_targets(real, attrs, [12] * 6, 0, 4, seed=1)
    mask = np.ones(len(real), bool)
    mask[[t.index for t in targets]] = False
    st = RiskSettings(n_shadow=6, n_synth=1, train_rows=300, n_jobs=1, features=("hist",), ai_trees=20, seed=2)
    p = {}
    for name, path, params in [
        ("copier", "copier", {"base": INDEPENDENT}),
        ("honest", INDEPENDENT, {"sigma": 2.0}),
    ]:
        ref = GeneratorRef(path, tuple(cliques), dom, params)
        risks = linkability(ref, real[mask], targets, st, sensitive=attrs[-1])
        p[name] = [(r.attribute.p_in, r.attribute.p_out) for r in risks if r.attribute is not None]
    copier_in = np.mean([a for a, _ in p["copier"]])
    copier_out = np.mean([b for _, b in p["copier"]])
    assert copier_in > 0.5 and copier_out < 0.2, p["copier"]  # a resample holds 63 % of the members
    assert all(abs(a - b) < 0.1 for a, b in p["honest"]), p["honest"]
    assert all(0.02 < b < 0.2 for _, b in p["honest"]), p["honest"]  # about 1/12: the base rate, never 0 or 1


def test_epsilon_from_membership_advantage_inverts_the_dp_bound_of_a_replaced_record():
    """The shadow models' scores as an ε lower bound: the game replaces one record (B + t vs B + r), two add/remove
    steps, so the advantage an add/remove (ε, δ) allows is the tight bound at (2ε, (1 + e^ε)δ) — not at (ε, δ)."""
    from sdgov.audits.privacy.mia import dp_adv_bound_tight, epsilon_from_membership_advantage

    for eps in (0.1, 0.68, 1.0, 2.0, 5.0):
        for delta in (0.0, 1e-5):
            adv = dp_adv_bound_tight(2 * eps, (1 + math.exp(eps)) * delta)
            assert epsilon_from_membership_advantage(adv, delta) == pytest.approx(eps, rel=1e-9)
            # the add/remove bound at ε itself is below what ε allows in this game: it must not refute ε
            assert epsilon_from_membership_advantage(dp_adv_bound_tight(eps, delta), delta) < eps
    assert epsilon_from_membership_advantage(0.0, 1e-5) == 0.0 and epsilon_from_membership_advantage(-0.3, 0.0) == 0.0
    # the membership check fails above the same bound it inverts: one definition of what the claim allows
    from sdgov.audits.privacy.mia import membership_adv_bound

    for eps in (0.5, 1.0, 1.163):
        assert epsilon_from_membership_advantage(membership_adv_bound(eps, 1e-9), 1e-9) == pytest.approx(eps, rel=1e-9)
        assert membership_adv_bound(eps, 1e-9) > dp_adv_bound_tight(eps, 1e-9)
    assert epsilon_from_membership_advantage(1.0, 0.0) == math.inf
    assert epsilon_from_membership_advantage(0.5, 0.0) < epsilon_from_membership_advantage(0.6, 0.0)


def test_qi_copier_copies_exactly_the_records_unique_on_its_quasi_identifiers():
    """The issue-29 control: every training record whose quasi-identifier combination no other record holds is in
    every sample, once per sample over the base's rows; a record sharing its combination is not copied; a name outside
    the domain is refused."""
    import pandas as pd

    from sdgov.audits.generator_protocol import AuditError
    from sdgov.audits.privacy.leaky import qi_copier

    attrs, dom = ["A", "B", "C", "D"], {"A": 3, "B": 3, "C": 3, "D": 50}
    train = pd.DataFrame([[0, 0, 0, 7], [1, 1, 1, 8], [1, 1, 1, 9], [2, 2, 2, 10]], columns=attrs)
    gen = qi_copier([("A", "B")], dom, base=INDEPENDENT, quasi_identifiers=["A", "B", "C"])
    gen.fit(train, np.ones(len(train), np.int64), seed=0)
    assert gen.unique is not None and {tuple(r) for r in gen.unique} == {(0, 0, 0, 7), (2, 2, 2, 10)}
    for seed in (1, 2):
        out = gen.sample(40, seed)
        assert len(out) == 40
        rows = {tuple(r) for r in out.to_numpy()}
        assert {(0, 0, 0, 7), (2, 2, 2, 10)} <= rows  # unique on (A, B, C): copied
        assert (gen.sample(40, seed) == out).all().all()  # the same seed, the same rows
    default = qi_copier([("A", "B")], dom, base=INDEPENDENT)
    assert default.quasi_identifiers == ["A", "B", "C"]  # the first three attributes of the domain
    with pytest.raises(AuditError, match="quasi_identifiers"):
        qi_copier([("A", "B")], dom, base=INDEPENDENT, quasi_identifiers=["A", "Z"])


def test_shadow_pairs_hold_every_target_in_exactly_one_world_of_each_pair():
    """Issue 37: the membership game's worlds are shared by every target (LiRA's online design, in antithetic
    pairs): each world has n records, the two worlds of a pair share a base of n − T reference records, and each target
    is in one of them — so each target has n_shadow in-worlds and n_shadow out-worlds from 2·n_shadow fits."""
    from sdgov.audits.privacy.worlds import shadow_pairs

    rng = np.random.default_rng(0)
    reference = rng.integers(0, 1000, size=(5000, 2)) + np.array([0, 10_000])  # every record distinct from targets
    targets = np.array([[-t, -t] for t in range(1, 8)])
    worlds = shadow_pairs(reference, targets, n=200, pairs=6, seed=3)
    assert len(worlds.rows) == 12 and all(len(w) == 200 for w in worlds.rows)
    as_set = [{tuple(r) for r in w} for w in worlds.rows]
    for p in range(6):
        a, b = as_set[2 * p], as_set[2 * p + 1]
        assert len(a & b) == 200 - len(targets)  # the shared base
        assert (worlds.inside[2 * p] ^ worlds.inside[2 * p + 1]).all()
    for t, row in enumerate(map(tuple, targets)):
        ins, outs = worlds.in_and_out(t)
        assert all(row in as_set[w] for w in ins) and not any(row in as_set[w] for w in outs)
    assert 0 < worlds.inside[::2].sum() < 6 * len(targets)  # fair coins, not all on one side
    again = shadow_pairs(reference, targets, n=200, pairs=6, seed=3)
    assert all((x == y).all() for x, y in zip(worlds.rows, again.rows))


def test_a_removed_setting_is_refused_with_the_way_to_its_successor():
    """``memorisation_pairs`` (2·P fits) became ``memorisation_worlds``: an old pre-registered section is refused in
    one line that says what to write instead, not accepted with a changed meaning."""
    from pydantic import ValidationError

    from sdgov.base.loading import validation_message

    with pytest.raises(ValidationError) as err:
        RiskSettings.model_validate({"memorisation_pairs": 30})
    line = validation_message(err.value)
    assert "memorisation_worlds" in line and "\n" not in line


def test_the_part_registry_refuses_a_part_the_command_line_does_not_name():
    from sdgov.audits.privacy.part import PrivacyPart
    from sdgov.audits.privacy.registry import PRIVACY_PARTS, check_parts
    from sdgov.base.errors import InternalError

    class Extra(PrivacyPart):
        name = "extra"
        result_field = "extra"

    check_parts(PRIVACY_PARTS)
    with pytest.raises(InternalError, match="extra"):
        check_parts((*PRIVACY_PARTS, Extra()))
    with pytest.raises(InternalError, match="not unique"):
        check_parts((*PRIVACY_PARTS, PRIVACY_PARTS[0]))
