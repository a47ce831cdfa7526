"""Peer: OpenDP's own marginal-based synthesizers (``opendp.extras.mbi.AIM`` / ``MST``) at their defaults.

    PYTHONPATH=DIR PY opendp_mbi.py CODES.csv DOMAIN.json EPS DELTA ROWS OUT.csv {aim,mst}

OpenDP 0.16 (sdgov's pin) runs its ``extras.mbi`` on the versions its ``mbi`` extra pins — ``mbi==1.1.0`` and
``polars==1.36.1`` — not on sdgov's ``mbi==2.0.0`` (its estimator imports ``mbi.estimation.mirror_descent`` and its
MST reads ``Domain.attrs``, both gone in 2.0). ``DIR`` holds those two (``pip install --target DIR mbi==1.1.0
polars==1.36.1``) and is put first on the path; everything else is sdgov's venv. Not an sdgov dependency.

The data are sdgov's integer codes, so every column's keys (0 … size − 1) are declared, as the schema declares them:
OpenDP then spends nothing on discovering keys and the release is ρ-zCDP with ρ the largest whose conversion stays
within (EPS, DELTA) — the same ρ sdgov's plan gives the same (ε, δ). The algorithm is ``AIM()`` / ``MST()`` with no
argument changed (AIM: all 3-way workload, 90 % of each round to measurement, 80 MB model limit, 16 × attributes
rounds planned; both: half of ρ on the 1-ways, mbi 1.1's mirror descent, 1000 iterations), and the synthetic rows
come from ``ContingencyTable.synthesize`` (its default, randomized rounding). Prints the wall and CPU seconds
(``getrusage`` of the process and its children) from the data in memory to the synthetic rows in memory — of the
try that released: OpenDP's MST can refuse its own budget split by one ulp (then ρ is lowered by 1e-4, relative,
and the release run again; ``tries`` says how often).

``PEER_PROGRESS=FILE`` appends one line per AIM round to FILE (round, wall and CPU seconds so far, the round's model
size limit in MB): AIM at its defaults runs for hours on two cores, and the log says how far a run got when it is
stopped. It wraps OpenDP's private per-round constructor and changes nothing it computes.
"""

import json
import os
import resource
import sys
import time
from pathlib import Path

import opendp.prelude as dp
import polars as pl

dp.enable_features("contrib")


def cpu_seconds() -> float:
    """User + system CPU of this process (all its threads) and its waited-for children."""
    return sum(
        r.ru_utime + r.ru_stime
        for r in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )


def rho_of(eps: float, delta: float) -> float:
    """Largest ρ whose zCDP → (ε, δ) conversion (OpenDP's, as sdgov's plan uses) stays within ``eps`` at ``delta``."""

    def epsilon(rho: float) -> float:
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
        gauss = dp.m.make_gaussian(*space, scale=(1 / (2 * rho)) ** 0.5)
        return dp.c.make_zCDP_to_approxDP(gauss).map(1.0).epsilon(delta)

    return float(dp.binary_search(lambda rho: epsilon(rho) <= eps, bounds=(1e-12, 1e4)))


def log_rounds(path: str) -> None:
    """Log each AIM round OpenDP builds (``opendp.extras.mbi._aim._make_aim_marginal``) to ``path``."""
    from opendp.extras.mbi import _aim

    build, t0, c0, count = _aim._make_aim_marginal, time.perf_counter(), cpu_seconds(), [0]

    def logged(*args, **kwargs):
        count[0] += 1
        with open(path, "a") as f:
            wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
            f.write(f"round {count[0]} wall {wall:.1f} cpu {cpu:.1f} max_size_mb {kwargs.get('max_size', 0):.3f}\n")
        return build(*args, **kwargs)

    _aim._make_aim_marginal = logged


def main():
    codes, domain_file, eps, delta, rows, out, method = sys.argv[1:8]
    if os.environ.get("PEER_PROGRESS"):
        log_rounds(os.environ["PEER_PROGRESS"])
    sizes = json.loads(Path(domain_file).read_text())
    frame = pl.read_csv(codes).select(list(sizes)).cast(pl.Int64)
    rho = rho_of(float(eps), float(delta))
    algorithm = {"aim": dp.mbi.AIM, "mst": dp.mbi.MST}[method]()
    keys = {c: list(range(k)) for c, k in sizes.items()}
    for tries in range(1, 11):
        t0, c0 = time.perf_counter(), cpu_seconds()
        context = dp.Context.compositor(
            data=frame.lazy(), privacy_unit=dp.unit_of(contributions=1), privacy_loss=dp.loss_of(rho=rho)
        )
        try:
            table = context.query(rho=rho).select(list(sizes)).contingency_table(keys=keys, algorithm=algorithm)
            table = table.release()
            break
        except dp.OpenDPException as e:
            # MST splits its selection's ρ into rounds of prior(ρ / rounds) and can find their sum one ulp over
            # its share ("insufficient budget for query"); a ρ 0.01 % smaller changes the rounding (1e-9 did not)
            if "insufficient budget" not in str(e) or tries == 10:
                raise
            rho *= 1 - 1e-4
    syn = table.synthesize(int(rows))
    secs, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    syn.write_csv(out)
    cliques = sorted({tuple(m.clique) for m in table.marginals.flatten() if len(m.clique) > 1})
    info = {"seconds": secs, "cpu_seconds": cpu, "rho": rho, "tries": tries, "cliques": [list(c) for c in cliques]}
    print(json.dumps(info))


if __name__ == "__main__":
    main()
