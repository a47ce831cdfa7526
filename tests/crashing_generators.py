"""Third-party generators that crash (for the tests of crashes as verdicts of their own): registered as
``test_crash_<name>`` by the test plug-in's entry points (tests/plugins)."""

from __future__ import annotations

from typing import Any

from sdgov.audits.generators import honest_ipf


def in_factory(cliques: list, domain: dict, **params: Any) -> Any:
    raise ValueError("cannot allocate the model")


class _Crashes:
    def __init__(self, cliques: list, domain: dict, call: str, **params: Any) -> None:
        self.inner, self.call = honest_ipf(cliques, domain, **params), call

    def fit(self, records, weights=None, *, seed=None):
        if self.call == "fit":
            raise RuntimeError("singular matrix\nwith a second line")
        self.inner.fit(records, weights, seed=seed)

    def sample(self, n, seed):
        if self.call == "sample":
            raise KeyError("Occupation")
        return self.inner.sample(n, seed)


def in_fit(cliques: list, domain: dict, **params: Any) -> _Crashes:
    return _Crashes(cliques, domain, "fit", **params)


def in_sample(cliques: list, domain: dict, **params: Any) -> _Crashes:
    return _Crashes(cliques, domain, "sample", **params)
