"""The privacy budget's figures: the plan (σ per marginal, ρ, the (ε, δ) it implies, under the controller's one
:class:`~sdgov.budget.accounting.PrivacyRule`), the noise itself, and the one typed privacy statement a release makes
at measure time (:mod:`.statement`), which every surface renders.

The ledger and the controller's budget authority, which hold what was spent, are :mod:`sdgov.governance`'s; the
statement takes their figures as input.

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "AuthorityHead": "statement",
    "DEFAULT_DELTA": "accounting",
    "Epsilon": "statement",
    "ExactMeasurement": "statement",
    "Origin": "statement",
    "OtherScale": "statement",
    "PrivacyPlan": "accounting",
    "PrivacyRule": "accounting",
    "PrivacyStatement": "statement",
    "add_noise": "accounting",
    "cumulative_epsilon": "statement",
    "epsilon_of_rho": "accounting",
    "epsilon_pld": "accounting",
    "epsilon_pld_of_sigmas": "accounting",
    "guarantee": "statement",
    "headline": "statement",
    "key_facts": "statement",
    "ledger_words": "statement",
    "make_statement": "statement",
    "num": "statement",
    "part_plan": "accounting",
    "plain": "statement",
    "plan_agreement": "accounting",
    "plan_privacy": "accounting",
    "release_epsilon": "statement",
    "rho_of_sigma": "accounting",
    "rows": "statement",
    "selection_budget": "accounting",
}
__all__ = [
    "AuthorityHead",
    "DEFAULT_DELTA",
    "Epsilon",
    "ExactMeasurement",
    "Origin",
    "OtherScale",
    "PrivacyPlan",
    "PrivacyRule",
    "PrivacyStatement",
    "add_noise",
    "cumulative_epsilon",
    "epsilon_of_rho",
    "epsilon_pld",
    "epsilon_pld_of_sigmas",
    "guarantee",
    "headline",
    "key_facts",
    "ledger_words",
    "make_statement",
    "num",
    "part_plan",
    "plain",
    "plan_agreement",
    "plan_privacy",
    "release_epsilon",
    "rho_of_sigma",
    "rows",
    "selection_budget",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
