"""Privacy-budget ledger across processes: two racing runs, and SIGKILL mid-measurement then a re-run of the flow."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdgov.base.hashing import sha256_bytes, sha256_file
from sdgov.governance import ledger
from sdgov.governance.site import Site
from sdgov.registry import commitment
from sdgov.registry.log import Registry
from tests.conftest import REPO
from tests.fixtures.ledger import RHO, measure_only, registry_with_lifetime, spec_at
from tests.governance import controller_registry, sign_standing_approval


def test_concurrent_runs_cannot_overspend(tmp_path):
    """Two processes race for the last ρ: exactly one gets it (the registry lock serialises check-and-spend)."""
    root = tmp_path / "registry"
    registry_with_lifetime(root, 1.5 * RHO)
    specs = [spec_at(tmp_path, 1, rho=RHO), spec_at(tmp_path, 2, rho=0.9 * RHO)]  # different σ: no statistic shared
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(s), str(root)],
            cwd=REPO,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for s in specs
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 3], outs
    assert [e.event for e in Registry(root).events()].count(ledger.SPENT) == 1


_CHILD = """
import sys, uuid
from sdgov.base.errors import BudgetError
from sdgov.intake.inputs import check_release_inputs
from sdgov.tasks.agree_phi import agree_phi
from sdgov.tasks.measure import measure
from sdgov.governance.site import Site
site = Site.resolve(sys.argv[2])
agreed = agree_phi.fn(check_release_inputs(site, sys.argv[1]), site, uuid.uuid4().hex)
try:
    measure.fn(agreed, site)
except BudgetError:
    sys.exit(3)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PREFECT_LOGGING_LEVEL": "ERROR", **extra}
    return env


@pytest.mark.parametrize("point", ["after_draw", "after_persist"])
def test_kill_9_during_and_after_measurement_then_rerun(tmp_path, point, prefect_server):
    """SIGKILL with the noise drawn but not persisted, or persisted but not logged; the re-run spends once."""
    from sdgov.flows.release import release_flow

    root = tmp_path / "registry"
    registry_with_lifetime(root, 1.5 * RHO)  # room for ONE spend only: a second spend would fail the re-run
    keys = controller_registry(root, tmp_path / "keys")  # the controller signs the budget in: the flow checks it
    spec = spec_at(tmp_path, 7, rows=1200)
    sign_standing_approval(spec, root, keys)  # with an approvers registry in force, typed names no longer count
    marker = tmp_path / "fault"
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.crashing_store", point, str(marker), str(spec), str(root)],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert child.poll() is None, child.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.1)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    persisted = {p.name: p.read_bytes() for p in (root / "measurements").glob("*.json")}
    assert len(persisted) == (11 if point == "after_persist" else 0)  # the demo's 11 marginals, one file each

    if point == "after_draw":  # nothing persisted: the re-run draws once, under the spend already reserved
        measure_only(spec, root)
        reg = Registry(root)
        events = [e.event for e in reg.events()]
        assert events.count(ledger.SPENT) == 1 and events.count("measured") == 1, events
        [acct] = ledger.ledger_summary(Site.resolve(reg.root))
        assert acct["spent_rho"] == pytest.approx(RHO) and reg.verify() == []
    with contextlib.redirect_stdout(io.StringIO()):
        result = release_flow(spec_path=str(spec), registry_root=str(root))
    reg = Registry(root)
    events = reg.events()
    assert [e.event for e in events].count(ledger.SPENT) == 1 and [e.event for e in events].count("measured") == 1
    stored = {p.name: p.read_bytes() for p in (root / "measurements").glob("*.json")}
    assert len(stored) == 11
    if persisted:
        assert stored == persisted, "the draws persisted before the crash are the ones released"
    [measured] = [e for e in events if e.event == "measured"]
    assert measured.artifacts == {f"measurements/{n}": sha256_bytes(b) for n, b in stored.items()}
    released = json.loads((Path(result.path) / "artifacts" / "measurements.json").read_text())
    commit = commitment.registry_committer(reg)  # ψ names each statistic by its commitment
    by_key = {commit("statistic", n.removesuffix(".json")): json.loads(b) for n, b in stored.items()}
    for m in released["measurements"]:  # ψ is assembled from exactly the stored statistics
        assert m["noisy_counts"] == by_key[m["statistic"]]["noisy_counts"]
    [acct] = ledger.ledger_summary(Site.resolve(reg.root))
    assert acct["spent_rho"] == pytest.approx(RHO)
    assert reg.verify() == []
    card = json.loads(Path(result.card_json).read_text())
    assert card["psi_sha256"] == sha256_file(Path(result.path) / "artifacts" / "measurements.json")
    this = 0 if point == "after_draw" else RHO  # after_draw: the re-run above drew it; after_persist: adopted here
    assert card["statement"]["spent_rho"] == pytest.approx(this)
    assert card["statement"]["spent_before_rho"] + card["statement"]["spent_rho"] == pytest.approx(RHO)
