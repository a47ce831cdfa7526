"""The controller's files (sdgov.governance.controller): adopted only by a controller's signature, changes detected and
logged."""

from __future__ import annotations

import json

import pytest
import yaml

from sdgov.base.errors import SdgovError
from sdgov.governance.controller import check_controller_files, commit, controller_approvers, load_config, registry_id
from sdgov.governance.site import Site
from sdgov.registry.log import Registry
from tests.governance import controller_registry, write_approvers


def test_a_fresh_registry_has_no_controller_files_and_nothing_to_refuse(tmp_path) -> None:
    reg = Registry(tmp_path / "registry")
    assert check_controller_files(reg) is None
    assert not load_config(reg).allow_unsigned_ui_approvals
    with pytest.raises(SdgovError, match="no committed approvers registry"):
        controller_approvers(reg)


def test_the_registry_id_is_made_once_and_logged(tmp_path) -> None:
    reg = Registry(tmp_path / "registry")
    rid = registry_id(reg)
    assert registry_id(reg) == rid and len(rid) == 32
    [genesis] = reg.events()
    assert genesis.event == "registry_created" and genesis.artifacts["registry_id"] == rid
    assert registry_id(Registry(tmp_path / "other")) != rid


def test_bootstrap_needs_a_controller_listed_with_a_key_in_the_file_being_adopted(tmp_path) -> None:
    root, keys = tmp_path / "registry", tmp_path / "keys"
    paths = write_approvers(root, keys)
    with pytest.raises(SdgovError, match="changed without a signed commit"):
        check_controller_files(Registry(root))
    with pytest.raises(SdgovError, match="'Ada Analyst' is not a data controller"):
        commit(Registry(root), "Ada Analyst", paths["Ada Analyst"])
    with pytest.raises(SdgovError, match="is not the key registered for 'Carl Controller'"):
        commit(Registry(root), "Carl Controller", paths["Ada Analyst"])
    [e] = commit(Registry(root), "Carl Controller", paths["Carl Controller"])
    assert e.event == "approvers_changed" and e.artifacts["file"] == "approvers.yaml" and e.actor == "Carl Controller"
    assert controller_approvers(Registry(root)).find("Ada Analyst") is not None
    assert commit(Registry(root), "Carl Controller", paths["Carl Controller"]) == []  # nothing changed


def test_an_uncommitted_change_to_any_controller_file_stops_releases_until_a_controller_signs_it(tmp_path) -> None:
    root, keys = tmp_path / "registry", tmp_path / "keys"
    paths = controller_registry(root, keys)
    reg = Registry(root)
    (root / "policy.yaml").write_text("datasets: {toy: {rho: 99}}\n")  # raise the budget behind the log's back
    with pytest.raises(SdgovError, match=r"changed without a signed commit: .*policy.yaml") as e:
        check_controller_files(reg)
    assert "\n" not in e.value.one_line()
    with pytest.raises(SdgovError, match="not a data controller"):  # the analyst cannot adopt it
        commit(reg, "Ada Analyst", paths["Ada Analyst"])
    [e1] = commit(reg, "Carl Controller", paths["Carl Controller"])
    assert e1.event == "policy_changed" and e1.artifacts["file"] == "policy.yaml"
    check_controller_files(reg)
    (root / "policy.yaml").unlink()  # removing it is a change too
    with pytest.raises(SdgovError, match="removed"):
        check_controller_files(reg)


def test_an_analyst_cannot_make_themselves_controller_even_by_editing_and_signing(tmp_path) -> None:
    root, keys = tmp_path / "registry", tmp_path / "keys"
    paths = controller_registry(root, keys)
    reg = Registry(root)
    doc = yaml.safe_load((root / "approvers.yaml").read_text())
    doc["approvers"][0]["role"] = "controller"  # Ada promotes herself
    (root / "approvers.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(SdgovError, match="not a data controller of the approvers registry in force"):
        commit(reg, "Ada Analyst", paths["Ada Analyst"])
    with pytest.raises(SdgovError, match="changed without a signed commit"):
        controller_approvers(reg)


def test_a_forged_commit_event_in_the_log_is_detected(tmp_path) -> None:
    root, keys = tmp_path / "registry", tmp_path / "keys"
    controller_registry(root, keys)
    reg = Registry(root)
    (root / "policy.yaml").write_text("datasets: {toy: {rho: 99}}\n")
    from sdgov.base.hashing import sha256_file

    # a writer appends a policy_changed event with a made-up statement, keeping the hash chain intact
    reg.append(
        "policy_changed",
        "Carl Controller",
        "controller",
        artifacts={"file": "policy.yaml", "sha256": sha256_file(root / "policy.yaml"), "statement": "sdgov1.e30.AA"},
    )
    with pytest.raises(SdgovError, match="is not valid"):
        check_controller_files(reg)
    assert json.loads((root / "log.jsonl").read_text().splitlines()[-1])["event"] == "policy_changed"


def test_the_approvers_file_location_is_the_configurations_and_its_own_commit(tmp_path) -> None:
    root, keys = tmp_path / "registry", tmp_path / "keys"
    paths = controller_registry(root, keys)
    reg = Registry(root)
    elsewhere = tmp_path / "controller-space" / "people.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text((root / "approvers.yaml").read_text())
    (root / "controller.yaml").write_text(f"approvers_file: {elsewhere}\nallow_unsigned_ui_approvals: false\n")
    with pytest.raises(SdgovError, match="controller.yaml"):
        check_controller_files(reg)
    events = commit(reg, "Carl Controller", paths["Carl Controller"])
    assert {e.artifacts["file"] for e in events} == {"controller.yaml"}  # same bytes: same approvers hash
    check_controller_files(reg)
    elsewhere.write_text(elsewhere.read_text() + "  - {name: Mallory, role: controller, public_key: x}\n")
    with pytest.raises(SdgovError, match="people.yaml"):
        check_controller_files(reg)


def test_sdgov_release_refuses_in_one_line_while_a_controller_file_is_unsigned(tmp_path, capsys) -> None:
    from sdgov.commands import main
    from tests.conftest import make_demo_inputs

    spec = make_demo_inputs(tmp_path / "in", rows=200)
    root = tmp_path / "registry"
    root.mkdir()
    (root / "policy.yaml").write_text("datasets: {toyland_census: {rho: 1000}}\n")  # no controller signed this
    assert main(["release", "--spec", str(spec), "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "policy.yaml" in err and "changed without a signed commit" in err
    assert not (root / "runs").exists() and not (root / "log.jsonl").exists()  # nothing written


def _tree(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_registry_verify_flags_an_unsigned_edit_of_the_approvers_that_release_refuses(tmp_path, capsys) -> None:
    """One verification (issue 24): what stops a release, verify reports — it said ok before."""
    from sdgov.commands import main

    root = tmp_path / "registry"
    controller_registry(root, tmp_path / "keys")
    assert main(["registry", "verify", "--root", str(root), "--json"]) == 0
    capsys.readouterr()
    approvers = yaml.safe_load((root / "approvers.yaml").read_text())
    approvers["approvers"][0]["role"] = "controller"  # Ada makes herself a controller, unsigned
    (root / "approvers.yaml").write_text(yaml.safe_dump(approvers))
    with pytest.raises(SdgovError, match="changed without a signed commit"):
        check_controller_files(Registry(root))
    assert main(["registry", "verify", "--root", str(root), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and any("approvers.yaml: changed" in p for p in out["problems"]), out


def test_a_symlinked_policy_is_refused_before_a_release_writes_anything(tmp_path, capsys) -> None:
    """The link points at the very bytes the controller signed: the hashes match, but a link can be re-pointed at
    will; before, the release wrote codes.parquet and two agreement_signed events, then its spend crashed."""
    from sdgov.commands import main
    from tests.conftest import make_demo_inputs
    from tests.governance import sign_standing_approval

    spec = make_demo_inputs(tmp_path / "in", rows=200)
    root = tmp_path / "registry"
    keys = controller_registry(root, tmp_path / "keys")
    sign_standing_approval(spec, root, keys)
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_bytes((root / "policy.yaml").read_bytes())
    (root / "policy.yaml").unlink()
    (root / "policy.yaml").symlink_to(elsewhere)
    before = _tree(root)
    assert main(["release", "--spec", str(spec), "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "policy.yaml" in err and "symbolic link" in err, err
    assert _tree(root) == before and not (root / "runs").exists()  # nothing written
    assert main(["registry", "verify", "--root", str(root), "--json"]) == 1
    assert any("policy.yaml: a symbolic link" in p for p in json.loads(capsys.readouterr().out)["problems"])


def test_an_unsigned_controller_file_edit_after_a_release_started_stops_its_spend(tmp_path) -> None:
    """Every spend makes the start-of-release check again: nothing is drawn on a registry verify would flag."""

    from sdgov.tasks.measure import measure
    from tests.conftest import agree, make_demo_inputs
    from tests.governance import sign_standing_approval

    spec = make_demo_inputs(tmp_path / "in", rows=800)
    root = tmp_path / "registry"
    sign_standing_approval(spec, root, controller_registry(root, tmp_path / "keys"))
    agreed = agree(spec, Site.resolve(str(root)))  # started: the files were as signed
    approvers = yaml.safe_load((root / "approvers.yaml").read_text())
    approvers["approvers"][0]["role"] = "controller"
    (root / "approvers.yaml").write_text(yaml.safe_dump(approvers))
    with pytest.raises(SdgovError, match="changed without a signed commit"):
        measure.fn(agreed, Site.resolve(str(root)))
    assert "budget_spent" not in [e.event for e in Registry(root).events()]
    assert not list((root / "measurements").glob("*.json")), "no noise drawn"
