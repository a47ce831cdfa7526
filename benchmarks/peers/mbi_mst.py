"""Peer: MST (McKenna, Miklau & Sheldon 2021) on mbi 2.0, as its reference implementation does it.

Run in the peers' own venv (not an sdgov dependency):  PY mbi_mst.py CODES.csv DOMAIN.json EPS DELTA ROWS OUT.csv
ρ/3 on the 1-ways (then the domain is compressed: values below 3σ merged), ρ/3 on the exponential mechanism
(Kruskal rounds), ρ/3 on the selected 2-ways; mbi's mirror descent; synthetic rows. Prints the seconds taken from
the data in memory to the synthetic rows in memory (selection + measurement + fit + sample).
"""

import itertools
import json
import math
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from mbi import Dataset, Domain, LinearMeasurement  # noqa: E402
from mbi.estimation import MirrorDescent  # noqa: E402
from scipy.cluster.hierarchy import DisjointSet  # noqa: E402
from scipy.special import logsumexp  # noqa: E402


def cdp_delta(rho, eps):
    if rho == 0:
        return 0.0
    amin, amax = 1.01, (eps + 1) / (2 * rho) + 2
    for _ in range(1000):
        alpha = (amin + amax) / 2
        deriv = (2 * alpha - 1) * rho - eps + math.log1p(-1.0 / alpha)
        amin, amax = (alpha, amax) if deriv < 0 else (amin, alpha)
    delta = math.exp((alpha - 1) * (alpha * rho - eps) + alpha * math.log1p(-1 / alpha)) / (alpha - 1.0)
    return min(delta, 1.0)


def cdp_rho(eps, delta):
    lo, hi = 0.0, eps + 1
    for _ in range(1000):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdp_delta(mid, eps) <= delta else (lo, mid)
    return lo


def measure(data, cliques, sigma, rng):
    w = np.ones(len(cliques)) / math.sqrt(len(cliques))
    out = []
    for c, wgt in zip(cliques, w):
        x = np.asarray(data.project(c).datavector(), dtype=float)
        out.append(LinearMeasurement(x + rng.normal(0, sigma / wgt, x.size), c, stddev=sigma / wgt))
    return out


def em(q, eps, rng):  # exponential mechanism, sensitivity 1, not monotonic (the reference's permute-free version)
    s = 0.5 * eps * q
    return rng.choice(q.size, p=np.exp(s - logsumexp(s)))


def main():
    codes, domain_file, eps, delta, rows, out = sys.argv[1:7]
    df = pd.read_csv(codes)
    sizes = json.loads(Path(domain_file).read_text())
    t0, c0 = time.perf_counter(), time.process_time()
    rng = np.random.default_rng()
    domain = Domain(tuple(sizes), tuple(sizes.values()))
    data = Dataset({c: df[c].to_numpy() for c in sizes}, domain)
    rho = cdp_rho(float(eps), float(delta))
    sigma = math.sqrt(3 / (2 * rho))
    ones = measure(data, [(c,) for c in sizes], sigma, rng)
    # compress: values whose noisy count is below 3σ merged into one
    mapping = {}
    for m in ones:
        y, s = np.asarray(m.noisy_measurement), m.stddev
        sup = y >= 3 * s
        if sup.sum() < y.size:
            mp = np.full(y.size, sup.sum(), dtype=int)
            mp[sup] = np.arange(sup.sum())
            mapping[m.clique[0]] = mp
    cdata = data.compress(mapping)
    cones = [m.compress(mapping, domain) for m in ones]
    cdom = cdata.domain
    est = MirrorDescent().estimate(cdom, cones, iters=1000)
    attrs = list(sizes)
    cands = list(itertools.combinations(attrs, 2))
    wgt = {}
    for a, b in cands:
        x = np.asarray(cdata.project((a, b)).datavector(), dtype=float)
        xh = np.asarray(est.project((a, b)).datavector(), dtype=float)
        wgt[(a, b)] = np.abs(x - xh).sum()
    ds = DisjointSet(attrs)
    r = len(attrs)
    eps_round = math.sqrt(8 * (rho / 3) / (r - 1))
    edges = []
    for _ in range(r - 1):
        cands = [e for e in cands if not ds.connected(*e)]
        e = cands[em(np.array([wgt[c] for c in cands]), eps_round, rng)]
        ds.merge(*e)
        edges.append(e)
    twos = measure(cdata, edges, sigma, rng)
    model = MirrorDescent().estimate(cdom, cones + twos, iters=3000)
    synth = model.synthetic_data(int(rows)).decompress(mapping)
    syn = pd.DataFrame({c: np.asarray(synth.data[c]) for c in attrs})
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    syn.to_csv(out, index=False)
    print(json.dumps({"seconds": secs, "cpu_seconds": cpu, "edges": [list(e) for e in edges], "rho": rho}))


if __name__ == "__main__":
    main()
