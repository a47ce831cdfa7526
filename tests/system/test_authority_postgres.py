"""The budget authority on PostgreSQL (issue 24 item 4: a team keeps one budget in a real database).

The same account rules as the embedded SQLite authority, through the same :class:`Authority` interface and the real
measurement path: a second registry copies ψ and charges the same account, an overspend is refused before any draw
(the ledger's own test, run against a throwaway PostgreSQL cluster), and two processes charging at once never
together exceed the lifetime. Skipped without PostgreSQL's server binaries (``tests/system/postgres.py``).
"""

from __future__ import annotations

import asyncio
import multiprocessing

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from sdgov.governance.authority import Charge, LifetimeAbove, Overspend, open_authority
from sdgov.registry.key import Signer
from tests.fixtures.authority_rules import check_rules, check_tampering
from tests.system.postgres import PostgresCluster

SIGNER = Signer("reg-a", Ed25519PrivateKey.generate())


@pytest.fixture
def pg_authority(postgres_cluster: PostgresCluster, monkeypatch, request) -> str:
    """A fresh database in the cluster, named for the test, as ``$SDGOV_AUTHORITY``."""
    import asyncpg

    name = "auth_" + request.node.name.lower()[:40].replace("[", "_").replace("]", "").replace("-", "_")

    async def create() -> None:
        con = await asyncpg.connect(postgres_cluster.url("postgres"))
        try:
            await con.execute(f'CREATE DATABASE "{name}"')
        finally:
            await con.close()

    asyncio.run(create())
    url = postgres_cluster.url(name)
    monkeypatch.setenv("SDGOV_AUTHORITY", url)
    return url


def charge(ref: str, rho: float, key: str) -> Charge:
    return Charge(ref=ref, time="t", dataset="toy", fingerprint="f" * 64, rho=rho, statistics={key: rho})


def test_the_postgres_authority_keeps_the_accounts_rules(pg_authority):
    a = open_authority()
    assert type(a).__name__ == "PostgresAuthority" and len(a.authority_id) == 32
    stored, before, _ = a.charge(charge("c1", 0.6, "k1"), 1.0, "policy.yaml defaults", SIGNER)
    assert stored.seq >= 1 and before == []
    held = a.lifetime("f" * 64, "toy")  # the first charge set the account's lifetime
    assert (held.lifetime_rho, held.source) == (1.0, "policy.yaml defaults") and held.seq >= 1
    with pytest.raises(Overspend):
        a.charge(charge("c2", 0.5, "k2"), 1.0, "policy.yaml defaults", SIGNER)  # 0.6 + 0.5 > 1
    with pytest.raises(LifetimeAbove):  # a registry whose policy states more: refused, nothing stored
        a.charge(charge("c2", 0.1, "k2"), 2.0, "policy.yaml defaults", SIGNER)
    assert [c.ref for c in a.charges("f" * 64, "toy")] == ["c1"]
    a.import_charges([charge("c1", 0.6, "k1"), charge("old", 0.1, "k0")], SIGNER)  # c1 known: skipped
    assert [c.ref for c in a.charges("f" * 64, "other")] == ["c1", "old"]
    assert a.reservation("k1").ref == "c1" and a.reservation("nope") is None
    assert a.accounts("toy") == [("f" * 64, "toy")] and a.accounts("f" * 64) == [("f" * 64, "toy")]
    a.set_lifetime([held.model_copy(update={"lifetime_rho": 2.0, "source": "sdgov budget lifetime"})], SIGNER)
    stored, _, _ = a.charge(charge("c3", 0.5, "k3"), 2.0, "policy.yaml defaults", SIGNER)  # 1.2 of 2
    assert stored.lifetime_rho == 2.0 and a.lifetime("f" * 64, "toy").source == "sdgov budget lifetime"
    drawn = a.record("k1", b"noisy", "reg-a", "run-1")
    assert a.record("k1", b"noisy", "reg-b", "run-2").registry_id == "reg-a"  # the first draw stays
    with pytest.raises(Exception, match="drawn before with other noise"):
        a.record("k1", b"other noise", "reg-b", "run-2")
    assert a.drawn("k1") == (drawn, b"noisy") and a.keys() == {"k1"}
    with a.lock(), a.lock():  # re-entrant within a thread
        assert a.charges("f" * 64, "toy")
    assert a.verify() == [] and len(a.rows()) == 5  # c1 and its lifetime, old, the raise, c3: chained


def test_the_postgres_authority_is_governed_by_one_registry_and_chained(pg_authority, postgres_cluster):
    """Issue 38 item 5 on PostgreSQL: the same governance and chain rules as the embedded authority."""
    import asyncpg

    check_rules(open_authority())
    url = pg_authority

    def sql(statement: str) -> None:
        async def run() -> None:
            con = await asyncpg.connect(url)
            try:
                await con.execute(statement)
            finally:
                await con.close()

        asyncio.run(run())

    sql("DROP TABLE chain, reserved, charges, lifetimes, statistics, meta")  # a fresh authority in this database
    check_tampering(open_authority(), sql)


def _charge_in_process(url: str, ref: str, out: multiprocessing.Queue) -> None:
    import os

    os.environ["SDGOV_AUTHORITY"] = url
    a = open_authority()
    try:
        with a.lock():
            a.charge(charge(ref, 0.6, ref), 1.0, "policy.yaml defaults", Signer("reg-a", Ed25519PrivateKey.generate()))
        out.put("charged")
    except Overspend:
        out.put("refused")


def test_two_processes_charging_at_once_never_overspend(pg_authority):
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_charge_in_process, args=(pg_authority, f"p{i}", out)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert sorted(out.get(timeout=5) for _ in procs) == ["charged", "refused"]
    assert sum(c.rho for c in open_authority().charges("f" * 64, "toy")) == pytest.approx(0.6)


def test_a_second_registry_copies_psi_and_charges_the_same_account_on_postgres(pg_authority, tmp_path):
    """The ledger's own cross-registry test (tests/unit/governance/test_ledger.py), with the authority in PostgreSQL."""
    from tests.fixtures.ledger import check_a_second_registry_copies_psi

    check_a_second_registry_copies_psi(tmp_path)
