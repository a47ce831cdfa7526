"""The controller's state is a protected store (issue 38 items 2, 5, 6), attacked as a team's people would, each a
separate OS user, through the real interface: the CLI and the files.

One governed release (an approvers registry, a standing approval, ``sdgov init --readers GROUP``) is made by the
controller's account under a lax umask (022); then:

- the encoded records, the evidence and the measurement store are the controller's alone: an analyst outside the
  readers' group reads nothing of the registry; a compliance officer in it reads the log, the releases and the draft
  card, never ``codes.parquet``, the evidence or ``measurements/`` (the issue's world-readable ``codes.parquet``);
- she works read-only: ``registry verify``, ``trail``, ``budget`` (which says it reads the registry's signed log,
  not an empty authority of her own) and a checkpoint signed with her own key write nothing; a controller signs a
  standing approval from his own account without touching the registry;
- a sandbox registry cannot lift the dataset's lifetime (``sdgov budget lifetime`` unsigned), nor spend past it;
- an authority swapped for a new file, or with its rows deleted, refuses the next release before any draw, logged;
- a lost commitment secret is reported by ``verify``, stops releases until restored, and after a signed rotation
  ``registry prove`` says "secret replaced", not "other data".

Skipped unless the tests run as root with a venv other users can run (``tests/system/team.py``).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

from sdgov.governance import ledger
from sdgov.registry.log import Registry
from tests.conftest import make_demo_inputs
from tests.governance import PEOPLE, controller_registry, sign_standing_approval
from tests.system.team import OSUser, os_users, os_users_unavailable, sdgov_argv

pytestmark = pytest.mark.skipif(os_users_unavailable() is not None, reason=str(os_users_unavailable()))

NAME = "toyland_census"


@pytest.fixture
def cli(capsys):
    """``sdgov *argv`` in this process: the controller's account (root, the registry's owner)."""
    from sdgov.commands import main

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([str(a) for a in argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``root`` with its size and modification time: 'nothing written' means this is unchanged."""
    return {str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def office(tmp_path_factory, prefect_server):
    """The people as OS users, a governed registry readable by the readers' group, and one release in it."""
    with os_users([n for n, _ in PEOPLE], readers=["Cora Compliance", "Carl Controller"]) as (users, group):
        base = users["Cora Compliance"].home.parent / "office"
        base.mkdir()
        base.chmod(0o711)  # passable by every person (the registry inside is the gate)
        root = base / "registry"
        keys = controller_registry(root, base / "keys")
        for name, path in keys.items():  # each person holds their own key, in their own home
            path.rename(users[name].home / path.name)
            keys[name] = users[name].home / path.name
            os.chown(keys[name], users[name].uid, users[name].gid)
        spec = make_demo_inputs(base / "in", rows=400, generator={"name": "pgm", "iterations": 20})
        sign_standing_approval(spec, root, keys)
        from sdgov.commands import main
        from sdgov.flows.release import release_flow

        old = os.umask(0o022)  # the controller's lax umask: the store must not depend on it
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["init", "--root", str(root), "--readers", group]) == 0
            result = release_flow(spec_path=str(spec), registry_root=str(root))
        finally:
            os.umask(old)
        yield {"users": users, "group": group, "root": root, "keys": keys, "spec": spec, **result.model_dump(),
               "authority": os.environ["SDGOV_AUTHORITY"]}  # fmt: skip


@pytest.fixture(autouse=True)
def controllers_authority(office, monkeypatch):
    """The controller's budget authority, the one the release charged (not the fresh one tests/conftest.py gives
    each test)."""
    monkeypatch.setenv("SDGOV_AUTHORITY", office["authority"])


def as_user(user: OSUser, *argv: str) -> tuple[int, str, str]:
    """``sdgov *argv`` as ``user``: their own process, account, groups and home; nothing of the controller's."""
    done = user.run(sdgov_argv(*[str(a) for a in argv]), {"PATH": f"{Path(sdgov_argv()[0]).parent}:/usr/bin:/bin"})
    return done.returncode, done.stdout, done.stderr


def test_the_controllers_state_is_hers_alone_whatever_the_umask(office):
    root, users = office["root"], office["users"]
    [run] = list((root / "runs").iterdir())
    codes, evidence = run / "codes.parquet", run / "evidence" / "evidence.html"
    assert (root.stat().st_mode & 0o777, root.stat().st_gid) == (0o750, users["Cora Compliance"].groups[0])
    assert codes.stat().st_mode & 0o777 == 0o600 and run.stat().st_mode & 0o777 == 0o711
    assert (root / "measurements").stat().st_mode & 0o777 == 0o700 and Registry(root).verify() == []
    ada, cora = users["Ada Analyst"], users["Cora Compliance"]
    assert not ada.reads(root / "log.jsonl") and not ada.reads(codes), "outside the readers' group: nothing"
    card = Path(office["card_json"])
    assert cora.reads(root / "log.jsonl") and cora.reads(card) and cora.reads(run / "draft" / "card.html")
    for private in (codes, evidence, root / "measurements", root / "runs", run, run / "measurements.json"):
        assert not cora.reads(private), private
    # what a lax umask or a hand-made copy would leave: verify names it
    leaked = run / "leaked.csv"
    leaked.write_text("a,b\n")
    leaked.chmod(0o644)
    assert [p for p in Registry(root).verify() if "leaked.csv: readable by others" in p]
    leaked.unlink()


def test_readers_work_read_only(office, cli):
    root, users, keys = office["root"], office["users"], office["keys"]
    cora, carl = users["Cora Compliance"], users["Carl Controller"]
    before = tree(root)
    code, out, err = as_user(cora, "registry", "verify", "--root", root)
    assert code == 0 and out.startswith("ok:"), out + err
    code, out, err = as_user(cora, "trail", "--root", root)
    assert code == 0, err
    code, out, err = as_user(cora, "budget", "--root", root)
    assert code == 0 and "read from this registry's signed log" in out, out + err
    mine = cli("budget", "--root", root)[1]
    assert (
        "budget authority" in mine.splitlines()[0]
        and out.splitlines()[1].split(";")[0] == mine.splitlines()[1].split(";")[0]
    ), (out, mine)  # the same figure, from the signed log
    cp = cora.home / "checkpoint.json"
    code, out, err = as_user(cora, "registry", "checkpoint", "--root", root, "--as", "Cora Compliance", "--key",
                             keys["Cora Compliance"], "--out", cp)  # fmt: skip
    assert code == 0, err
    approvals = carl.home / "approvals.yaml"  # a controller signs a standing approval from his own account
    shutil.copy(office["spec"].parent / "approvals.yaml", approvals)
    os.chown(approvals, carl.uid, carl.gid)
    code, _, err = as_user(carl, "approvals", "sign", approvals, "--as", "Carl Controller", "--key",
                           keys["Carl Controller"], "--root", root)  # fmt: skip
    assert code == 0, err
    assert tree(root) == before, "a reader wrote nothing: no lock file, no log line"
    assert cli("registry", "verify", "--root", root, "--checkpoint", cp)[0] == 0  # her anchor holds

    from sdgov.registry import checkpoint

    forged = checkpoint.make(Registry(root), "Ada Analyst", keys["Ada Analyst"])  # an analyst may not vouch
    (cora.home / "ada.json").write_text(checkpoint.dumps(forged))
    code, out, _ = cli("registry", "verify", "--root", root, "--checkpoint", cora.home / "ada.json")
    assert code == 1 and "may not vouch" in out


def test_a_sandbox_cannot_lift_the_lifetime_nor_spend_past_it(office, cli, tmp_path):
    from tests.conftest import init_registry

    root = office["root"]
    sandbox = init_registry(tmp_path / "sandbox", lifetime_rho=10.0)
    before = tree(sandbox)
    for where in (sandbox, root):  # a sandbox's lift, and the governed registry's unsigned one
        code, _, err = cli("budget", "lifetime", "--dataset", NAME, "--rho", "10", "--root", where)
        assert code == 2 and ("a sandbox" in err or "signed act" in err), err
    assert tree(sandbox) == before
    spec = make_demo_inputs(tmp_path / "in", rows=400, privacy={"rho": 0.9}, generator={"name": "pgm", "iterations": 5})
    code, _, err = cli("release", "--spec", spec, "--root", sandbox)
    assert code == 2 and "no new budget" in err, err
    assert not (sandbox / "measurements").exists(), "nothing drawn"


def test_an_authority_swapped_or_with_rows_deleted_refuses_to_spend(office, cli, tmp_path, monkeypatch):
    root = office["root"]
    spec = make_demo_inputs(tmp_path / "in", rows=400, privacy={"rho": 0.04},
                            generator={"name": "pgm", "iterations": 5})  # fmt: skip
    sign_standing_approval(spec, root, office["keys"])
    authority = Path(os.environ["SDGOV_AUTHORITY"])
    stored = sorted((root / "measurements").iterdir())
    monkeypatch.setenv("SDGOV_AUTHORITY", str(tmp_path / "new.sqlite"))  # a swap: a new, empty authority
    code, out, err = cli("release", "--spec", spec, "--root", root)
    assert code == 2 and "swapped or reset" in err and "nothing spent or drawn" in err, err
    code, out, _ = cli("budget", "--root", root)  # the view says so, and reads the signed log
    assert code == 0 and out.startswith("read from this registry's signed log")
    monkeypatch.setenv("SDGOV_AUTHORITY", str(authority))
    backup = tmp_path / "backup.sqlite"
    shutil.copy(authority, backup)
    with sqlite3.connect(authority) as con:  # rows deleted: the charges given back
        con.execute("DELETE FROM reserved")
        con.execute("DELETE FROM charges")
    code, _, err = cli("release", "--spec", spec, "--root", root)
    assert code == 2 and "deleted" in err, err
    shutil.copy(backup, authority)  # restored from its backup
    assert sorted((root / "measurements").iterdir()) == stored, "nothing drawn"
    events = Registry(root).events()
    assert [e.event for e in events].count(ledger.SPENT) == 1 and [e.event for e in events].count(ledger.REFUSED) == 2
    assert cli("registry", "verify", "--root", root)[0] == 0


def test_a_lost_secret_is_reported_stops_releases_and_a_rotation_says_secret_replaced(office, cli, tmp_path):
    root, keys = office["root"], office["keys"]
    reg = Registry(root)
    secret = reg.keys.secret_path(reg.registry_id())
    data = office["spec"].parent / yaml.safe_load(office["spec"].read_text())["dataset"]["path"]
    prove = ("registry", "prove", office["release_id"], "--data", data, "--root", root)
    assert cli(*prove)[0] == 0
    kept = tmp_path / "secret.backup"
    secret.rename(kept)  # lost
    code, out, _ = cli("registry", "verify", "--root", root)
    assert code == 1 and "commitment secret missing" in out, out
    before = tree(root)
    code, _, err = cli("release", "--spec", office["spec"], "--root", root)
    assert code == 2 and "commitment secret missing" in err and not secret.exists(), err
    assert tree(root) == before, "refused before anything was written"
    kept.rename(secret)  # restored from its backup
    assert cli("registry", "verify", "--root", root)[0] == 0 and cli(*prove)[0] == 0

    secret.write_text("ab" * 32 + "\n")  # replaced, the original lost for good: the controller rotates, signed
    code, out, _ = cli("registry", "verify", "--root", root)
    assert code == 1 and "commitment secret replaced" in out
    carl = ("--as", "Carl Controller", "--key", keys["Carl Controller"])
    assert cli("registry", "rotate-secret", "--root", root)[0] == 2  # unsigned: refused where approvers are in force
    code, _, err = cli("registry", "rotate-secret", "--root", root, *carl)
    assert code == 0, err
    assert cli("registry", "verify", "--root", root)[0] == 0
    code, out, _ = cli(*prove)
    assert code == 1 and "secret replaced" in out and "does not commit to this data" not in out, out
