"""A new registry is not a new budget (principle 5): a dataset's lifetime ρ is its account's, in the controller's
budget authority, not whatever the spending registry's policy.yaml states.

Before, each charge was checked against the spending registry's own policy: registry A (lifetime 1.5·ρ₀) spent on a
dataset, a registry C ``sdgov init``-ed with lifetime 5·ρ₀ could spend up to 5·ρ₀ on the same dataset, and A's log
never showed that the cap was raised. Here the account keeps the lifetime its first charge set; C is refused before
anything is written until the controller raises the account with ``sdgov budget lifetime`` (recorded in the
authority, logged in C's log, verified); a registry whose policy states less spends under the less; the registry
that set the account still raises it by its own signed policy change; an authority made before lifetimes were kept
adopts the lifetime its latest checked charge was checked against."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from sdgov.base.errors import BudgetError
from sdgov.governance import ledger
from sdgov.governance.authority import LifetimeAbove, Overspend, open_authority
from sdgov.governance.authority_model import Charge
from sdgov.governance.lifetime import LIFETIME
from sdgov.governance.site import Site
from sdgov.registry.log import Registry
from tests.conftest import init_registry, tree_bytes
from tests.fixtures.ledger import RHO, event_names, measure_only, spec_at

NAME = "toyland_census"


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from sdgov.commands import main

    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line(err: str) -> str:
    [line] = err.strip().splitlines()
    assert line.startswith("sdgov: error: ") and len(line) <= 300, line
    return line


def _a_spent_then_c(tmp_path: Path) -> tuple[Path, Path, str]:
    """Registry A (lifetime 1.5·ρ₀) spends ρ₀ on the demo data; registry C is made with lifetime 5·ρ₀."""
    a = init_registry(tmp_path / "a", datasets={NAME: {"lifetime_rho": 1.5 * RHO}})
    agreed, _ = measure_only(spec_at(tmp_path, 1), a)
    c = init_registry(tmp_path / "c", lifetime_rho=5 * RHO)
    return a, c, agreed.data.fingerprint


def test_a_new_registry_with_a_bigger_policy_is_refused_before_anything_is_written(tmp_path, capsys):
    a, c, fp = _a_spent_then_c(tmp_path)
    spec = spec_at(tmp_path, 2, rho=0.9 * RHO)  # new statistics: 1.9·ρ₀ in all, within C's 5·ρ₀, over the account's
    before, charges = tree_bytes(c), open_authority().charges(fp, NAME)
    code, _, err = _cli(capsys, "release", "--spec", str(spec), "--root", str(c))
    line = _one_line(err)
    assert code == 2 and "a new registry is no new budget; refused before any draw" in line, line
    assert f"account's lifetime ρ={1.5 * RHO:.6g}" in line and f"under this policy's {5 * RHO:.6g}" in line
    assert f"registry {Registry(a).registry_id()[:8]})" in line and "policy.yaml: defaults" in line
    assert f"fix: 'sdgov budget lifetime --dataset {NAME} --rho {5 * RHO:g} --as NAME --key KEY'" in line
    assert tree_bytes(c) == before and open_authority().charges(fp, NAME) == charges, "nothing written"
    # the measurement path itself (under the locks, in the charge's transaction) refuses it too: nothing drawn
    with pytest.raises(BudgetError, match="a new registry is no new budget"):
        measure_only(spec, c)
    assert not (c / "measurements").exists() and event_names(c).count(ledger.SPENT) == 0
    assert open_authority().charges(fp, NAME) == charges


def test_a_sandbox_never_sets_a_lifetime(tmp_path, capsys):
    """Issue 38 item 5: a lifetime is a controller's signed act through the governed registry; a sandbox registry
    (no approvers registry) is refused, with or without a key, and nothing is written."""
    a, c, fp = _a_spent_then_c(tmp_path)
    before = tree_bytes(c)
    lift = ("budget", "lifetime", "--dataset", NAME, "--rho", str(5 * RHO), "--root", str(c))
    code, _, err = _cli(capsys, *lift)
    assert code == 2 and "a sandbox" in _one_line(err) and "nothing set" in _one_line(err), err
    assert tree_bytes(c) == before and open_authority().lifetime(fp, NAME).lifetime_rho == pytest.approx(1.5 * RHO)
    with pytest.raises(BudgetError, match="a new registry is no new budget"):
        measure_only(spec_at(tmp_path, 2, rho=0.9 * RHO), c)


def test_a_lower_policy_is_stricter_and_the_account_keeps_its_lifetime(tmp_path):
    a = init_registry(tmp_path / "a", datasets={NAME: {"lifetime_rho": 2.5 * RHO}})
    b = init_registry(tmp_path / "b", datasets={NAME: {"lifetime_rho": 1.5 * RHO}})
    agreed, _ = measure_only(spec_at(tmp_path, 1), a)
    fp = agreed.data.fingerprint
    with pytest.raises(BudgetError, match=rf"ρ={RHO:.6g} of its lifetime ρ={1.5 * RHO:.6g} spent"):
        measure_only(spec_at(tmp_path, 2, rho=0.9 * RHO), b)  # 1.9·ρ₀ > B's 1.5·ρ₀
    assert open_authority().lifetime(fp, NAME).lifetime_rho == pytest.approx(2.5 * RHO), "the account's stays"
    measure_only(spec_at(tmp_path, 2, rho=0.9 * RHO), a)  # within the account's 2.5·ρ₀: A spends it
    assert ledger.account(Site.resolve(a), NAME, fp).spent_rho == pytest.approx(1.9 * RHO)


def test_the_registry_that_set_the_account_raises_it_by_its_signed_policy_change(tmp_path, capsys):
    """The single-registry way of raising a lifetime still works: edit policy.yaml, the controller signs it in."""
    from tests.governance import controller_registry, sign_standing_approval

    a = tmp_path / "a"
    keys = controller_registry(a, tmp_path / "keys")
    carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]), "--root", str(a))

    def release(seed: int, rho: float):
        spec = spec_at(tmp_path, seed, rho=rho)
        sign_standing_approval(spec, a, keys)
        return measure_only(spec, a)

    def policy(lifetime: float) -> None:
        p = yaml.safe_load((a / "policy.yaml").read_text())
        p["datasets"] = {NAME: {"lifetime_rho": lifetime}}
        (a / "policy.yaml").write_text(yaml.safe_dump(p))
        assert _cli(capsys, "approvers", "commit", *carl)[0] == 0

    policy(1.5 * RHO)
    agreed, _ = release(1, RHO)
    with pytest.raises(BudgetError, match="budget exceeded"):
        release(2, 0.9 * RHO)
    policy(3 * RHO)
    release(2, 0.9 * RHO)
    held = open_authority().lifetime(agreed.data.fingerprint, NAME)
    assert held.lifetime_rho == pytest.approx(3 * RHO) and held.source == f"policy.yaml datasets.{NAME}"
    [logged] = [json.loads(e.comment) for e in Registry(a).events() if e.event == LIFETIME]
    assert logged["previous_lifetime_rho"] == pytest.approx(1.5 * RHO) and logged["how"] == held.source
    assert _cli(capsys, "registry", "verify", "--root", str(a))[0] == 0

    # here an approvers registry is in force: the command is a controller's signed act, re-checked by verify
    lower = ("budget", "lifetime", "--dataset", NAME, "--rho", str(2 * RHO), "--root", str(a))
    before = tree_bytes(a)
    for who, match in [((), "is a controller's signed act"), (("--as", "Ada Analyst"), "not a data controller")]:
        code, _, err = _cli(capsys, *lower, *who, "--key", str(keys["Ada Analyst"]))
        assert code == 2 and match in _one_line(err) and tree_bytes(a) == before, err
    code, _, err = _cli(capsys, *lower, "--as", "Carl Controller", "--key", str(keys["Ada Analyst"]))
    # the one line shortens the key's long temporary path first: match the end of what and the fix
    line = _one_line(err)
    assert code == 2 and "for 'Carl Controller'" in line and "sign with your own key" in line, line
    assert tree_bytes(a) == before and open_authority().lifetime(agreed.data.fingerprint, NAME) == held
    assert _cli(capsys, *lower, *carl[:4])[0] == 0
    signed = Registry(a).events()[-1]
    assert (signed.event, signed.actor, signed.role) == (LIFETIME, "Carl Controller", "controller")
    assert open_authority().lifetime(agreed.data.fingerprint, NAME).lifetime_rho == pytest.approx(2 * RHO)
    assert _cli(capsys, "registry", "verify", "--root", str(a))[0] == 0
    # whoever holds the registry key could re-chain a log with another value, but not re-sign the statement
    from sdgov.governance.controller import statement_problems

    forged = signed.comment.replace(f'"lifetime_rho": {2 * RHO}', f'"lifetime_rho": {3 * RHO}')
    assert forged != signed.comment
    events = [*Registry(a).events()[:-1], signed.model_copy(update={"comment": forged})]
    assert [p for p in statement_problems(Registry(a), events) if "budget_lifetime_changed" in p]


# the authority's schema as the code before lifetimes were kept made it (sdgov/governance/authority.py then)
OLD_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE charges (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ref TEXT NOT NULL UNIQUE, time TEXT NOT NULL, dataset TEXT NOT NULL,
    fingerprint TEXT NOT NULL, rho REAL NOT NULL, agreement_sha256 TEXT NOT NULL, run_id TEXT NOT NULL,
    registry_id TEXT NOT NULL, lifetime_rho REAL);
CREATE TABLE reserved (
    ref TEXT NOT NULL REFERENCES charges(ref), key TEXT NOT NULL, rho REAL NOT NULL, PRIMARY KEY (ref, key));
CREATE TABLE statistics (
    key TEXT PRIMARY KEY, sha256 TEXT NOT NULL, payload BLOB NOT NULL, registry_id TEXT NOT NULL,
    run_id TEXT NOT NULL, time TEXT NOT NULL);
INSERT INTO meta VALUES ('authority_id', 'a0');
INSERT INTO charges VALUES (1, 'c1', 't1', 'toy', 'f1', 0.1, '', 'r1', 'reg-a', 0.5);
INSERT INTO charges VALUES (2, 'imp', 't2', 'toy', 'f1', 0.1, '', 'r2', 'reg-b', NULL);
INSERT INTO charges VALUES (3, 'c3', 't3', 'toy', 'f1', 0.1, '', 'r3', 'reg-b', 0.4);
INSERT INTO charges VALUES (4, 'only-imported', 't4', 'other', 'f2', 0.1, '', 'r4', 'reg-a', NULL);
"""


def _signer():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from sdgov.registry.key import Signer

    return Signer("c", Ed25519PrivateKey.generate())


def _charge(ref: str, dataset: str, fp: str, rho: float) -> Charge:
    return Charge(ref=ref, time="t9", dataset=dataset, fingerprint=fp, rho=rho, statistics={ref: rho}, registry_id="c")


def test_an_authority_made_before_lifetimes_adopts_its_latest_checked_charges_lifetime(tmp_path):
    path = tmp_path / "authority.sqlite"
    with sqlite3.connect(path) as con:
        con.executescript(OLD_SCHEMA)
    auth = open_authority(str(path))
    held = auth.lifetime("f1", "toy")  # read only: the old file is not changed by reading it
    assert held.lifetime_rho == 0.4 and held.registry_id == "reg-b" and held.seq == 0 and "c3" in held.source
    assert auth.lifetime("f2", "other") is None, "only an imported charge: set by the next charge"
    signer = _signer()
    with pytest.raises(LifetimeAbove) as refused:
        auth.charge(_charge("x", "toy", "f1", 0.05), lifetime_rho=1.0, source="policy.yaml defaults", signer=signer)
    assert refused.value.account.lifetime_rho == 0.4
    with pytest.raises(Overspend):  # 0.45 > 0.4
        auth.charge(_charge("x", "toy", "f1", 0.15), lifetime_rho=0.4, source="policy.yaml defaults", signer=signer)
    stored, _, head = auth.charge(
        _charge("y", "toy", "f1", 0.05), lifetime_rho=0.4, source="policy.yaml defaults", signer=signer
    )
    assert head.seq == len(auth.rows()) and auth.verify() == [], "the old rows sealed in the chain, then the new"
    assert stored.lifetime_rho == 0.4 and auth.lifetime("f1", "toy").seq >= 1, "adopted, now stored"
    auth.charge(_charge("z", "other", "f2", 0.05), lifetime_rho=0.3, source="policy.yaml defaults", signer=signer)
    first = auth.lifetime("f2", "other")
    assert (first.lifetime_rho, first.registry_id, first.source) == (0.3, "c", "policy.yaml defaults")
    assert auth.accounts("toy") == [("f1", "toy")] and [c.ref for c in auth.charges("f1", "toy")][-1] == "y"
