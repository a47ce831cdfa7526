"""A third-party generator that is honest in one part of a split synthesis and leaks in another (for the split
release's audits): registered as ``test_<name>`` by the test plug-in's entry points (tests/plugins)."""

from __future__ import annotations

from typing import Any

from sdgov.audits.generators import dishonest_ipf, honest_ipf


def leaks_where_phi_has(cliques: list, domain: dict, *, phi_has: list[str], **params: Any) -> Any:
    """IPF on Φ — but, when Φ holds the marginal ``phi_has`` (one part's Φ does, the other's not), IPF on Φ plus a
    table outside Φ (the shipped positive control's leak): a generator that leaks in that part only."""
    if tuple(sorted(phi_has)) in {tuple(sorted(c)) for c in cliques}:
        return dishonest_ipf(cliques, domain, **params)
    return honest_ipf(cliques, domain, **params)
