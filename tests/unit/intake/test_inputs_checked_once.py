"""Issue 41: the inputs of a release are checked once, into one typed record (hashes included) that the agree stage
re-verifies by hash instead of checking again; a record whose files changed, or a run naming other inputs than the
ones checked, is refused in one line before anything is written. (The count per ``sdgov release``, through the real
command: tests/system/test_read_once.py.)"""

from __future__ import annotations

import uuid

import pytest

from sdgov.base.errors import SdgovError, SpecError
from sdgov.contracts import InputsChecked
from sdgov.governance.site import Site
from tests.conftest import init_registry, make_demo_inputs, tree_bytes


@pytest.fixture
def checked(tmp_path):
    """A registry, the demo inputs (400 records) and the record of their checks."""
    from sdgov.intake.inputs import check_release_inputs

    spec = make_demo_inputs(tmp_path / "in", rows=400)
    root = init_registry(tmp_path / "registry")
    site = Site.resolve(str(root))
    return site, spec, check_release_inputs(site, spec)


def test_the_record_names_every_file_checked_with_its_hash(checked):
    site, spec, record = checked
    names = {name for name, _, _ in record.files()}
    assert {"spec", "schema", "approvals", "data", "codes"} <= names
    assert "policy.yaml" in names, "the controller's files as the check found them signed"
    assert record.spec.path == str(spec.resolve()) and record.registry_root == str(site.root.resolve())
    assert record.signoffs, "the standing approval's sign-offs, verified once"
    assert InputsChecked.model_validate_json(record.model_dump_json()) == record, "one typed record"


def test_the_agree_stage_writes_the_run_from_the_record_without_checking_again(checked, monkeypatch):
    from sdgov.intake import inputs
    from sdgov.tasks import agree_phi as stage

    site, spec, record = checked

    def again(*args: object, **kwargs: object) -> None:
        raise AssertionError("the agree stage checked the inputs again")

    monkeypatch.setattr(inputs, "check_release_inputs", again)
    monkeypatch.setattr(inputs, "validated_data", again)
    agreed = stage.agree_phi.fn(record, site, uuid.uuid4().hex)
    assert agreed.agreement_sha256 == record.agreement.sha256() and agreed.data == record.data
    assert agreed.codes.sha256 == record.codes.sha256, "the engine's encoding, copied into the run"


@pytest.mark.parametrize("changed", ["data.csv", "spec.yaml", "approvals.yaml", "policy.yaml"])
def test_a_file_changed_after_the_check_is_refused_in_one_line_with_nothing_written(checked, changed):
    from sdgov.tasks.agree_phi import agree_phi

    site, spec, record = checked
    path = (site.root if changed == "policy.yaml" else spec.parent) / changed
    path.write_bytes(path.read_bytes() + b"\n")
    before = tree_bytes(site.root)
    with pytest.raises(SpecError) as exc:
        agree_phi.fn(record, site, uuid.uuid4().hex)
    line = exc.value.one_line()
    assert "changed after the release checked it" in line and str(path.resolve()) in line and "\n" not in line
    assert tree_bytes(site.root) == before, "nothing written"


def test_run_parameters_never_redirect_what_a_record_reads(checked, tmp_path):
    """The flow takes the command's record only for the run that asks for what was checked."""
    from sdgov.flows.handover import hand_over, release_inputs

    site, spec, record = checked
    other = make_demo_inputs(tmp_path / "other", rows=300)
    for asked in (
        (str(other), None, None),
        (str(spec), None, str(other.parent / "data.csv")),
        (str(spec), str(other.parent / "approvals.yaml"), None),
    ):
        with pytest.raises(SpecError, match="names another"):
            release_inputs(site, *asked, hand_over(record))
    elsewhere = Site.resolve(str(init_registry(tmp_path / "elsewhere")))
    with pytest.raises(SpecError, match="names another registry"):
        release_inputs(elsewhere, str(spec), None, None, hand_over(record))
    assert release_inputs(site, str(spec), None, None, hand_over(record)) is record


def test_a_ticket_this_process_did_not_issue_names_nothing(checked):
    from sdgov.flows.handover import hand_over, taken

    _, _, record = checked
    with pytest.raises(SdgovError, match="does not hold"):
        taken(uuid.uuid4().hex, InputsChecked)
    ticket = hand_over(record)
    assert taken(ticket, InputsChecked) is record
    with pytest.raises(SdgovError, match="does not hold"):
        taken(ticket, InputsChecked)  # taken once
