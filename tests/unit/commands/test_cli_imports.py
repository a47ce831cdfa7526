"""Each command imports only what it uses (issue 27): the commands a person runs by hand to make a key, sign a
decision, list paused runs or read the trail never load JAX, mbi, OpenDP, scikit-learn or pandas (seconds of
imports), and the ones that need no server never load Prefect.

Behaviour, not timing: each command runs in a fresh interpreter, which then reports what is in ``sys.modules``
(``benchmarks/cli_startup.py`` measures the seconds).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("jax", "mbi", "opendp", "sklearn", "pandas")

RUN = """
import contextlib, io, json, sys
from sdgov.commands import main
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except Exception:  # an unreachable server: what matters is what was imported on the way
            pass
for module in json.loads(sys.argv[2]):
    __import__(module)
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""

RUN_ID = "0b6c9c1e-0000-4000-8000-000000000000"


def loaded_after(tmp_path: Path, argvs: list[list[str]], modules: tuple[str, ...] = (), **env: str) -> set[str]:
    """The top-level packages in ``sys.modules`` after running ``argvs`` (then importing ``modules``) in a fresh
    interpreter started in ``tmp_path``."""
    out = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps(argvs), json.dumps(list(modules))],
        cwd=tmp_path,
        env={**os.environ, "SDGOV_REGISTRY": str(tmp_path / "registry"), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_key_policy_and_registry_commands_load_nothing_heavy_and_no_prefect(tmp_path: Path) -> None:
    """``keygen``, ``init``, ``trail``, ``budget`` and ``registry verify`` read and write files: no Prefect, no
    numerical stack beyond numpy."""
    argvs = [
        ["keygen", "--out", str(tmp_path / "k.pem")],
        ["init"],
        ["trail"],
        ["budget"],
        ["registry", "verify"],
    ]
    loaded = loaded_after(tmp_path, argvs)
    assert (tmp_path / "k.pem").is_file() and (tmp_path / "registry" / "policy.yaml").is_file()  # they ran
    assert not loaded & {*HEAVY, "prefect"}, sorted(loaded & {*HEAVY, "prefect"})


@pytest.mark.parametrize(
    "argv",
    [
        ["runs"],
        ["sign", RUN_ID, "--as", "Ann", "--key", "k.pem"],
        ["approve", RUN_ID, "--as", "Ann", "--key", "k.pem"],
    ],
    ids=["runs", "sign", "approve"],
)
def test_the_commands_that_talk_to_a_paused_run_load_neither_prefect_nor_the_numerical_stack(
    tmp_path: Path, argv: list[str]
) -> None:
    """``runs``, ``sign`` and ``approve`` talk to the server's REST API over httpx (Prefect's client costs
    more than a second of imports): run as far as the server (none is listening), then the modules they use to
    check and sign a decision are imported too — and still no Prefect."""
    signing = (
        "sdgov.flows.plumbing.pending",
        "sdgov.governance.approvers",
        "sdgov.governance.controller",
        "sdgov.governance.decisions",
        "sdgov.identity.statements",
        "sdgov.identity.keys",
        "sdgov.registry.log",
    )
    argvs = [["keygen", "--out", str(tmp_path / "k.pem")], argv]
    unreachable = {"PREFECT_API_URL": "http://127.0.0.1:9/api", "PREFECT_CLIENT_MAX_RETRIES": "0"}
    loaded = loaded_after(tmp_path, argvs, signing, **unreachable)
    assert "httpx" in loaded  # it got as far as the server
    assert not loaded & {*HEAVY, "prefect"}, sorted(loaded & {*HEAVY, "prefect"})


def test_reading_the_audit_registry_loads_neither_scikit_learn_nor_scipy_stats() -> None:
    """The pre-flight of ``validate``, ``propose`` and ``release`` reads the audit registry to dry-run the generators
    a spec's audits name; the checks' statistics (scipy.stats, scikit-learn forests) load only when a check runs —
    importing them with the registry cost each of those commands ~2 CPU s (issue 27)."""
    probe = "import json, sys, sdgov.audits.registry; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert "sdgov.audits.privacy.audit" in loaded and "sdgov.audits.decomposability.audit" in loaded
    assert not {m for m in loaded if m.startswith(("sklearn", "scipy.stats", "scipy.optimize"))}


def test_reading_a_selection_review_does_not_load_scipys_clustering() -> None:
    """``validate`` and ``release`` read a reviewed selection (its ``Proposal``) without selecting anything:
    scipy.cluster, MST's Kruskal forest (0.4-0.6 s to import), loads only when a selection's rounds run."""
    probe = "import json, sys, sdgov.measurement.selection.review; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert "sdgov.measurement.selection.mst" in loaded
    assert not {m for m in loaded if m.startswith("scipy.cluster")}


def test_a_release_with_its_temporary_server_does_not_load_prefects_server_package() -> None:
    """``sdgov release`` starts the temporary server itself and points the flow at it
    (:mod:`sdgov.flows.plumbing.temporary_server`): the run's process does not import Prefect's server package
    (FastAPI app, ORM, migrations: ~2.5 CPU s), which only the server's own process needs."""
    probe = (
        "import json, sys, sdgov.flows.plumbing.temporary_server, sdgov.flows.release, sdgov.commands.release; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert "prefect.flows" in loaded and "httpx" in loaded
    assert "prefect.server.api.server" not in loaded and "prefect.server.database" not in loaded


def test_propose_select_spends_its_selection_without_loading_prefect_or_a_pld_accountant(tmp_path: Path) -> None:
    """``sdgov propose --select mst`` selects in its own process (:func:`sdgov.tasks.select_phi.propose_selection`;
    the Prefect task is built on first use): it runs the selection to the end — a proposed spec written, the
    selection logged — without importing Prefect (~3 CPU s of imports a proposal paid for nothing, issue 27)."""
    from tests.fixtures.drafts import selection_draft
    from tests.governance import controller_registry

    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    draft, out = selection_draft(tmp_path), tmp_path / "proposed.yaml"
    argv = ["propose", "--select", "mst", "--spec", str(draft), "--as", "Ada Analyst"]
    argv += ["--key", str(keys["Ada Analyst"]), "--root", str(root), "--out", str(out)]
    loaded = loaded_after(tmp_path, [argv])
    assert out.is_file() and "phi_selected" in (root / "log.jsonl").read_text()  # it selected and logged
    assert "prefect" not in loaded and "jax" in loaded
    # nor a PLD ε for its 1-ways (dp-accounting: ~1.2 s of imports): the selection's own spend, right after, is no
    # discrete Gaussian, so no PLD figure covers the account; the zCDP bound does
    [budget] = (root / "runs").glob("select-*/privacy_statement.json")
    record = json.loads(budget.read_text())
    assert record["cumulative"]["pld"] is None and record["cumulative"]["zcdp"] > 0
    assert "dp_accounting" not in loaded
