"""Issue 26 item 3: the pre-flight's rule for a selection draft (a split part) too small for its noise, measured.

    .venv/bin/python benchmarks/bench_selection_feasibility.py [--trials 20] [--rho 0.005] [--seed 0]

The rule (:mod:`sdgov.measurement.selection.feasibility`): a part needs ``n* = b·ln(m) / MIN_DEPENDENCE`` records,
``b`` one selection round's Gumbel scale at the part's selection ρ and ``m`` its candidate pairs. On the census
extract (``../shared/data``) this prints

1. how far the census pairs are from independence (L1 distance / N), which ``MIN_DEPENDENCE`` = 0.1 stands for;
2. what MST picks on random samples of ``n*/4``, ``n*`` and ``4·n*`` census records at that ρ (the release's own
   1-way measurement and :func:`~sdgov.measurement.selection.mst.select_mst`): the share of its picks that are
   pairs at least 0.1 from independence, against the share among all candidates (what a choice at random gets),
   measured in the same run.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sdgov.agreement.resolve import resolve  # noqa: E402
from sdgov.agreement.spec import ReleaseSpec  # noqa: E402
from sdgov.budget.accounting import plan_privacy  # noqa: E402
from sdgov.data.schema import load_schema  # noqa: E402
from sdgov.data.tables import contingency_table  # noqa: E402
from sdgov.engines import load_encoded  # noqa: E402
from sdgov.measurement.marginals import measure_cliques  # noqa: E402
from sdgov.measurement.selection.feasibility import MIN_DEPENDENCE, min_selection_records  # noqa: E402
from sdgov.measurement.selection.mst import select_mst  # noqa: E402

CENSUS = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"
SCHEMA = REPO / "examples" / "census2011" / "schema.yaml"
ATTRS = ["Region", "Sex", "Age", "Marital Status", "Health", "Economic Activity"]


def dependence(codes, sizes: dict[str, int], a: str, b: str) -> float:
    """L1 distance of the pair's table from the product of its 1-ways, over N."""
    t = contingency_table(codes, (a, b), (sizes[a], sizes[b])).astype(float)
    n = t.sum()
    return float(np.abs(t - np.outer(t.sum(1), t.sum(0)) / n).sum() / n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--rho", type=float, default=0.005, help="the selection's ρ (a split part's share)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not CENSUS.is_file():
        sys.exit(f"needs the census extract at {CENSUS}")
    schema = load_schema(SCHEMA)
    codes = load_encoded(CENSUS, schema)
    every = {c.name: c for c in schema.columns}
    all_sizes = schema.domain([n for n in every if n in codes.columns and n not in schema.derived])
    deps = sorted((dependence(codes, all_sizes, a, b), a, b) for a, b in itertools.combinations(list(all_sizes), 2))[
        ::-1
    ]
    d = np.array([x[0] for x in deps])
    print(f"census pairs: {len(d)}; L1 distance from independence / N: max {d.max():.3f}, median {np.median(d):.3f}, "
          f"share >= {MIN_DEPENDENCE}: {(d >= MIN_DEPENDENCE).mean():.2f}")  # fmt: skip
    named = {(a, b): x for x, a, b in deps}
    am = named.get(("Age", "Marital Status"), named.get(("Marital Status", "Age")))
    print(f"  Age × Marital Status: {am:.3f}; strongest: {deps[0][1]} × {deps[0][2]} {deps[0][0]:.3f}")

    spec = ReleaseSpec.model_validate(
        {
            "name": "feasibility",
            "dataset": {"name": "census", "path": str(CENSUS)},
            "schema": str(SCHEMA),
            "phi": {"all_kway": [{"k": 1, "attributes": ATTRS}]},
            "privacy": {
                "rho": args.rho / (0.5 * 0.5),
                "selection": {"share": 0.5, "one_way": 0.5, "triples": False, "extra": 0},
            },
            "seed": 0,
        }
    )
    ag = resolve(spec, schema)
    sizes = schema.domain(ag.attributes)
    plan = plan_privacy(ag.privacy, ag.cliques)
    assert plan.selection_rho is not None and abs(plan.selection_rho - args.rho) < 1e-12
    n_star = min_selection_records(ag, sizes, args.rho)
    strong = {frozenset((a, b)) for a, b in itertools.combinations(ATTRS, 2) if dependence(codes, sizes, a, b) >= 0.1}
    pairs = list(itertools.combinations(ATTRS, 2))
    baseline = sum(frozenset(p) in strong for p in pairs) / len(pairs)
    print(f"selection ρ = {args.rho:g} over {ATTRS}: n* = {n_star:,} records; at random a pick is a pair >= 0.1 from "
          f"independence with probability {baseline:.2f}")  # fmt: skip
    rng = np.random.default_rng(args.seed)
    sigmas = {m.clique: m.sigma for m in plan.marginals}
    assert ag.privacy.selection is not None

    def picked(sample, rho: float, noisy: bool = True) -> float:
        """The share of MST's picks on ``sample`` at ``rho`` that are pairs >= 0.1 from independence."""
        scale = sigmas if noisy else dict.fromkeys(sigmas, 0.0)
        ones = {m.clique[0]: m.array().astype(float) for m in measure_cliques(sample, schema, ag.cliques, scale)}
        tables = {p: contingency_table(sample, p, (sizes[p[0]], sizes[p[1]])).astype(float) for p in pairs}
        prop = select_mst(
            ATTRS, sizes, ones, lambda a, b: tables[(a, b)], ag.privacy.selection, rho, ag.limits.max_marginal_cells
        )
        return sum(frozenset(e.pair) in strong for e in prop.selected) / len(prop.selected)

    oracle = picked(codes, 1e6, noisy=False)  # every census record, practically no noise: the best a tree does
    print(f"  the noiseless tree on all records: {oracle:.2f}")
    for factor in (0.25, 1.0, 4.0):
        n = max(int(n_star * factor), 10)
        shares = [
            picked(codes.iloc[rng.choice(len(codes), size=n, replace=False)].reset_index(drop=True), args.rho)
            for _ in range(args.trials)
        ]
        share = float(np.mean(shares))
        print(f"  n = {factor:g}·n* = {n:,}: share of MST's picks >= 0.1 from independence {share:.2f} "
              f"({share / baseline:.2f}× random; {(share - baseline) / (oracle - baseline):.0%} of the way from random "
              f"to the noiseless tree), {args.trials} trials")  # fmt: skip


if __name__ == "__main__":
    main()
