"""SDGOV_JAX_CACHE_DIR (sdgov/base/jaxsetup.py): a fit that loads mbi's compiled programs from the cache gives the same
synthetic data, bit for bit, as the fit that compiled them. Two fresh processes, one cold cache: the first compiles
and writes, the second loads. Exact marginals (no noise) and a fixed sampling seed, so the bytes must match."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO

FIT = """
import hashlib, sys
import numpy as np, yaml
from sdgov.engines import load_encoded
from sdgov.generators.registry import generator
from sdgov.measurement.marginals import measure_agreement
from sdgov.budget.accounting import plan_privacy
from sdgov.generators.sampler import iter_chunks
from sdgov.agreement.load import load_spec
from tests.conftest import make_demo_inputs
from pathlib import Path

import yaml

spec = make_demo_inputs(Path(sys.argv[1]), rows=500)
raw = yaml.safe_load(spec.read_text())
raw["phi"] = {"marginals": [["Sex", "Age"], ["Age", "Education"]]}
raw["privacy"] = {"noise": "none"}
raw["generator"] = {"name": "pgm", "iterations": 30}
spec.write_text(yaml.safe_dump(raw, sort_keys=False))
loaded = load_spec(spec)
ag = loaded.agreement
real = load_encoded(loaded.data_path, loaded.schema_)
mset = measure_agreement(real, loaded.schema_, ag, plan_privacy(ag.privacy, ag.cliques), "fp")
rows = next(iter_chunks(generator("pgm").fit(mset, ag.generator), 2000, 7))
print(hashlib.sha256(b"".join(np.ascontiguousarray(rows[a]).tobytes() for a in sorted(rows))).hexdigest())
"""


def _fit(cache: Path, work: Path) -> str:
    env = {**os.environ, "SDGOV_JAX_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", FIT, str(work)], env=env, capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.split()[-1]


def test_a_fit_from_the_compilation_cache_is_the_fit_that_compiled_it(tmp_path):
    cache = tmp_path / "cache"
    compiled = _fit(cache, tmp_path / "a")
    written = sorted(p.name for p in cache.iterdir())
    assert written, "the first process wrote its compiled programs"
    loaded = _fit(cache, tmp_path / "b")
    assert sorted(p.name for p in cache.iterdir()) == written, "the second compiled nothing new: it loaded them"
    assert loaded == compiled


def test_the_cache_is_on_by_default_in_the_users_cache_dir_and_off_when_set_empty(monkeypatch, tmp_path):
    """Every command of a release is a fresh process (validate's dry run, then the release's fit compile the same
    programs): unset, the compiled programs go to ``$XDG_CACHE_HOME/sdgov/jax``; a directory named wins; empty: none."""
    from sdgov.base.jaxsetup import cache_dir

    monkeypatch.delenv("SDGOV_JAX_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == str(tmp_path / "sdgov" / "jax")
    monkeypatch.setenv("SDGOV_JAX_CACHE_DIR", str(tmp_path / "shared"))
    assert cache_dir() == str(tmp_path / "shared")
    monkeypatch.setenv("SDGOV_JAX_CACHE_DIR", "")
    assert cache_dir() is None


def test_a_model_compiled_by_one_sdgov_process_is_loaded_by_the_next(tmp_path):
    """``sdgov validate`` compiles the spec's model in its dry run; the next command (here validate again, as
    ``release`` would) loads it instead of compiling it again. Without one hash seed for every ``sdgov`` process
    (:func:`sdgov.commands.fixed_hash_seed`) mbi traces a star-shaped Φ into a different program in each process
    and the cache never serves it."""
    from tests.conftest import make_demo_inputs

    spec = make_demo_inputs(tmp_path / "inputs", rows=300)
    raw = yaml.safe_load(spec.read_text())
    others = ["Region", "Sex", "Education", "Economic Activity", "Occupation", "Health"]
    raw["phi"] = {"marginals": [["Age", a] for a in others]}  # a hub: set order shows in the traced program
    raw["generator"] = {"name": "pgm", "iterations": 10}
    spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    env |= {"SDGOV_JAX_CACHE_DIR": str(tmp_path / "cache"), "JAX_LOG_COMPILES": "1"}
    sdgov = str(Path(sys.executable).with_name("sdgov"))
    logs = []
    for _ in range(2):
        shutil.rmtree(tmp_path / "cache" / "dry-runs", ignore_errors=True)  # the dry run fits again: its programs
        run = subprocess.run([sdgov, "validate", "--spec", str(spec)], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        logs.append(run.stderr)
    hit = "Persistent compilation cache hit for 'jit__multi_step'"
    assert hit not in logs[0] and hit in logs[1]
