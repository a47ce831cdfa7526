"""The demo spec's pre-registered privacy audit on the demo data: python benchmarks/privacy_demo_check.py N"""

import sys
import time
from pathlib import Path

import yaml

from sdgov.agreement.sections.privacy_risk import PrivacyRiskSettings
from sdgov.audits.privacy.run import audit_spec_privacy
from sdgov.data.schema import load_schema
from sdgov.demo import inputs
from sdgov.demo.data import write_demo_data

out = Path("/tmp/demo_priv")
out.mkdir(exist_ok=True)
data = write_demo_data(load_schema(inputs() / "schema.yaml"), out / "data.csv", rows=20000)
spec = yaml.safe_load((inputs() / "spec.yaml").read_text())
pr = PrivacyRiskSettings(**spec["privacy_risk"])
for seed in range(int(sys.argv[1])):
    t = time.time()
    st = pr.settings.model_copy(update={"seed": seed})
    r = audit_spec_privacy(
        inputs() / "spec.yaml", None, st, pr.policy, data_path=out / "data.csv", params=pr.generator_params
    )
    print(seed, r.verdict, round(time.time() - t, 1), flush=True)
    for c in r.checks:
        print("  ", c.level, c.name, c.detail[:260], flush=True)
