"""Issue 40 (A), (B): variants of the default MST selection on all attributes, one selection and several fits.

    nice -n 10 .venv/bin/python benchmarks/bench_selection_variants.py --data census --seed 0 \
        [--share 0.2] [--cells 250000] [--weights-exponent 0] [--before] [--iterations 1000 2000 3000] --out FILE
    ... --data adult --train adult.data --test adult.test ...

One draw of a selection (the default's, or with another ``privacy.selection.share``, model bound ``model_cells``;
``--before``: issue 16's ``extra: 24``, share 2/3, no triples, i.i.d. draws) and of its measurements, then one fit
per ``--iterations`` value on those same noisy tables, each sampled (the rounded sampler; ``--before``: i.i.d.) and
scored: the average TVD over all pairs and all triples, and on Adult the income accuracy of a classifier trained on
the synthetic rows (``bench_adult.accuracy``) under both samplers. So the fit's iterations are compared on the same
measurements, and the variants across seeds (each run draws its own noise). ``--weights-exponent X`` measures each
selected clique with a share of ρ proportional to its cells^X (``privacy.weights``; 0: equal, the product's). One
JSON line per fit is appended to ``--out`` (and printed), with the selection's cliques, CPU seconds of the
selection and of each fit (the first fit pays JAX's compilation).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_adult import accuracy, read_adult
from bench_aim import ADULT_SCHEMA, TARGET
from bench_selection import CENSUS, SCHEMA, bench_measurements, tvd_pairs, tvd_triples

from sdgov.agreement.spec import PrivacySpec, SelectionSpec
from sdgov.budget.accounting import plan_privacy
from sdgov.data.schema import load_schema
from sdgov.data.tables import contingency_table
from sdgov.engines import load_encoded
from sdgov.generators import registry
from sdgov.generators.sampler import iter_chunks
from sdgov.generators.settings import GeneratorSpec
from sdgov.measurement.marginals import measure_cliques
from sdgov.measurement.selection import model_size
from sdgov.measurement.selection.mst import select_mst


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", choices=["census", "adult"], default="census")
    ap.add_argument("--train", type=Path, help="UCI's adult.data (no header row)")
    ap.add_argument("--test", type=Path, help="UCI's adult.test (no header row)")
    ap.add_argument("--seed", type=int, default=0, help="the sampler's seed (the noise is drawn afresh every run)")
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--share", type=float, default=SelectionSpec().share)
    ap.add_argument("--cells", type=int, default=SelectionSpec().model_cells, help="privacy.selection.model_cells")
    ap.add_argument("--weights-exponent", type=float, default=0.0)
    scores = ["noisy_one_ways", "exact_margins", "debiased_one_ways"]
    ap.add_argument("--pair-score", choices=scores, default=SelectionSpec().pair_scoring)
    ap.add_argument("--before", action="store_true", help="issue 16's setting: extra 24, share 2/3, i.i.d. draws")
    ap.add_argument("--iterations", type=int, nargs="+", default=[GeneratorSpec().iterations])
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    schema = load_schema(SCHEMA if a.data == "census" else ADULT_SCHEMA)
    if a.data == "census":
        real, test = load_encoded(CENSUS, schema), None
    else:
        if a.train is None or a.test is None:
            raise SystemExit("bench_selection_variants.py: --data adult needs --train and --test")
        real, test = read_adult(a.train, schema), read_adult(a.test, schema)
    attrs = [c.name for c in schema.columns if c.name in real.columns]
    real = real[attrs]
    sizes = schema.domain(attrs)
    c0 = time.process_time()
    plugin = registry.generator("pgm")
    count = model_size.model_cells(plugin.name, plugin.model_cells)
    if a.before:
        sel = SelectionSpec(share=2 / 3, extra=24, triples=False, pair_score="noisy_one_ways")
        sampling, cells, arm = "iid", 250_000, "before"
    else:
        sel = SelectionSpec(share=a.share, model_cells=a.cells, pair_score=a.pair_score)
        sampling, cells = "round", a.cells
        arm = f"share {a.share}, model_cells {a.cells}, weights cells^{a.weights_exponent}, {a.pair_score}"
    p = PrivacySpec(epsilon=a.eps, delta=a.delta, selection=sel)
    ones = [(x,) for x in attrs]
    plan1 = plan_privacy(p, ones)
    assert plan1.selection_rho is not None
    m1 = measure_cliques(real, schema, ones, plan1.sigmas)
    proposal = select_mst(
        attrs,
        sizes,
        {m.clique[0]: m.array().astype(float) for m in m1},
        lambda x, y: contingency_table(real, (x, y), (sizes[x], sizes[y])).astype(float),
        sel,
        plan1.selection_rho,
        10**6,
        fits=lambda chosen: count(attrs, ones + list(chosen), sizes) <= cells,
        exact=lambda c: contingency_table(real, c, tuple(sizes[x] for x in c)).astype(float),
    )
    cliques = [tuple(e.pair) for e in proposal.selected]
    selection_cpu = time.process_time() - c0
    if a.weights_exponent:
        weights = {",".join(c): float(math.prod(sizes[x] for x in c)) ** a.weights_exponent for c in cliques}
        p = p.model_copy(update={"weights": weights})
    plan = plan_privacy(p, ones + cliques)
    m2 = measure_cliques(real, schema, cliques, plan.sigmas)
    mset = bench_measurements(schema, attrs, m1 + m2)
    head = {
        "data": a.data,
        "arm": arm,
        "seed": a.seed,
        "eps": a.eps,
        "delta": a.delta,
        "cliques": [list(c) for c in cliques],
        "triples": sum(len(c) == 3 for c in cliques),
        "model_cells": count(attrs, ones + cliques, sizes),
        "selection_cpu_s": round(selection_cpu, 2),
    }
    for iterations in a.iterations:
        t0 = time.process_time()
        model = plugin.fit(mset, GeneratorSpec(iterations=iterations))
        fit_cpu = time.process_time() - t0
        syn = pd.concat([pd.DataFrame(c) for c in iter_chunks(model, len(real), a.seed, sampling=sampling)])
        row = {**head, "iterations": iterations, "fit_cpu_s": round(fit_cpu, 1)}
        row |= {"tvd_pairs": tvd_pairs(real, syn, sizes), "tvd_triples": tvd_triples(real, syn, sizes)}
        if test is not None:
            features = [x for x in attrs if x != TARGET]
            other = "iid" if sampling == "round" else "round"
            again = pd.concat([pd.DataFrame(c) for c in iter_chunks(model, len(real), a.seed, sampling=other)])
            row[f"accuracy_{sampling}"] = accuracy(syn.reset_index(drop=True), test, features)
            row[f"accuracy_{other}"] = accuracy(again.reset_index(drop=True), test, features)
        print(json.dumps(row), flush=True)
        if a.out:
            with a.out.open("a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
