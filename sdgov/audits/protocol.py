"""What an audit check is, what it is given and what it returns: the one plug-in point of the audit stage.

An :class:`AuditCheck` has a ``name`` (its evidence file ``<name>.json`` and its card section
``cards/audits/<name>.{html,md}.j2``), a pydantic ``settings_model`` that *is* its pre-registered spec section
(``section``, e.g. ``audit:``, registered in :data:`sdgov.agreement.sections.SECTIONS`; ``None`` for a check that
always runs with its settings' defaults), the audit generators it will fit (``generators``: the pre-flight dry-runs
them before any budget is spent), the prefix of its report rows (``row_prefix``: the card's verdict counts a
section's own verdict only when none of them says it) and ``run(context, settings)``, which returns its
:class:`Check` rows and, optionally, the evidence the card shows. The stage runs the checks of
:data:`sdgov.audits.registry.AUDITS` in order; a failed blocking check blocks the release. ``docs/extending.md``
walks through adding one.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, Protocol

import pandas as pd
from pydantic import BaseModel, Field

from sdgov.base.executor import Executor, executor_for
from sdgov.base.model import Frozen

if TYPE_CHECKING:
    from sdgov.agreement.spec import Agreement
    from sdgov.budget.accounting import PrivacyPlan
    from sdgov.contracts import ArtifactRef, StageRecord
    from sdgov.data.psi import MeasurementSet
    from sdgov.data.schema import Schema


class Check(Frozen):
    """One row of the audit report; a failed ``block`` check blocks the release, a failed ``warn`` check does not."""

    name: str
    passed: bool
    detail: str
    severity: Literal["block", "warn"] = "block"
    part: str | None = Field(default=None, exclude_if=lambda v: v is None)  # a split synthesis: the part it tested


class AuditReport(Frozen):
    verdict: Literal["pass", "fail"]
    checks: list[Check]
    not_run: list[str]
    # the rows of the pre-registered audits, computed on the confidential data: the public card says only that they
    # ran and did not block the release (their results, warnings included, stay in the controller's evidence)
    confidential: list[str] = []


@dataclass
class AuditContext:
    """Everything a check may read: the agreement and what the earlier stages made, and — only on request, as only
    the controller-side stages may — the encoded confidential data (read once, whoever asks first)."""

    agreement: Agreement
    agreement_sha256: str
    schema: Schema
    measurements: MeasurementSet
    measurements_ref: ArtifactRef
    plan: PrivacyPlan
    generate_record: StageRecord
    model_info: dict[str, Any]
    synthetic_file: Path
    requested_rows: int
    read_confidential: Callable[[], pd.DataFrame]
    executor_for: Callable[[int], Executor] = executor_for  # workers (< 1: every core) → where trials run
    log: Callable[[str], None] = print
    confidential_file: Path | None = None  # the encoded copy read_confidential reads, when there is one
    synthetic_codes_file: Path | None = None  # where the stage keeps the synthetic file's cells (None: not kept)
    _confidential: pd.DataFrame | None = field(default=None, repr=False)
    _synthetic_problem: str | None = field(default=None, repr=False)
    _synthetic_checked: bool = field(default=False, repr=False)
    _synthetic: pd.DataFrame | None = field(default=None, repr=False)
    _sampled: bool = field(default=False, repr=False)  # a sample or a part of it was read

    def synthetic(self) -> pd.DataFrame:
        """The synthetic records as written (released values), read into memory on first use. A check that needs
        only their count or their validity reads ``synthetic_file`` out of core instead, as the structural checks
        do, so that a release of 55M records is audited without holding them."""
        if self._synthetic is None:
            self._synthetic = pd.read_parquet(self.synthetic_file)
        return self._synthetic

    def synthetic_problem(self) -> str | None:
        """Why the synthetic file does not fit the schema (one line), or None: every value checked out of core by the
        embedded engine, as the confidential input is, once per release — the cells it encodes are kept at
        ``synthetic_codes_file`` (when given) for the utility and card stages, which read them instead of
        validating and encoding the file again."""
        if not self._synthetic_checked:
            from sdgov.base.errors import DataError
            from sdgov.engines.duckdb_engine import DuckDBEngine

            with tempfile.TemporaryDirectory(prefix=".synthetic-check-", dir=self.synthetic_file.parent) as scratch:
                out = self.synthetic_codes_file or Path(scratch) / "codes.parquet"
                try:
                    DuckDBEngine().encode_columns(self.synthetic_file, self.schema, self.agreement.attributes, out)
                except DataError as exc:
                    self._synthetic_problem = exc.one_line()
            self._synthetic_checked = True
        return self._synthetic_problem

    def confidential(self) -> pd.DataFrame:
        """The encoded confidential data (cell indices, one column per schema attribute)."""
        if self._confidential is None:
            self._confidential = self.read_confidential()
        return self._confidential

    def confidential_sample(self, rows: int, seed: int, columns: list[str] | None = None) -> pd.DataFrame:
        """At most ``rows`` encoded confidential records (of ``columns``, else every attribute): all of them, or the
        fixed uniform sample of :func:`sdgov.engines.recordset.sample_frame` — read from the encoded file without
        loading the rest, when the records are not in memory yet (a 55M-record release: the audits' pools). The same
        records whichever columns are asked for; reading only the agreement's (App 3: 7 of 17) halves what a 55M
        scan decompresses."""
        from sdgov.engines.recordset import read_sample, sample_frame

        if self._confidential is None and self.confidential_file is not None:
            import pyarrow.parquet as pq

            if pq.ParquetFile(self.confidential_file).metadata.num_rows > rows:
                self._sampled = True
                names = columns or list(pq.read_schema(self.confidential_file).names)
                return read_sample(self.confidential_file, names, rows, seed)
        frame = sample_frame(self.confidential(), rows, seed)
        return frame if columns is None else frame[columns]

    def confidential_where(self, attribute: str, cells: list[int]) -> pd.DataFrame:
        """The encoded confidential records whose ``attribute`` holds one of ``cells`` (a part of a split synthesis),
        read from the encoded file with the filter pushed down — only that part is held — or from the records in
        memory when they are there already."""
        self._sampled = True
        if self._confidential is None and self.confidential_file is not None:
            import pyarrow.parquet as pq

            table = pq.read_table(self.confidential_file, filters=[(attribute, "in", list(cells))])
            return table.to_pandas()
        frame = self.confidential()
        return frame[frame[attribute].isin(cells)].reset_index(drop=True)

    @property
    def confidential_was_read(self) -> bool:
        """Whether the confidential data, all of it or a sample, has been read by a check."""
        return self._confidential is not None or self._sampled


@dataclass(frozen=True)
class AuditOutcome:
    """What a check returns: its report rows and, when it has evidence for the card, the full result (JSON types)
    and the section its card templates render."""

    checks: list[Check]
    result: dict[str, Any] | None = None
    section: dict[str, Any] | None = None


class CheckGenerator(NamedTuple):
    """A generator a check will fit: where the spec names it, its registered name (``None``: the release's own honest
    variant, which the generator dry run covers) and its parameters."""

    where: str
    path: str | None
    params: dict[str, Any]


class AuditCheck(Protocol):
    name: ClassVar[str]
    section: ClassVar[str | None]
    settings_model: ClassVar[type[BaseModel]]
    not_run: ClassVar[str]
    title: ClassVar[str]  # its section's name on the card when the section gives no "title" of its own
    row_prefix: ClassVar[str | None]  # its report rows start with it, or None: its section's verdict always counts

    def generators(self, settings: Any, agreement: Agreement) -> list[CheckGenerator]:
        """The generators ``run`` will fit, for the pre-flight to dry-run before any budget is spent."""
        ...

    def run(self, context: AuditContext, settings: Any) -> AuditOutcome:
        """Run the check: its report rows and, when it has evidence for the card, its result and section."""
        ...


def settings_of(check: AuditCheck, agreement: Agreement) -> BaseModel | None:
    """The check's pre-registered settings, or its defaults when it has no spec section; ``None`` when the spec does
    not pre-register it or switches it off (``enabled: false``)."""
    if check.section is None:
        return check.settings_model()
    settings = agreement.sections.get(check.section)
    return settings if settings is not None and getattr(settings, "enabled", True) else None
