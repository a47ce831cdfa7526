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
selected clique with a share of ρ proportional to its cells^X (``privacy.selection.weigh_by_cells``, written into
``privacy.weights`` as resolving the agreement does; absent: the product's default, 1/3 since issue 40's fifth pass;
0: equal σ, the default before). One
JSON line per fit is appended to ``--out`` (and printed), with the selection's cliques, CPU seconds of the
selection and of each fit (the first fit pays JAX's compilation).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_adult import accuracy
from bench_aim import TARGET, load
from bench_selection import bench_measurements, propose_mst, tvd_pairs, tvd_triples

from sdgov.agreement.spec import PrivacySpec, SelectionSpec
from sdgov.agreement.weights import with_cell_weights
from sdgov.budget.accounting import plan_privacy
from sdgov.generators import registry
from sdgov.generators.sampler import iter_chunks
from sdgov.generators.settings import GeneratorSpec
from sdgov.measurement.marginals import measure_cliques
from sdgov.measurement.selection import model_size


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
    ap.add_argument("--weights-exponent", type=float, default=None, help="default: the product's (weigh_by_cells)")
    scores = ["noisy_one_ways", "exact_margins", "debiased_one_ways"]
    ap.add_argument("--pair-score", choices=scores, default=SelectionSpec().pair_scoring)
    ap.add_argument("--before", action="store_true", help="issue 16's setting: extra 24, share 2/3, i.i.d. draws")
    ap.add_argument("--iterations", type=int, nargs="+", default=[GeneratorSpec().iterations])
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    real, schema, attrs, test = load(argparse.Namespace(data=a.data, train=a.train, test=a.test, columns=None))
    sizes = schema.domain(attrs)
    c0 = time.process_time()
    plugin = registry.generator("pgm")
    count = model_size.model_cells(plugin.name, plugin.model_cells)
    if a.before:
        sel = SelectionSpec(share=2 / 3, extra=24, triples=False, pair_score="noisy_one_ways", weigh_by_cells=0)
        sampling, cells, arm = "iid", 250_000, "before"
    else:
        sel = SelectionSpec(
            share=a.share, model_cells=a.cells, pair_score=a.pair_score, weigh_by_cells=a.weights_exponent
        )
        sampling, cells = "round", a.cells
        arm = f"share {a.share}, model_cells {a.cells}, weights cells^{sel.cells_exponent:.3g}, {a.pair_score}"
    p = PrivacySpec(epsilon=a.eps, delta=a.delta, selection=sel)
    ones = [(x,) for x in attrs]
    m1, proposal = propose_mst(real, schema, attrs, p, cells)
    cliques = [tuple(e.pair) for e in proposal.selected]
    selection_cpu = time.process_time() - c0
    plan = plan_privacy(with_cell_weights(p, cliques, sizes), ones + cliques)
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
