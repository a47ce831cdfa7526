"""Pre-flight: every user-supplied input of a release checked in one place, before anything is written.

``sdgov release`` checks the inputs before it starts the orchestrator (a bad file costs a second, not a server start)
with :func:`check_release_inputs`, which returns what it checked as one typed record, hashes included
(:class:`~sdgov.contracts.InputsChecked`); the agree stage re-verifies that record by hash and writes the run's
first files from it instead of checking again. A run nobody checked before (a scheduled one in the controller's
worker) is checked by its flow, with the same function. A governed proposal likewise
(:func:`check_proposal`, :class:`CheckedProposal`).

The confidential file (CSV or Parquet) is read, validated and encoded here and nowhere else in a release, by the
embedded engine (:mod:`sdgov.engines`, out of core: memory does not grow with the number of records) into a
private scratch copy of cell indices; the agree stage copies it into the run as ``codes.parquet``
(:mod:`sdgov.artifacts`), which later stages read.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import TYPE_CHECKING

from sdgov.agreement.load import LoadedSpec, load_spec
from sdgov.base.errors import SpecError
from sdgov.base.hashing import md5_file, sha256_file
from sdgov.contracts import ArtifactRef, DataRef, InputsChecked
from sdgov.data.schema import Schema
from sdgov.engines import engine
from sdgov.engines.validated import ValidatedData
from sdgov.governance.approvers import ApprovalRefused, Approver, Approvers
from sdgov.governance.controller import APPROVERS, check_controller_files, controller_files
from sdgov.governance.policy import check_plan_allowed
from sdgov.governance.proposals import ProposalCheck, check_proposal_statement, record_proposal_refused
from sdgov.governance.signoff import SignOff
from sdgov.governance.standing import StandingApproval, agreement_signoffs, check_pinned_data, load_approvals
from sdgov.identity.names import check_name
from sdgov.intake.preflight import check_root_is_usable, part_records, run_preflight
from sdgov.registry.log import Registry

if TYPE_CHECKING:
    from sdgov.budget.accounting import PrivacyPlan
    from sdgov.governance.site import Site


def validated_data(path: Path, schema: Schema, engine_name: str = "duckdb") -> ValidatedData:
    """Read, validate and encode the confidential file into a private scratch copy (removed at exit).

    ``engine_name`` is the spec's ``engine:`` (:func:`sdgov.engines.engine`): every engine encodes alike."""
    scratch = Path(tempfile.mkdtemp(prefix="sdgov-codes-"))  # private (0700), removed at exit
    atexit.register(shutil.rmtree, scratch, True)
    # a missing or malformed file ends here, with one clear line
    encoded = engine(engine_name).encode(path, schema, scratch / "codes.parquet")
    return ValidatedData(
        path=path,
        sha256=sha256_file(path),
        schema_sha256=schema.sha256(),
        codes_path=encoded.path,
        rows=encoded.rows,
        fingerprint=encoded.fingerprint,
    )


@dataclass(frozen=True)
class CheckedInputs:
    loaded: LoadedSpec
    data: ValidatedData
    approvals_path: Path
    approvals: StandingApproval


@dataclass(frozen=True)
class CheckedProposal:
    """A governed proposal as checked: the record of its inputs, the proposer and their signed statement."""

    loaded: LoadedSpec
    data: ValidatedData
    proposer: Approver
    signed: ProposalCheck
    inputs: InputsChecked

    def for_run(
        self, registry_root: str | Path, spec_path: str, data_path: str | None, proposer: str, proposal: str | None
    ) -> CheckedProposal:
        """This proposal as checked, once the run asks for what was checked (the inputs, the proposer and their
        signed statement: :meth:`InputsChecked.for_run`); else one line."""
        self.inputs.for_run(registry_root, spec_path, None, data_path)
        if (self.signed.proposer, self.signed.token or None) != (proposer, proposal):
            raise SpecError(
                "the run names another proposer or proposal than the one checked",
                "proposer",
                "start the release again: it checks what it reads",
            )
        return self


def check_spec_and_data(
    spec_path: str | Path,
    data_path: str | Path | None = None,
    root: str | Path | None = None,
    loaded: LoadedSpec | None = None,
) -> tuple[LoadedSpec, ValidatedData, PrivacyPlan]:
    """Spec, schema, data, and the pre-flight (names, paths, privacy plan, generator and audit dry runs, disk
    space under ``root``): the checks every way into a release shares, all before the first draw → the loaded spec,
    the data as checked and the privacy plan. ``loaded``: the spec as the caller just loaded it from ``spec_path``
    (loading resolves the generator: not twice)."""
    if root is not None:
        check_root_is_usable(Path(root))
    loaded = loaded if loaded is not None and loaded.spec_path == Path(spec_path).resolve() else load_spec(spec_path)
    data = validated_data(
        Path(data_path).resolve() if data_path else loaded.data_path, loaded.schema_, loaded.spec.engine
    )
    split = loaded.agreement.split
    plan = run_preflight(loaded, data.rows, root, None if split is None else part_records(data.codes_path, split))
    return loaded, data, plan


@dataclass(frozen=True)
class SpecValidated:
    """What ``sdgov validate`` checked: the loaded spec, the data as checked, the privacy plan (the policy's, with a
    registry) and the registry checked against (None: no controller's policy was applied)."""

    loaded: LoadedSpec
    data: ValidatedData
    plan: PrivacyPlan
    root: Path | None


def validate_spec(site: Site, spec_path: str | Path, data_path: str | Path | None, root_given: bool) -> SpecValidated:
    """``sdgov validate``: the checks a release makes before it starts, but for the standing approval — spec, schema,
    data and every pre-flight check (:func:`check_spec_and_data`) — and, with a registry (``root_given``, or the
    site's registry where it exists), the controller's files as last signed and its policy, as a release does."""
    registry = site.registry
    root = registry.root.resolve() if root_given or registry.is_registry() else None
    loaded, data, plan = check_spec_and_data(spec_path, data_path, root)
    if root is not None:  # what the release applies before its flow starts: the controller's files, then the policy
        ag = loaded.agreement
        check_controller_files(registry)
        plan = check_plan_allowed(site, ag, data.fingerprint, ag.dataset_name, data.rows)
    return SpecValidated(loaded, data, plan, root)


def check_inputs(
    spec_path: str | Path,
    approvals_path: str | Path | None = None,
    data_path: str | Path | None = None,
    root: str | Path | None = None,
    schedule_pin: str | None = None,
    in_force: Approvers | None | EllipsisType = ...,
) -> CheckedInputs:
    """A release under a standing approval: the approval file, then — before the data is parsed — that the data
    file is the one the approval pins (and the one ``schedule_pin``, the worker's schedule entry, pins), then spec,
    data and pre-flight; the records read are checked to be the file that was checked."""
    loaded = load_spec(spec_path)
    approvals_file = Path(approvals_path).resolve() if approvals_path else loaded.approvals_path
    if approvals_file is None:
        raise SpecError(
            "no sign-off: the spec names no standing approval and none was given",
            str(loaded.spec_path),
            "add 'approvals: approvals.yaml' to the spec or pass --approvals FILE",
        )
    approvals = load_approvals(approvals_file)
    pinned = None
    if root is not None:
        data_file = Path(data_path).resolve() if data_path else loaded.data_path
        pinned = check_pinned_data(approvals, data_file, str(approvals_file), Registry(root), schedule_pin, in_force)
    loaded, data, _ = check_spec_and_data(spec_path, data_path, root, loaded)
    if pinned is not None and data.sha256 != pinned:
        raise SpecError(
            "the data file changed while it was checked: it is no longer the data the standing approval pins",
            str(data.path),
            "leave the approved file in place while a release reads it",
        )
    return CheckedInputs(loaded=loaded, data=data, approvals_path=approvals_file, approvals=approvals)


def check_release_inputs(
    site: Site,
    spec_path: str | Path,
    approvals_path: str | Path | None = None,
    data_path: str | Path | None = None,
    schedule_pin: str | None = None,
) -> InputsChecked:
    """Everything a release under a standing approval checks before anything is written, once: the controller's
    files as last signed, the inputs (:func:`check_inputs`), the standing approval's sign-offs on the agreement and
    the controller's policy (it refuses rows = N unless N is public, and an exact release unless allowed) → the
    record of what was checked, which the agree stage re-verifies by hash."""
    in_force = check_controller_files(site.registry)  # the controller's files as last signed, or no release
    checked = check_inputs(spec_path, approvals_path, data_path, site.root, schedule_pin, in_force)
    ag, data, where = checked.loaded.agreement, checked.data, str(checked.approvals_path)
    signoffs = agreement_signoffs(checked.approvals, ag.sha256(), where, site.registry, in_force)
    check_plan_allowed(site, ag, data.fingerprint, ag.dataset_name, data.rows)
    return inputs_checked(site.registry, checked.loaded, data, checked.approvals_path, signoffs)


def inputs_checked(
    registry: Registry,
    loaded: LoadedSpec,
    data: ValidatedData,
    approvals: Path | None = None,
    signoffs: list[SignOff] | None = None,
) -> InputsChecked:
    """The record of checks that passed on ``loaded`` and ``data`` in ``registry``: every file they read, hashed as
    it is now (the controller's files as the check just found them signed)."""
    review = loaded.selection_review_path
    return InputsChecked(
        registry_root=str(registry.root.resolve()),
        spec=ArtifactRef.of("spec", loaded.spec_path),
        schema_file=ArtifactRef.of("schema", loaded.schema_file),
        selection_review=ArtifactRef.of("selection review", review) if review and review.is_file() else None,
        approvals=ArtifactRef.of("approvals", approvals) if approvals is not None else None,
        controller=[ArtifactRef.of(name, p) for name, p in controller_files(registry).items() if p.is_file()],
        data=DataRef(
            name=loaded.spec.dataset.name,
            path=str(data.path),
            sha256=data.sha256,
            fingerprint=data.fingerprint,
            dvc_md5=md5_file(data.path),
            rows=data.rows,
        ),
        codes=ArtifactRef.of("codes", data.codes_path),
        agreement=loaded.agreement,
        signoffs=signoffs or [],
    )


def check_governed_proposal(
    site: Site,
    spec_path: str | Path,
    proposer: str,
    data_path: str | Path | None = None,
    proposal: str | None = None,
    selection_verified: bool | None = None,
) -> CheckedProposal:
    """A governed proposal (:func:`check_proposal`) and the controller's policy on it (it refuses rows = N unless N
    is public, and an exact release unless allowed): everything a governed release checks before it writes."""
    checked = check_proposal(spec_path, site.registry, proposer, data_path, proposal, selection_verified)
    ag, data = checked.loaded.agreement, checked.data
    check_plan_allowed(site, ag, data.fingerprint, ag.dataset_name, data.rows)
    return checked


def check_proposal(
    spec_path: str | Path,
    registry: Registry,
    proposer: str,
    data_path: str | Path | None = None,
    proposal: str | None = None,
    selection_verified: bool | None = None,
) -> CheckedProposal:
    """A governed proposal: the proposer, an analyst in the controller's approvers registry (the committed one:
    nothing the proposer passes can stand in for it), whose signed ``proposal`` names this registry and the
    agreement the spec resolves to (:mod:`sdgov.governance.proposals`) — checked, and a refusal logged, before the
    data is read — then spec, data and pre-flight. ``selection_verified`` (set only inside the Φ review flow, never
    from a run parameter): the reviewed Φ of a selection whose signed draft was checked when it was selected."""
    approvers = check_controller_files(registry)
    if approvers is None:  # a sandbox ('sdgov init' alone): releases run, proposals cannot
        raise SpecError(
            "no committed approvers registry, which a proposal needs ('sdgov init' alone allows only 'release')",
            str(controller_files(registry)[APPROVERS]),
            "'sdgov keygen' per person, add each (role, public_key) to approvers.yaml, "
            "'sdgov approvers commit --as CONTROLLER --key KEY'",
        )
    check_name(proposer, "--as")
    loaded = load_spec(spec_path)  # the agreement's hash needs the spec and the public schema, not the data
    try:
        signed = (
            ProposalCheck(proposer=proposer, verified=selection_verified)
            if selection_verified is not None
            else check_proposal_statement(registry, approvers, proposal, loaded.agreement.sha256(), proposer)
        )
    except ApprovalRefused as exc:
        record_proposal_refused(registry, proposer, loaded.agreement.sha256(), exc)
        raise
    who = approvers.find(signed.proposer)
    if who is None or who.role != "analyst":
        raise SpecError(
            f"the proposer {proposer!r} must be an analyst in the approvers registry",
            str(controller_files(registry)[APPROVERS]),
            "add them with role 'analyst' or name the analyst who proposes Φ",
        )
    loaded, data, _ = check_spec_and_data(spec_path, data_path, registry.root, loaded)
    inputs = inputs_checked(registry, loaded, data)
    return CheckedProposal(loaded=loaded, data=data, proposer=who, signed=signed, inputs=inputs)
