"""Pre-flight: every user-supplied input of a release checked in one place, before anything is written.

Used by the agree and propose stages and by the CLI (which calls it before starting the orchestrator, so a bad
file costs a second, not a server start).

The confidential file (CSV or Parquet) is read, validated and encoded here and nowhere else in a release, by the
embedded engine (:mod:`sdgov.engines`, out of core: memory does not grow with the number of records) into a
private scratch copy of cell indices; the agree stage copies it into the run as ``codes.parquet``
(:mod:`sdgov.artifacts`), which later stages read. When the CLI has already checked the file in this process,
the stage's check finds the same content hash and reuses that encoding (:func:`validated_data`); likewise the
pre-flight (its generator dry run is a model fit) runs once per release: the stage's check finds that the same
spec, schema, data and registry passed it in this process (:func:`check_spec_and_data`).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sdgov.agreement.load import LoadedSpec, load_spec
from sdgov.base.errors import SpecError
from sdgov.base.hashing import sha256_bytes, sha256_file
from sdgov.data.schema import Schema
from sdgov.engines import engine
from sdgov.engines.validated import ValidatedData
from sdgov.governance.approvers import ApprovalRefused, Approver
from sdgov.governance.controller import APPROVERS, check_controller_files, controller_files
from sdgov.governance.proposals import ProposalCheck, check_proposal_statement, record_proposal_refused
from sdgov.governance.standing import StandingApproval, check_pinned_data, load_approvals
from sdgov.identity.names import check_name
from sdgov.intake.preflight import check_root_is_usable, part_records, run_preflight
from sdgov.registry.log import Registry

if TYPE_CHECKING:
    from sdgov.budget.accounting import PrivacyPlan


_last_validated: ValidatedData | None = None  # the latest parse in this process (one file: the release's)


def validated_data(path: Path, schema: Schema, engine_name: str = "duckdb") -> ValidatedData:
    """Read, validate and encode the confidential file — once per process for one file content and schema.

    The CLI checks the inputs before the orchestrator starts and the agree stage checks them again in the same
    process; hashing the file (no parse) tells the second check that the first one's result still holds.
    ``engine_name`` is the spec's ``engine:`` (:func:`sdgov.engines.engine`): every engine encodes alike.
    """
    global _last_validated
    last, schema_sha = _last_validated, schema.sha256()
    same_file = last is not None and (last.path, last.schema_sha256) == (path, schema_sha) and path.is_file()
    if last is not None and same_file and sha256_file(path) == last.sha256:
        return last
    scratch = Path(tempfile.mkdtemp(prefix="sdgov-codes-"))  # private (0700), removed at exit
    atexit.register(shutil.rmtree, scratch, True)
    # a missing or malformed file ends here, with one clear line
    encoded = engine(engine_name).encode(path, schema, scratch / "codes.parquet")
    _last_validated = ValidatedData(
        path=path,
        sha256=sha256_file(path),
        schema_sha256=schema_sha,
        codes_path=encoded.path,
        rows=encoded.rows,
        fingerprint=encoded.fingerprint,
    )
    return _last_validated


@dataclass(frozen=True)
class CheckedInputs:
    loaded: LoadedSpec
    data: ValidatedData
    approvals_path: Path
    approvals: StandingApproval


@dataclass(frozen=True)
class CheckedProposal:
    loaded: LoadedSpec
    data: ValidatedData
    proposer: Approver
    signed: ProposalCheck


_last_passed: tuple[str, PrivacyPlan] | None = None  # the latest pre-flight passed in this process, by its key


def _preflight_key(loaded: LoadedSpec, data: ValidatedData, root: str | Path | None) -> str:
    """What the pre-flight's verdict depends on, hashed: the spec file's bytes and place, the schema, the selection
    review it names, the data's content and count, and the registry root."""
    review = loaded.selection_review_path
    parts = [
        str(loaded.spec_path),
        sha256_file(loaded.spec_path),
        loaded.schema_.sha256(),
        sha256_file(review) if review is not None and review.is_file() else "",
        data.sha256,
        str(data.rows),
        str(Path(root).resolve()) if root is not None else "",
    ]
    return sha256_bytes("\0".join(parts).encode())


def check_spec_and_data(
    spec_path: str | Path,
    data_path: str | Path | None = None,
    root: str | Path | None = None,
    loaded: LoadedSpec | None = None,
) -> tuple[LoadedSpec, ValidatedData, PrivacyPlan]:
    """Spec, schema, data, and the pre-flight (names, paths, privacy plan, generator and audit dry runs, disk
    space under ``root``): the checks every way into a release shares, all before the first draw → the loaded spec,
    the data as checked and the privacy plan.

    Once per release: the CLI checks before the orchestrator starts and the first stage checks again in the same
    process; when the spec, schema, data and root have the hashes that last passed here, the pre-flight's verdict
    (a generator fit among its checks) still holds and is not recomputed. Nothing a caller passes can claim it.
    ``loaded``: the spec as the caller just loaded it from ``spec_path`` (loading resolves the generator: not twice)."""
    global _last_passed
    if root is not None:
        check_root_is_usable(Path(root))
    loaded = loaded if loaded is not None and loaded.spec_path == Path(spec_path).resolve() else load_spec(spec_path)
    data = validated_data(
        Path(data_path).resolve() if data_path else loaded.data_path, loaded.schema_, loaded.spec.engine
    )
    key = _preflight_key(loaded, data, root)
    if _last_passed is not None and _last_passed[0] == key:
        return loaded, data, _last_passed[1]
    split = loaded.agreement.split
    plan = run_preflight(loaded, data.rows, root, None if split is None else part_records(data.codes_path, split))
    _last_passed = (key, plan)
    return loaded, data, plan


def check_inputs(
    spec_path: str | Path,
    approvals_path: str | Path | None = None,
    data_path: str | Path | None = None,
    root: str | Path | None = None,
    schedule_pin: str | None = None,
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
        pinned = check_pinned_data(approvals, data_file, str(approvals_file), Registry(root), schedule_pin)
    loaded, data, _ = check_spec_and_data(spec_path, data_path, root, loaded)
    if pinned is not None and data.sha256 != pinned:
        raise SpecError(
            "the data file changed while it was checked: it is no longer the data the standing approval pins",
            str(data.path),
            "leave the approved file in place while a release reads it",
        )
    return CheckedInputs(loaded=loaded, data=data, approvals_path=approvals_file, approvals=approvals)


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
    return CheckedProposal(loaded=loaded, data=data, proposer=who, signed=signed)
