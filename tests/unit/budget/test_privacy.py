"""zCDP accounting: OpenDP's numbers checked against an independent implementation of the CKS20 conversion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from sdgov.agreement.spec import PrivacySpec
from sdgov.budget.accounting import (
    add_noise,
    epsilon_of_rho,
    plan_privacy,
    rho_of_epsilon,
    rho_of_sigma,
)
from sdgov.governance.site import Site

CLIQUES = [("A", "B"), ("B", "C"), ("A", "C")]


def cks20_delta(rho: float, eps: float) -> float:
    """Canonne–Kamath–Steinke 2020, Prop. 12 — written independently of OpenDP as a test oracle."""

    def f(alpha: float) -> float:
        return (
            ((alpha - 1) * (alpha * rho - eps) + (alpha - 1) * math.log1p(-1 / alpha) - math.log(alpha))
            if alpha > 1
            else math.inf
        )

    res = minimize_scalar(f, bounds=(1 + 1e-9, 1e4), method="bounded", options={"xatol": 1e-12})
    return min(1.0, math.exp(res.fun))


@settings(max_examples=25, deadline=None)
@given(rho=st.floats(1e-4, 5.0), delta_exp=st.integers(3, 12))
def test_opendp_conversion_matches_cks20(rho, delta_exp):
    delta = 10.0**-delta_exp
    eps = epsilon_of_rho(rho, delta)
    assert eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-9  # never worse than the classic bound
    assert cks20_delta(rho, eps) == pytest.approx(delta, rel=0.05)


@settings(max_examples=25, deadline=None)
@given(eps=st.floats(0.05, 10.0), delta_exp=st.integers(3, 10))
def test_rho_of_epsilon_inverts(eps, delta_exp):
    delta = 10.0**-delta_exp
    rho = rho_of_epsilon(eps, delta)
    assert epsilon_of_rho(rho, delta) <= eps + 1e-9
    assert epsilon_of_rho(rho * 1.01, delta) > eps


def test_a_budget_planned_twice_in_one_process_is_searched_once(monkeypatch):
    """Each command plans its spec's (ε, δ) several times (pre-flight, policy, measure, card): OpenDP's search for ρ
    runs once, and every plan gets the same ρ."""
    import sdgov.base.opendp_lite as opendp

    searches = []
    search = opendp.binary_search
    monkeypatch.setattr(opendp, "binary_search", lambda *a, **k: searches.append(a) or search(*a, **k))
    spec = PrivacySpec(epsilon=0.7731, delta=1e-7)  # a budget no other test plans: not yet in the process
    plans = [plan_privacy(spec, CLIQUES) for _ in range(3)]
    assert len(searches) == 1
    assert plans[0] == plans[1] == plans[2] and plans[0].rho_budget == rho_of_epsilon(0.7731, 1e-7)


@settings(max_examples=30, deadline=None)
@given(rho=st.floats(1e-3, 10.0), w=st.lists(st.floats(0.1, 10.0), min_size=3, max_size=3))
def test_rho_budget_is_spent_exactly_and_split_by_weight(rho, w):
    spec = PrivacySpec(rho=rho, weights={"A,B": w[0], "B,C": w[1], "A,C": w[2]})
    plan = plan_privacy(spec, CLIQUES, delta=1e-3)
    assert plan.rho == pytest.approx(rho, rel=1e-9)
    shares = [m.rho / plan.rho for m in plan.marginals]
    assert shares == pytest.approx([x / sum(w) for x in w], rel=1e-9)


def test_sigma_gives_rho_and_floor_reports_max_epsilon():
    plan = plan_privacy(PrivacySpec(sigma=10), CLIQUES, delta=1e-5)
    assert plan.rho == pytest.approx(3 / 200)
    assert plan.delta == 1e-5
    floored = plan_privacy(PrivacySpec(rho=10.0, sigma_floor=10), CLIQUES, delta=1e-5)
    assert floored.floor_binding and all(m.sigma == 10 for m in floored.marginals)
    assert floored.rho == pytest.approx(3 / 200) and floored.floor_max_epsilon == pytest.approx(floored.epsilon)


def test_delta_comes_from_the_policy_never_from_the_record_count(tmp_path):
    """δ = 10^-ceil(log10 N) printed N's order of magnitude on the card (issue 25 item 2): δ is the policy's — a
    fixed 1e-9, or the power of ten below a public bound on N it declares — and the plan says where it came from;
    the same agreement on datasets of any size gets the same plan."""
    from sdgov.agreement.load import load_spec
    from sdgov.base.errors import PolicyError
    from sdgov.governance.policy import check_plan_allowed
    from tests.conftest import init_registry, make_demo_inputs

    ag = load_spec(make_demo_inputs(tmp_path / "in", rows=50)).agreement

    def plan(root, n):
        return check_plan_allowed(Site.resolve(root), ag, "fp", ag.dataset_name, n)

    root = init_registry(tmp_path / "default")
    plans = [plan(root, n) for n in (500, 3_000, 569_741)]
    assert [p.delta for p in plans] == [1e-9] * 3
    assert plans[0] == plans[1] == plans[2], "nothing in the plan depends on N"
    assert "fixed default" in plans[0].delta_source and "not derived from the data" in plans[0].delta_source
    bounded = plan(init_registry(tmp_path / "bound", public_max_records=60_000_000), 3_000)
    assert bounded.delta == 1e-8 and "public bound of 60,000,000 records" in bounded.delta_source
    both = plan(init_registry(tmp_path / "both", public_max_records=1_000, max_delta=1e-6), 3_000)
    assert both.delta == 1e-6 and "max_delta" in both.delta_source
    too_low = init_registry(tmp_path / "low", public_max_records=1_000)  # δ = 1e-4, but N = 20,000 > the bound
    with pytest.raises(PolicyError, match="not below 1/N for this dataset") as exc:
        plan(too_low, 20_000)
    assert "20,000" not in exc.value.one_line() and "20000" not in exc.value.one_line()


def test_noise_none_is_exact_and_says_so():
    plan = plan_privacy(PrivacySpec(noise="none"), CLIQUES, delta=1e-2)
    assert plan.noise == "none" and plan.epsilon is None
    counts = np.arange(12).reshape(3, 4)
    assert (add_noise(counts, 0.0) == counts).all()


def test_discrete_gaussian_noise_has_the_planned_scale():
    sigma = 10.0
    noise = add_noise(np.zeros(40_000, dtype=np.int64), sigma)
    assert noise.dtype == np.int64
    assert abs(noise.mean()) < 0.3 and noise.std() == pytest.approx(sigma, rel=0.03)
    assert rho_of_sigma(sigma) == pytest.approx(1 / (2 * sigma**2))


def test_two_draws_differ_no_seed_is_stored():
    a, b = add_noise(np.zeros(100, dtype=np.int64), 5.0), add_noise(np.zeros(100, dtype=np.int64), 5.0)
    assert (a != b).any()


def test_rows_equal_to_n_and_exact_releases_are_refused_unless_the_policy_allows_them(tmp_path):
    """A spec asking for exactly N synthetic rows would publish N (App 1 did), and ``noise: none`` releases exact
    tables: the controller's policy refuses both before anything is written, unless it declares N public
    (``record_count_public``) or allows exact releases (``allow_exact_releases``). The refusal never states N."""
    from sdgov.agreement.load import load_spec
    from sdgov.base.errors import PolicyError
    from sdgov.governance.policy import check_plan_allowed, rows_warning
    from tests.conftest import init_registry, make_demo_inputs, synthetic_rows

    ag = load_spec(make_demo_inputs(tmp_path / "in", rows=50)).agreement
    n = synthetic_rows(50)  # the spec's rows: said to be the data's record count below
    root = Site.resolve(init_registry(tmp_path / "default"))
    check_plan_allowed(root, ag, "fp", ag.dataset_name, n + 1)  # rows ≠ N: allowed
    with pytest.raises(PolicyError, match="is the confidential dataset's true record count") as exc:
        check_plan_allowed(root, ag, "fp", ag.dataset_name, n)
    assert "record_count_public" in exc.value.one_line()
    public = Site.resolve(init_registry(tmp_path / "public", record_count_public=True))
    check_plan_allowed(public, ag, "fp", ag.dataset_name, n)  # N declared public: allowed, the controller warned
    assert "exactly the confidential dataset's true record count" in (rows_warning(ag, n) or "")

    exact = ag.model_copy(update={"privacy": ag.privacy.model_validate({"noise": "none"}), "rows": None})
    with pytest.raises(PolicyError, match="does not allow exact releases"):
        check_plan_allowed(root, exact, "fp", ag.dataset_name, 50)
    exact_ok = {ag.dataset_name: {"allow_exact_releases": True}}
    allowed = Site.resolve(init_registry(tmp_path / "exact", datasets=exact_ok))
    assert check_plan_allowed(allowed, exact, "fp", ag.dataset_name, 50).noise == "none"


def test_a_tiny_sigma_floor_states_a_finite_epsilon_instead_of_a_traceback():
    """A controller's σ floor of 0.001 lets a release spend ρ = 5·10⁵ a marginal, where OpenDP's tight conversion
    overflows (``sdgov propose`` ended in a traceback): the floor's largest ε is then the classic zCDP bound
    ρ + 2√(ρ ln 1/δ), which the tight conversion never exceeds where both exist."""
    plan = plan_privacy(PrivacySpec(epsilon=1.0), CLIQUES, delta=1e-9, sigma_floor=0.001)
    rho = len(CLIQUES) * 1 / (2 * 0.001**2)
    assert plan.floor_max_epsilon == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e9)))
    assert math.isfinite(plan.epsilon) and not plan.floor_binding
    for r in (1.0, 100.0, 1e4):  # below the switch the tight ε is used, and it is under the classic bound
        assert epsilon_of_rho(r, 1e-9) < r + 2 * math.sqrt(r * math.log(1e9))
