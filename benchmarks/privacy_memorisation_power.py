"""Power of the memorisation check alone at a given synthetic factor K (issue 13: a 2 % memoriser on App 1):
python benchmarks/privacy_memorisation_power.py APP GENERATOR K SEEDS OUT.json"""

import json
import sys
import time
from pathlib import Path

from sdgov.agreement.load import load_spec
from sdgov.agreement.sections.privacy_risk import MEMORISATION_WORLDS, RiskPolicy
from sdgov.audits.privacy.base import GeneratorRef
from sdgov.audits.privacy.memorisation import memorisation_audit, memorisation_check
from sdgov.engines import load_encoded

REPO = Path(__file__).resolve().parents[1]
app, gen, K, seeds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
lo = load_spec(REPO / "examples" / "census2011" / f"{app}.yaml")
codes = load_encoded(REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv", lo.schema_)
attrs = list(lo.agreement.attributes)
ref = GeneratorRef(gen, tuple(tuple(c) for c in lo.agreement.cliques), lo.schema_.domain(attrs), {"sigma": 10.0})
rows = []
for seed in range(seeds):
    t = time.time()
    r = memorisation_audit(ref, codes[attrs].to_numpy(), MEMORISATION_WORLDS, 10_000, K, seed, 0.95, (0.99, 0.999))
    check = memorisation_check(r, RiskPolicy())
    rows.append(
        {
            "seed": seed,
            "level": check.level,
            "copy_share": r.copy_share,
            "lower": r.copy_share_lower,
            "seconds": round(time.time() - t, 1),
        }
    )
    print(json.dumps(rows[-1]), flush=True)
    Path(out).write_text(json.dumps({"command": "python " + " ".join(sys.argv), "runs": rows}, indent=1))
