"""Peer: dpmm's MSTPipeline (dpmm 0.1.9), run in the peers' own venv (not an sdgov dependency).

    PY dpmm_mst.py CODES.csv DOMAIN.json EPS DELTA ROWS OUT.csv

The data are sdgov's integer codes with the schema's domain sizes, so dpmm's own binning (which would spend part of
ε on numeric bins) is disabled: all of ε goes to MST. Prints the seconds from the data in memory to the synthetic
rows in memory (selection + measurement + fit + sample).
"""

import json
import sys
import time
from pathlib import Path

import pandas as pd
from dpmm.pipelines import MSTPipeline


def main():
    codes, domain_file, eps, delta, rows, out = sys.argv[1:7]
    df = pd.read_csv(codes)
    sizes = json.loads(Path(domain_file).read_text())
    t0, c0 = time.perf_counter(), time.process_time()
    pipe = MSTPipeline(epsilon=float(eps), delta=float(delta), disable_processing=True, n_jobs=1)
    pipe.fit(df[list(sizes)], domain=sizes)
    syn = pipe.generate(int(rows))
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    syn.to_csv(out, index=False)
    print(json.dumps({"seconds": secs, "cpu_seconds": cpu}))


if __name__ == "__main__":
    main()
