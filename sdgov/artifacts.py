"""A run's artifacts: the first ones written (the agreement and the encoded data), and every one read back
after checking the hash it was handed over with.

One place for what every stage after the agreement reads: the canonical agreement, the noisy marginals, the
public schema, the synthetic records and — controller side only — the encoded confidential data.

The encoded data (``codes.parquet``) is written once, by the agree stage, from the file it has just validated;
the measure, audit and utility stages read it here instead of parsing the confidential CSV again. It lives in
the run directory, is never published, and is only ever passed to controller-side stages (never to generate).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sdgov.agreement.spec import Agreement, ReleaseSpec
from sdgov.base.atomic import writing
from sdgov.base.errors import SpecError
from sdgov.base.hashing import write_json
from sdgov.base.loading import load_model_file
from sdgov.contracts import Agreed, ArtifactRef, DataRef, InputsChecked, StageRecord
from sdgov.data.psi import MeasurementSet
from sdgov.data.schema import Schema, load_schema
from sdgov.engines.recordset import SAMPLE_ROWS, ParquetRecords
from sdgov.governance.signoff import SignOff
from sdgov.registry import access
from sdgov.registry.log import Registry

CODES_FILE = "codes.parquet"
SYNTHETIC_CODES_FILE = "synthetic_codes.parquet"  # the synthetic file's cells, encoded once by the audit stage


def load_agreement(ref: ArtifactRef) -> Agreement:
    """The agreement from the canonical agreement file (hash-verified): its ``agreement`` section, validated."""
    return Agreement.model_validate(json.loads(ref.verified().read_text())["agreement"])


def read_measurements(ref: ArtifactRef) -> MeasurementSet:
    """The noisy marginals the measure stage wrote (hash-verified)."""
    return MeasurementSet.model_validate_json(ref.verified().read_bytes())


def read_schema(ref: ArtifactRef) -> Schema:
    """The public schema of the run (hash-verified)."""
    return load_schema(ref.verified())


def read_spec(ref: ArtifactRef) -> ReleaseSpec:
    """The release spec as written (its analysis tasks are outside the agreement hash, so read from here)."""
    return load_model_file(ReleaseSpec, ref.verified(), SpecError, "release spec")


@contextmanager
def synthetic_records(
    ref: ArtifactRef,
    schema: Schema,
    attributes: list[str],
    sample_rows: int = SAMPLE_ROWS,
    seed: int = 0,
    codes: ArtifactRef | None = None,
) -> Iterator[ParquetRecords]:
    """The synthetic records as a record set at any scale. ``codes``: the cells the audit stage already validated
    and encoded (:attr:`~sdgov.contracts.Audited.synthetic_codes`), read after checking their hash — not encoded
    again; else the file is validated and encoded out of core by the embedded engine (a file that does not fit the
    schema is refused, DataError) into a scratch copy beside it, removed after use."""
    from sdgov.engines.duckdb_engine import DuckDBEngine

    if codes is not None:
        yield ParquetRecords(codes.verified(), schema, attributes, sample_rows, seed)
        return
    path = ref.verified()
    with tempfile.TemporaryDirectory(prefix=".synthetic-codes-", dir=path.parent) as scratch:
        cells = Path(scratch) / "codes.parquet"
        DuckDBEngine().encode_columns(path, schema, attributes, cells)
        yield ParquetRecords(cells, schema, attributes, sample_rows, seed)


def confidential_records(
    ref: ArtifactRef, schema: Schema, attributes: list[str], sample_rows: int = SAMPLE_ROWS, seed: int = 0
) -> ParquetRecords:
    """The encoded confidential data (hash-verified) as a record set at any scale, for the controller-side stages."""
    return ParquetRecords(ref.verified(), schema, attributes, sample_rows, seed)


def write_codes(codes: ArtifactRef, run_dir: Path) -> ArtifactRef:
    """Persist the validated, encoded confidential data for the controller-side stages of this run (a copy of
    the engine's encoding, hash-verified: the data is not read again)."""
    path = run_dir / CODES_FILE
    with writing(path):
        shutil.copyfile(codes.verified(), path)
    return ArtifactRef.of("codes", path)


def read_codes(ref: ArtifactRef) -> pd.DataFrame:
    """The encoded confidential data written by the agree stage (hash-verified): no CSV parse, no re-validation."""
    return pd.read_parquet(ref.verified())


@dataclass(frozen=True)
class AgreementFiles:
    """What the first stage of a run wrote, and the inputs it read, as hash-carrying references."""

    run_dir: Path
    sha256: str
    agreement: ArtifactRef
    spec: ArtifactRef
    schema: ArtifactRef
    data: DataRef
    codes: ArtifactRef

    def agreed(self, approvals: ArtifactRef, signoffs: list[SignOff], record: StageRecord) -> Agreed:
        """The agree stage's hand-over: these references plus the approvals, sign-offs and stage record, as
        :class:`Agreed`."""
        return Agreed(
            run_dir=str(self.run_dir),
            spec=self.spec,
            schema_file=self.schema,
            agreement=self.agreement,
            agreement_sha256=self.sha256,
            approvals=approvals,
            data=self.data,
            codes=self.codes,
            signoffs=signoffs,
            record=record,
        )


def write_agreement(registry: Registry, run_id: str, checked: InputsChecked) -> AgreementFiles:
    """Open the run directory and write the canonical agreement and the encoded data, from the record of the inputs
    as checked: the first writes of any release."""
    sha = checked.agreement.sha256()
    run_dir = registry.run_dir(run_id)
    access.open_run(run_dir)  # passable by name, never listable; what is written in it is owner-only
    write_json(run_dir / "agreement.json", {"agreement": checked.agreement.model_dump(mode="json"), "sha256": sha})
    return AgreementFiles(
        run_dir=run_dir,
        sha256=sha,
        agreement=ArtifactRef.of("agreement", run_dir / "agreement.json"),
        spec=checked.spec,
        schema=checked.schema_file,
        data=checked.data,
        codes=write_codes(checked.codes, run_dir),
    )
