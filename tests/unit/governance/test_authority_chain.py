"""One budget authority in fact (issue 38 item 5), at the authority's own interface: its rows are hash-chained and
signed by the registry that wrote them; the first registry with approvers in force that charges it governs it, and
from then on a dataset's lifetime is that registry's alone; a row deleted, edited or inserted outside the chain is
found. The same rules run against PostgreSQL in ``tests/system/test_authority_postgres.py``."""

from __future__ import annotations

import sqlite3

from sdgov.governance.authority import open_authority
from tests.fixtures.authority_rules import check_rules, check_tampering


def test_the_sqlite_authority_is_governed_by_one_registry(tmp_path):
    check_rules(open_authority(str(tmp_path / "authority.sqlite")))


def test_the_sqlite_authority_finds_rows_changed_behind_its_back(tmp_path):
    path = tmp_path / "authority.sqlite"

    def sql(statement: str) -> None:
        with sqlite3.connect(path) as con:
            con.execute(statement)

    check_tampering(open_authority(str(path)), sql)
