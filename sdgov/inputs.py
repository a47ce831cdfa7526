"""Pre-flight: every user-supplied input of a release checked in one place, before anything is written.

Used by the agree stage and by the CLI (which calls it before starting the orchestrator, so a bad file costs a
second, not a server start).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sdgov.approvals import StandingApproval, load_approvals
from sdgov.errors import SpecError
from sdgov.privacy import plan_privacy
from sdgov.schema import load_encoded
from sdgov.spec import LoadedSpec, load_spec


@dataclass(frozen=True)
class CheckedInputs:
    loaded: LoadedSpec
    data_path: Path
    codes: pd.DataFrame
    approvals_path: Path
    approvals: StandingApproval


def check_spec_and_data(
    spec_path: str | Path, data_path: str | Path | None = None
) -> tuple[LoadedSpec, Path, pd.DataFrame]:
    """Spec, schema, data and an accountable budget: the checks every way into a release shares."""
    loaded = load_spec(spec_path)
    data = Path(data_path).resolve() if data_path else loaded.data_path
    codes = load_encoded(data, loaded.schema_)
    try:  # an unaccountable budget fails here, not inside the flow
        plan_privacy(loaded.agreement.privacy, loaded.agreement.cliques, len(codes))
    except SpecError as exc:
        raise SpecError(exc.what, f"{loaded.spec_path}: {exc.where}", exc.fix) from None
    check_audit_generators(loaded)
    return loaded, data, codes


def check_audit_generators(loaded: LoadedSpec) -> None:
    """Every generator the pre-registered audits name must import: found out after measuring, it would have
    spent budget on a release that can never pass its audit."""
    from sdgov.audits.generator_protocol import AuditError, load_generator

    ag = loaded.agreement
    named = []
    if ag.audit is not None and ag.audit.enabled:
        named += [("audit.generator", ag.audit.generator), ("audit.positive_control", ag.audit.positive_control)]
    if ag.privacy_risk is not None and ag.privacy_risk.enabled:
        named.append(("privacy_risk.generator", ag.privacy_risk.generator))
    for where, path in named:
        if path is None:
            continue
        try:
            load_generator(path)
        except AuditError as exc:
            raise SpecError(exc.what, f"{loaded.spec_path}: {where}", exc.fix) from None


def check_inputs(
    spec_path: str | Path, approvals_path: str | Path | None = None, data_path: str | Path | None = None
) -> CheckedInputs:
    loaded, data, codes = check_spec_and_data(spec_path, data_path)
    approvals_file = Path(approvals_path).resolve() if approvals_path else loaded.approvals_path
    if approvals_file is None:
        raise SpecError(
            "no sign-off: the spec names no standing approval and none was given",
            str(loaded.spec_path),
            "add 'approvals: approvals.yaml' to the spec or pass --approvals FILE",
        )
    return CheckedInputs(
        loaded=loaded,
        data_path=data,
        codes=codes,
        approvals_path=approvals_file,
        approvals=load_approvals(approvals_file),
    )
