"""One budget authority in fact (issue 38 item 5), at the authority's own interface: its rows are hash-chained and
signed by the registry that wrote them; the first registry with approvers in force that charges it governs it, and
from then on a dataset's lifetime is that registry's alone; a row deleted, edited or inserted outside the chain is
found. The same rules run against PostgreSQL in ``tests/system/test_authority_postgres.py``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from sdgov.governance.authority import Authority, LifetimeAbove, LifetimeUnset, Overspend, open_authority
from sdgov.governance.authority_model import AuthorityBroken, Charge, Lifetime, LifetimeSetElsewhere
from sdgov.registry.key import Signer

FP = "f" * 64


def charge(ref: str, rho: float, registry: Signer, dataset: str = "toy", fp: str = FP) -> Charge:
    return Charge(ref=ref, time="t", dataset=dataset, fingerprint=fp, rho=rho, statistics={ref: rho},
                  registry_id=registry.registry_id)  # fmt: skip


def setting(rho: float, registry: Signer) -> Lifetime:
    return Lifetime(fingerprint=FP, dataset="toy", lifetime_rho=rho, time="t", registry_id=registry.registry_id,
                    source="sdgov budget lifetime, signed by Carl")  # fmt: skip


def check_rules(a: Authority) -> None:
    """The governance rules on a fresh authority ``a``."""
    gov, sandbox, other = (Signer(n, Ed25519PrivateKey.generate()) for n in ("gov", "sandbox", "other"))
    a.charge(charge("s1", 0.3, sandbox), 5.0, "policy.yaml defaults", sandbox)  # nobody governs yet: as before
    assert a.lifetime(FP, "toy").lifetime_rho == 5.0 and a.verify() == []
    _, _, head = a.charge(charge("g1", 0.2, gov), 1.0, "policy.yaml defaults", gov, governs=True)  # binds it
    held = a.lifetime(FP, "toy")
    assert (held.lifetime_rho, held.registry_id) == (1.0, "gov"), "the sandbox's setting no longer counts"
    assert head.seq == len(a.rows()) and [r.kind for r in a.rows()].count("governed") == 1
    with pytest.raises(LifetimeSetElsewhere, match="governed by registry gov"):  # the sandbox lift of issue 38
        a.set_lifetime([setting(10.0, sandbox)], sandbox)
    with pytest.raises(LifetimeSetElsewhere):  # nor another registry with approvers of its own
        a.set_lifetime([setting(10.0, other)], other, governs=True)
    with pytest.raises(LifetimeAbove):  # a policy above the governed lifetime
        a.charge(charge("s2", 0.1, sandbox), 5.0, "policy.yaml defaults", sandbox)
    with pytest.raises(Overspend):  # 0.3 + 0.2 + 0.6 > 1.0 over every registry
        a.charge(charge("s3", 0.6, sandbox), 1.0, "policy.yaml defaults", sandbox)
    with pytest.raises(LifetimeUnset, match="governed registry has set no lifetime"):  # a new dataset
        a.charge(charge("n1", 0.1, sandbox, "new", "e" * 64), 1.0, "policy.yaml defaults", sandbox)
    stored, _ = a.set_lifetime([setting(2.0, gov)], gov)  # the governing registry's (signed) act
    assert a.lifetime(FP, "toy").lifetime_rho == 2.0 == stored[0].lifetime_rho
    a.charge(charge("s4", 0.6, sandbox), 2.0, "policy.yaml defaults", sandbox)  # now within 2.0
    assert a.verify() == [] and len(a.rows()) == 7  # s1 and its lifetime, governed, g1 and its lifetime, setting, s4


def check_tampering(a: Authority, sql: Callable[[str], None]) -> None:
    """Rows deleted, edited or inserted behind the authority's back are found, and no write goes on over them."""
    gov = Signer("gov", Ed25519PrivateKey.generate())
    a.charge(charge("g1", 0.2, gov), 1.0, "policy.yaml defaults", gov, governs=True)
    a.charge(charge("g2", 0.2, gov), 1.0, "policy.yaml defaults", gov)
    assert a.verify() == []
    sql("UPDATE charges SET rho = 0.01 WHERE ref = 'g2'")
    assert any("edited" in p for p in a.verify())
    sql("UPDATE charges SET rho = 0.2 WHERE ref = 'g2'")
    sql("INSERT INTO lifetimes (fingerprint, dataset, lifetime_rho, time, registry_id, source) "
        f"VALUES ('{FP}', 'toy', 10.0, 't', 'gov', 'by hand')")  # fmt: skip
    assert any("not in the chain (inserted" in p for p in a.verify())
    with pytest.raises(AuthorityBroken, match="chain fails"):
        a.charge(charge("g3", 0.1, gov), 1.0, "policy.yaml defaults", gov)
    sql("DELETE FROM lifetimes WHERE source = 'by hand'")
    sql("DELETE FROM reserved WHERE ref = 'g2'")
    sql("DELETE FROM charges WHERE ref = 'g2'")
    assert any("deleted" in p for p in a.verify())
    sql("DELETE FROM chain WHERE ref = 'g2'")  # and its row too: the chain's order breaks
    assert any("out of order" in p or "chain is broken" in p for p in a.verify()) or len(a.rows()) < 4


def test_the_sqlite_authority_is_governed_by_one_registry(tmp_path):
    check_rules(open_authority(str(tmp_path / "authority.sqlite")))


def test_the_sqlite_authority_finds_rows_changed_behind_its_back(tmp_path):
    path = tmp_path / "authority.sqlite"

    def sql(statement: str) -> None:
        with sqlite3.connect(path) as con:
            con.execute(statement)

    check_tampering(open_authority(str(path)), sql)
