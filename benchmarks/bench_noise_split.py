"""Issue 40, fifth pass: where a selected Φ's noise costs utility, and how its budget is best split among Φ.

    nice -n 10 .venv/bin/python benchmarks/bench_noise_split.py --data census [--redraws 5] \
        [--exponents 0 0.25 0.333 0.5 0.667] [--exact] --out FILE.jsonl
    ... --data adult --train adult.data --test adult.test ...

One selection at the product's defaults (its 1-ways and its Φ drawn once), then, holding that Φ fixed so that the
selection's own randomness does not blur the comparison:

* ``--exponents``: each of the ``--redraws`` rounds measures Φ again at every exponent x — each selected marginal's
  share of ρ ∝ its cells^x (``privacy.selection.weigh_by_cells``, written into ``privacy.weights`` as the agreement
  does; 0 is equal σ) — with fresh noise from the product's sampler, fits, samples (the rounded sampler) and scores
  the TVD over all pairs and all triples (Adult: the income accuracy too). Rounds pair the exponents: each draws
  them one after another on the same selection.
* ``--exact``: the same fit with the true counts in place of the noisy ones for the 1-ways, for the pairs, for the
  triples, then for all of them (the rest noisy, at equal σ): how much of the TVD each kind of marginal's noise
  causes, beside the fit on true counts, which only Φ's structure and the fit's iterations limit.

One JSON line per fit goes to ``--out`` (and stdout): the variant, the round, the scores and the fit's CPU seconds;
the last line holds the medians per variant. ``benchmarks/README.md``, issue 40's fifth pass, has the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_adult import accuracy
from bench_aim import TARGET, load
from bench_selection import bench_measurements, propose_mst, tvd_pairs, tvd_triples

from sdgov.agreement.spec import LimitsSpec, PrivacySpec, SelectionSpec
from sdgov.agreement.weights import with_cell_weights
from sdgov.budget.accounting import plan_privacy
from sdgov.data.psi import Measurement
from sdgov.data.schema import Clique
from sdgov.data.tables import contingency_table
from sdgov.generators import registry
from sdgov.generators.sampler import iter_chunks
from sdgov.generators.settings import GeneratorSpec
from sdgov.measurement.marginals import measure_cliques

EXACT = {"1-ways": 1, "pairs": 2, "triples": 3, "all": 0}  # which marginals get their true counts (0: every one)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", choices=["census", "adult"], default="census")
    ap.add_argument("--train", type=Path, help="UCI's adult.data (no header row)")
    ap.add_argument("--test", type=Path, help="UCI's adult.test (no header row)")
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--redraws", type=int, default=5, help="rounds of fresh noise per exponent")
    ap.add_argument("--exponents", type=float, nargs="*", default=[0, 0.25, 1 / 3, 0.5, 2 / 3])
    ap.add_argument("--exact", action="store_true", help="the fits with true counts for each kind of marginal")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    real, schema, attrs, test = load(argparse.Namespace(data=a.data, train=a.train, test=a.test, columns=None))
    sizes = schema.domain(attrs)
    ones: list[Clique] = [(x,) for x in attrs]
    p = PrivacySpec(epsilon=a.eps, delta=a.delta, selection=SelectionSpec())
    limit = LimitsSpec(max_exact_cells=SelectionSpec().model_cells).exact_cells()
    phi = [tuple(e.pair) for e in propose_mst(real, schema, attrs, p, limit)[1].selected]
    exact = {c: contingency_table(real, c, tuple(sizes[x] for x in c)) for c in ones + phi}
    print(json.dumps({"data": a.data, "phi": [list(c) for c in phi], "triples": sum(len(c) == 3 for c in phi)}))

    def score(variant: str, draw: int, measurements: list[Measurement]) -> dict:
        t0 = time.process_time()
        model = registry.generator("pgm").fit(bench_measurements(schema, attrs, measurements), GeneratorSpec())
        fit_cpu = time.process_time() - t0
        syn = pd.concat([pd.DataFrame(c) for c in iter_chunks(model, len(real), draw)], ignore_index=True)
        row = {"variant": variant, "round": draw, "fit_cpu_s": round(fit_cpu, 1)}
        row |= {"tvd_pairs": tvd_pairs(real, syn, sizes), "tvd_triples": tvd_triples(real, syn, sizes)}
        if test is not None:
            row["accuracy"] = accuracy(syn, test, [x for x in attrs if x != TARGET])
        emit(a.out, row)
        return row

    rows: list[dict] = []
    for draw in range(a.redraws):
        for x in a.exponents:
            p = PrivacySpec(epsilon=a.eps, delta=a.delta, selection=SelectionSpec(weigh_by_cells=x))
            plan = plan_privacy(with_cell_weights(p, phi, sizes), ones + phi)
            rows.append(score(f"cells^{x:.3g}", draw, measure_cliques(real, schema, ones + phi, plan.sigmas)))
    if a.exact:
        p = PrivacySpec(epsilon=a.eps, delta=a.delta, selection=SelectionSpec(weigh_by_cells=0))
        noisy = measure_cliques(real, schema, ones + phi, plan_privacy(p, ones + phi).sigmas)
        for name, k in EXACT.items():
            true = [
                m.model_copy(update={"noisy_counts": exact[m.clique].ravel().tolist()})
                if k in (0, len(m.clique))
                else m
                for m in noisy
            ]
            rows.append(score(f"true counts: {name}", 0, true))
        rows.append(score("true counts: none", 0, noisy))
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["variant"]].append(r)
    medians = {
        v: {k: statistics.median(r[k] for r in rs) for k in ("tvd_pairs", "tvd_triples", "accuracy") if k in rs[0]}
        for v, rs in by.items()
    }
    emit(a.out, {"medians": medians})


def emit(out: Path | None, row: dict) -> None:
    line = json.dumps(row, default=lambda v: float(v) if isinstance(v, np.floating) else str(v))
    print(line, flush=True)
    if out:
        with out.open("a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
