"""Reading a release spec: the file, its schema and its paths resolved, the agreement resolved (:func:`load_spec`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from sdgov.agreement.resolve import resolve
from sdgov.agreement.sections.tasks import check_tasks
from sdgov.agreement.spec import Agreement, ReleaseSpec
from sdgov.base.errors import SpecError
from sdgov.base.loading import load_model_file
from sdgov.data.schema import Schema, load_schema


class LoadedSpec(BaseModel):
    """A spec with its files resolved: what the agree stage works from."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)
    spec: ReleaseSpec
    spec_path: Path
    schema_: Schema = Field(alias="schema")
    schema_file: Path
    data_path: Path
    approvals_path: Path | None
    agreement: Agreement

    @property
    def selection_review_path(self) -> Path | None:
        """The reviewed selection's record (relative to the spec), if the spec names one."""
        sel = self.spec.selection_review
        return None if sel is None else resolved(self.spec_path.parent / sel, f"{self.spec_path}: selection_review")


def resolved(path: str | Path, where: str = "") -> Path:
    """``path`` made absolute; a symlink loop or an unusable name is one :class:`SpecError` line."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: Python 3.11's "Symlink loop from ..."
        raise SpecError(
            f"the path cannot be resolved ({getattr(exc, 'strerror', None) or exc})",
            where or str(path),
            "check the path (a symlink loop? a name too long?)",
        ) from None


def load_spec(path: str | Path) -> LoadedSpec:
    """Read the release spec at ``path`` with its schema, resolve its agreement and check its tasks → ``LoadedSpec``.

    Paths are resolved against the spec's folder; a bad spec, Φ or task is a ``SpecError`` line, a bad schema a
    ``SchemaError``."""
    path = resolved(path)
    spec = load_model_file(ReleaseSpec, path, SpecError, "release spec")
    base = path.parent
    schema_file = resolved(base / spec.schema_path, f"{path}: schema")
    schema = load_schema(schema_file)
    agreement = resolve(spec, schema, where=str(path))
    check_tasks(spec.tasks, schema, agreement.attributes, where=str(path))
    approvals = resolved(base / spec.approvals, f"{path}: approvals") if spec.approvals else None
    return LoadedSpec(
        spec=spec,
        spec_path=path,
        schema=schema,
        schema_file=schema_file,
        data_path=resolved(base / spec.dataset.path, f"{path}: dataset.path"),
        approvals_path=approvals,
        agreement=agreement,
    )


def check_unsplit(loaded: LoadedSpec, what: str) -> None:
    """Refuse a split spec (one line) for a tool that fits one model to Φ on all records."""
    if loaded.agreement.split is not None:
        raise SpecError(
            f"{what} is not available for a split synthesis (it refits one model to Φ on all records; a split has "
            "one model per part)",
            str(loaded.spec_path),
            "run it on a spec with one 'phi' (docs/structures.md, split synthesis)",
        )
