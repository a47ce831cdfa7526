"""Standing approvals count only when every person they name signed them with their registered key, for this
registry, this agreement and before the lapse date (sdgov/governance/standing.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

from sdgov.base.errors import SpecError
from sdgov.governance import standing
from sdgov.governance.standing import (
    agreement_signoffs,
    load_approvals,
    release_signoff,
    sign_standing,
    verify_standing,
)
from sdgov.registry.log import Registry
from tests.conftest import init_registry, make_demo_inputs
from tests.governance import controller_registry

AGREEMENT = "ab" * 32
DATA = "cd" * 32  # a data commitment (verify_standing checks it is pinned; check_pinned_data checks the file)
LATER = (dt.date.today() + dt.timedelta(days=30)).isoformat()


def _approval(path: Path, **changes: object) -> Path:
    body = {
        "proposer": {"name": "Ada Analyst", "role": "analyst"},
        "agreement_approver": {"name": "Carl Controller", "role": "controller"},
        "release_approver": {"name": "Carl Controller", "role": "controller"},
        "agreement_sha256": AGREEMENT,
        "data_sha256_hmac": DATA,
        "valid_until": LATER,
        **changes,
    }
    path.write_text("# the controller's comment survives signing\n" + yaml.safe_dump(body, sort_keys=False))
    return path


@pytest.fixture
def governed(tmp_path: Path) -> tuple[Registry, dict[str, Path]]:
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    return Registry(root), keys


def _sign_all(path: Path, reg: Registry, keys: dict[str, Path]) -> None:
    for name in ("Ada Analyst", "Carl Controller"):
        sign_standing(path, reg, name, keys[name])


def _verify(path: Path, reg: Registry, agreement: str = AGREEMENT):
    return verify_standing(load_approvals(path), agreement, str(path), reg)


def test_signed_by_everyone_it_names_counts_with_the_signing_time(governed, tmp_path: Path) -> None:
    reg, keys = governed
    path = _approval(tmp_path / "approvals.yaml")
    _sign_all(path, reg, keys)
    assert path.read_text().startswith("# the controller's comment survives signing")
    a = load_approvals(path)
    signoffs = agreement_signoffs(a, AGREEMENT, str(path), reg)
    assert [s.identity_verified for s in signoffs] == [True, True]
    assert all("standing approval signed" in s.via and LATER in s.via for s in signoffs)
    release = release_signoff(a, AGREEMENT, "cd" * 32, str(path), reg)
    assert release.subject_sha256 == "cd" * 32 and release.identity_verified
    assert "every audit check passed" in release.comment


def test_a_typed_name_without_a_signature_is_refused(governed, tmp_path: Path) -> None:
    reg, keys = governed
    path = _approval(tmp_path / "approvals.yaml")
    sign_standing(path, reg, "Ada Analyst", keys["Ada Analyst"])  # the controller never signed
    with pytest.raises(SpecError, match="no valid signature by 'Carl Controller'"):
        _verify(path, reg)


def test_signing_with_someone_elses_key_is_refused(governed, tmp_path: Path) -> None:
    reg, keys = governed
    path = _approval(tmp_path / "approvals.yaml")
    sign_standing(path, reg, "Ada Analyst", keys["Ada Analyst"])
    sign_standing(path, reg, "Carl Controller", keys["Ada Analyst"])  # Ada signs in Carl's name
    with pytest.raises(SpecError, match="no valid signature by 'Carl Controller'"):
        _verify(path, reg)


def test_an_edit_after_signing_voids_the_signatures(governed, tmp_path: Path) -> None:
    reg, keys = governed
    path = _approval(tmp_path / "approvals.yaml")
    _sign_all(path, reg, keys)
    path.write_text(path.read_text().replace(LATER, (dt.date.today() + dt.timedelta(days=3650)).isoformat()))
    with pytest.raises(SpecError, match="no valid signature"):
        _verify(path, reg)


def test_a_signature_for_another_registry_does_not_replay_here(tmp_path: Path) -> None:
    keys = controller_registry(tmp_path / "a", tmp_path / "keys")
    controller_registry(tmp_path / "b", tmp_path / "keys")  # same people and keys, another registry
    path = _approval(tmp_path / "approvals.yaml")
    _sign_all(path, Registry(tmp_path / "a"), keys)
    _verify(path, Registry(tmp_path / "a"))
    with pytest.raises(SpecError, match="no valid signature"):
        _verify(path, Registry(tmp_path / "b"))


def test_another_agreement_or_a_lapsed_approval_is_refused(governed, tmp_path: Path, monkeypatch) -> None:
    reg, keys = governed
    path = _approval(tmp_path / "approvals.yaml")
    _sign_all(path, reg, keys)
    with pytest.raises(SpecError, match="covers agreement"):
        _verify(path, reg, agreement="ef" * 32)
    old = _approval(tmp_path / "old.yaml", valid_until="2020-01-31")
    with monkeypatch.context() as m:  # signed while it was still in force
        m.setattr(standing, "_today", lambda: dt.date(2020, 1, 1))
        _sign_all(old, reg, keys)
    with pytest.raises(SpecError, match="lapsed on 2020-01-31"):
        _verify(old, reg)


@pytest.mark.parametrize("field", ["agreement_sha256", "data_sha256_hmac"])
def test_unpinned_approvals_are_not_signed(governed, tmp_path: Path, field: str) -> None:
    reg, keys = governed
    path = _approval(tmp_path / "approvals.yaml", **{field: None})
    with pytest.raises(SpecError, match="pins 'agreement_sha256', 'data_sha256_hmac'"):
        sign_standing(path, reg, "Ada Analyst", keys["Ada Analyst"])
    with pytest.raises(SpecError, match=f"must set '{field}'"):
        _verify(path, reg)


def test_the_data_pin_refuses_other_data_before_it_is_parsed(governed, tmp_path: Path, capsys) -> None:
    """Issue 38: the approval names its data by the controller's keyed commitment (HMAC of the file's sha256 under
    the registry's secret, the card's ``dataset.sha256_hmac``): the same schema's other file, or the approved file
    changed by one byte, is refused; the pin is no unkeyed hash of the data; the approval is signed over it."""
    import hashlib

    from sdgov.commands import main
    from sdgov.registry import commitment

    reg, keys = governed
    approved, other = tmp_path / "approved.csv", tmp_path / "other.csv"
    approved.write_text("a,b\n1,2\n")
    other.write_text("a,b\n1,3\n")
    path = _approval(tmp_path / "approvals.yaml", data_sha256_hmac=None)
    spec = make_demo_inputs(tmp_path / "in", rows=50)
    args = ["approvals", "pin", str(path), "--spec", str(spec), "--data", str(approved), "--valid-until", LATER]
    assert main([*args, "--root", str(reg.root), "--json"]) == 0, capsys.readouterr().err
    pin = load_approvals(path).data_sha256_hmac
    assert pin == commitment.registry_committer(reg)("sha256", hashlib.sha256(approved.read_bytes()).hexdigest())
    assert pin != hashlib.sha256(approved.read_bytes()).hexdigest() and pin in capsys.readouterr().out
    _sign_all(path, reg, keys)
    a = load_approvals(path)
    assert standing.check_pinned_data(a, approved, str(path), reg) == hashlib.sha256(approved.read_bytes()).hexdigest()
    with pytest.raises(SpecError, match="not the data the standing approval pins"):
        standing.check_pinned_data(a, other, str(path), reg)
    with pytest.raises(SpecError, match="not the data the schedule in worker.yaml pins"):
        standing.check_pinned_data(a, approved, str(path), reg, schedule_pin="ef" * 32)
    edited = _approval(tmp_path / "edited.yaml", data_sha256_hmac=DATA)  # another pin: the signatures no longer hold
    edited.write_text(path.read_text().replace(pin, DATA))
    with pytest.raises(SpecError, match="no valid signature"):
        verify_standing(load_approvals(edited), load_approvals(edited).agreement_sha256 or "", str(edited), reg)


def test_a_sandbox_registry_records_typed_names_as_unverified(tmp_path: Path) -> None:
    reg = Registry(init_registry(tmp_path / "registry"))  # no approvers registry: no keys to check names against
    path = _approval(tmp_path / "approvals.yaml")
    signoffs = agreement_signoffs(load_approvals(path), AGREEMENT, str(path), reg)
    assert [s.identity_verified for s in signoffs] == [False, False]
    assert all("unsigned" in s.via and "not verified" in s.via for s in signoffs)


def test_the_sign_command_signs_and_refuses_a_stranger_in_one_line(governed, tmp_path: Path, capsys) -> None:
    from sdgov.commands import main

    reg, keys = governed
    path = _approval(tmp_path / "approvals.yaml")
    args = ["approvals", "sign", str(path), "--root", str(reg.root), "--key"]
    before = path.read_bytes()
    assert main([*args, str(keys["Cora Compliance"]), "--as", "Cora Compliance"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not named in this standing approval" in err and path.read_bytes() == before
    assert main([*args, str(keys["Ada Analyst"]), "--as", "Ada Analyst"]) == 0
    assert main([*args, str(keys["Carl Controller"]), "--as", "Carl Controller", "--json"]) == 0
    assert '"signer": "Carl Controller"' in capsys.readouterr().out
    _verify(path, reg)


@pytest.mark.parametrize(
    "signatures",
    [
        "signatures: []\n",
        "signatures: [] \n# the end\n",
        "signatures: []  # appended by sdgov\n",
        "signatures: []\ndescription: x\n",
    ],
)
def test_every_signature_leaves_yaml_the_next_signer_reads(governed, tmp_path: Path, signatures: str) -> None:
    """Issue 25: on a file with ``signatures: []`` the first signature was appended after the ``[]``, which no YAML
    reader accepts, and the next signer could not sign. Signed twice, by two keys, the file loads and verifies."""
    reg, keys = governed
    path = _approval(tmp_path / "approvals.yaml")
    path.write_text(path.read_text() + signatures)
    _sign_all(path, reg, keys)
    assert len(load_approvals(path).signatures) == 2 and "# the controller's comment survives" in path.read_text()
    assert set(_verify(path, reg).signed_at) == {"Ada Analyst", "Carl Controller"}


def test_signing_a_lapsed_approval_is_refused_in_one_line(governed, tmp_path: Path, capsys) -> None:
    from sdgov.commands import main

    reg, keys = governed
    path = _approval(tmp_path / "approvals.yaml", valid_until="2020-01-31")
    before = path.read_bytes()
    args = ["approvals", "sign", str(path), "--root", str(reg.root), "--key", str(keys["Ada Analyst"])]
    assert main([*args, "--as", "Ada Analyst"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lapsed on 2020-01-31" in err and path.read_bytes() == before
