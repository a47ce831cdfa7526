"""The contracts between stages: what each stage receives and hands on, as pydantic models.

Every artifact travels as an :class:`ArtifactRef` (path + sha256); a stage re-hashes its inputs before use, so
a file changed between stages is refused rather than silently consumed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from sdgov.agreement.spec import AgreedSplit, Agreement
from sdgov.base.clock import utcnow
from sdgov.base.errors import RegistryError, SpecError
from sdgov.base.hashing import sha256_file
from sdgov.base.model import Frozen, unstated_at_default
from sdgov.generators.settings import GeneratorSpec
from sdgov.governance.signoff import SignOff


class ArtifactRef(Frozen):
    name: str
    path: str
    sha256: str
    bytes: int

    @classmethod
    def of(cls, name: str, path: str | Path) -> ArtifactRef:
        """A reference to the file as it is now: its resolved path, sha256 and size in bytes."""
        p = Path(path)
        return cls(name=name, path=str(p.resolve()), sha256=sha256_file(p), bytes=p.stat().st_size)

    def verified(self) -> Path:
        """The path, after checking the file still has the hash it was handed over with."""
        p = Path(self.path)
        if not p.is_file():
            raise RegistryError(f"input artifact {self.name!r} is missing", self.path, "re-run the stage that makes it")
        actual = sha256_file(p)
        if actual != self.sha256:
            raise RegistryError(
                f"input artifact {self.name!r} changed since it was produced (sha256 {actual[:12]}… ≠ "
                f"{self.sha256[:12]}…)",
                self.path,
                "re-run the pipeline from the stage that made it",
            )
        return p


class DataRef(Frozen):
    """The confidential input. Only agree, measure, audit and utility stages ever hold one."""

    name: str  # the declared name: a label only
    path: str
    sha256: str  # the file's bytes (provenance, DVC)
    fingerprint: str  # the content's identity (sdgov.data.fingerprint): the budget account and every statistic key
    dvc_md5: str
    rows: int

    def as_artifact(self) -> ArtifactRef:
        """The confidential file as an :class:`ArtifactRef` (the recorded sha256, the current size), so it can be
        :meth:`~ArtifactRef.verified`."""
        return ArtifactRef(name="data", path=self.path, sha256=self.sha256, bytes=Path(self.path).stat().st_size)


class StageRecord(Frozen):
    """Provenance of one stage run: what went in, what came out, which code did it, when."""

    stage: str
    task_version: str
    started: str
    finished: str
    seconds: float
    inputs: list[ArtifactRef]
    outputs: list[ArtifactRef]
    params: dict[str, Any] = Field(default_factory=dict)


class Recorder:
    """Collects a stage's inputs/outputs while it runs, then produces its :class:`StageRecord`."""

    def __init__(self, stage: str, version: str) -> None:
        self.stage, self.version = stage, version
        self.inputs: list[ArtifactRef] = []
        self.outputs: list[ArtifactRef] = []
        self.params: dict[str, Any] = {}
        self.started = utcnow()
        self._t0 = time.perf_counter()

    @property
    def elapsed(self) -> float:
        """Seconds since the stage started."""
        return time.perf_counter() - self._t0

    def record(self) -> StageRecord:
        """The stage's ``StageRecord``: inputs, outputs and params, finished now, with the seconds since it started."""
        return StageRecord(
            stage=self.stage,
            task_version=self.version,
            started=self.started,
            finished=utcnow(),
            seconds=round(self.elapsed, 3),
            inputs=self.inputs,
            outputs=self.outputs,
            params=self.params,
        )


class InputsChecked(Frozen):
    """What a release's checks found, with a hash of every file they read: made once per release, by the command
    before its orchestrator starts (:func:`sdgov.intake.inputs.check_release_inputs`), or by the flow when nobody
    checked before it (a scheduled run in the controller's worker). The first stage re-verifies it by hash
    (:meth:`reverified`) instead of checking again, and writes the run's first files from it.

    Held in the controller's process only, never a run parameter: it carries the data's hash, count and fingerprint.
    """

    registry_root: str
    spec: ArtifactRef
    schema_file: ArtifactRef
    selection_review: ArtifactRef | None = None  # the reviewed selection the spec names, if any
    approvals: ArtifactRef | None = None  # the standing approval (None: a governed proposal, decided later)
    controller: list[ArtifactRef]  # the controller's files, as last signed when checked
    data: DataRef
    codes: ArtifactRef  # the data as the engine validated and encoded it (a private scratch copy)
    agreement: Agreement
    signoffs: list[SignOff] = []  # the standing approval's sign-offs on the agreement, verified

    def files(self) -> list[tuple[str, str, str]]:
        """Every file the checks read, as it was then: (what, path, sha256)."""
        refs = [self.spec, self.schema_file, self.selection_review, self.approvals, *self.controller, self.codes]
        checked = [(r.name, r.path, r.sha256) for r in refs if r is not None]
        return [*checked, ("data", self.data.path, self.data.sha256)]

    def for_run(
        self, registry_root: str | Path, spec_path: str, approvals_path: str | None, data_path: str | None
    ) -> InputsChecked:
        """This record, once the run asks for what was checked: the same registry, spec, approvals and data (a run's
        parameters never redirect what is read; ``None``: what the spec names); else one line."""
        asked = {
            "registry": (_resolved(registry_root), self.registry_root),
            "spec": (_resolved(spec_path), self.spec.path),
            "approvals": (_resolved(approvals_path), self.approvals.path if self.approvals else None),
            "data": (_resolved(data_path), self.data.path),
        }
        for what, (given, checked) in asked.items():
            if given is not None and given != checked:
                raise SpecError(
                    f"the run names another {what} than the one its inputs were checked with ({checked})",
                    str(given),
                    "start the release again: it checks what it reads",
                )
        return self

    def reverified(self) -> InputsChecked:
        """This record, once every file checked still has its hash (a file changed since is one line)."""
        for name, path, sha256 in self.files():
            if not Path(path).is_file() or sha256_file(path) != sha256:
                raise SpecError(
                    f"the {name} file changed after the release checked it",
                    path,
                    "leave the inputs as they are while a release runs, then start it again",
                )
        return self


def _resolved(path: str | Path | None) -> str | None:
    return None if path is None else str(Path(path).resolve())


class Agreed(Frozen):
    run_dir: str
    spec: ArtifactRef
    schema_file: ArtifactRef
    agreement: ArtifactRef
    agreement_sha256: str
    approvals: ArtifactRef
    data: DataRef
    codes: ArtifactRef  # the data validated and encoded once (codes.parquet): controller side, never published
    signoffs: list[SignOff]
    record: StageRecord


class Measured(Frozen):
    measurements: ArtifactRef
    privacy_plan: ArtifactRef
    reused: bool  # every statistic was drawn before (nothing new drawn or spent)
    record: StageRecord
    statement: ArtifactRef  # privacy_statement.json: what this release and its dataset spent (sdgov.budget.statement)


class GenerateInput(Frozen):
    """Everything the generate stage may see. There is no field for the confidential data: by construction."""

    measurements: ArtifactRef
    schema_file: ArtifactRef
    generator: GeneratorSpec
    rows: int | None
    seed: int
    out_dir: str
    split: AgreedSplit | None = Field(default=None, exclude_if=lambda v: v is None)  # one model per part
    engine: Literal["duckdb", "dask"] = unstated_at_default("duckdb")  # dask: the sample's parts run on its cluster


class Generated(Frozen):
    synthetic: ArtifactRef
    model_info: ArtifactRef
    rows: int
    seed: int
    chunk_rows: int
    record: StageRecord


class Audited(Frozen):
    report: ArtifactRef
    verdict: Literal["pass", "fail"]
    record: StageRecord
    evidence: dict[str, ArtifactRef] = Field(default_factory=dict)  # audit check name → <name>.json (when it ran)
    # the synthetic file validated against the schema and encoded once (its cells, synthetic_codes.parquet): the
    # utility and card stages read these, hash-verified, instead of validating the file again; None when it did
    # not fit the schema (the audit failed)
    synthetic_codes: ArtifactRef | None = None


class UtilityReported(Frozen):
    report: ArtifactRef
    full_report: ArtifactRef | None = None  # utility_report.json: every generic and task measure (issue 5)
    full_report_html: ArtifactRef | None = None  # utility_report.html: the same, with plots, self-contained
    record: StageRecord


class ReleaseResult(Frozen):
    release_id: str
    path: str
    card_html: str
    card_md: str
    card_json: str
    manifest_sha256: str
    agreement_sha256: str
