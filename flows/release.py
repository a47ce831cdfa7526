"""The release flow: agree Φ → measure → generate → audit → utility → sign-off → release."""

from __future__ import annotations

import uuid
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from sdgov import __version__
from sdgov.approvals import load_approvals, release_signoff
from sdgov.contracts import GenerateInput, ReleaseResult, SignOff
from sdgov.registry import Registry
from sdgov.tasks.agree_phi import agree_phi
from sdgov.tasks.audit import audit
from sdgov.tasks.generate import generate
from sdgov.tasks.measure import load_agreement, measure
from sdgov.tasks.release import candidate_sha256, release
from sdgov.tasks.utility_report import utility_report


def _run_id() -> str:
    rid = flow_run.get_id()
    return str(rid).replace("-", "") if rid else uuid.uuid4().hex


@flow(name="sdgov-release", version=__version__, log_prints=False)
def release_flow(
    spec_path: str, registry_root: str, approvals_path: str | None = None, data_path: str | None = None
) -> ReleaseResult:
    log = get_run_logger()
    registry = Registry(registry_root)
    agreed = agree_phi(spec_path, registry_root, _run_id(), approvals_path, data_path)
    agreement = load_agreement(agreed.agreement)
    log.info("agreement %s signed by %s", agreed.agreement_sha256[:12], ", ".join(s.name for s in agreed.signoffs))
    measured = measure(agreed, registry_root)
    generated = generate(
        GenerateInput(
            measurements=measured.measurements,
            schema_file=agreed.schema_file,
            generator=agreement.generator,
            rows=agreement.rows,
            seed=agreement.seed,
            out_dir=str(Path(agreed.run_dir) / "generate"),
        )
    )
    audited = audit(agreed, measured, generated)
    utility = utility_report(agreed, generated)
    signoffs = list(agreed.signoffs)
    if audited.verdict == "pass":
        signoffs.append(
            standing_release_signoff(
                registry,
                agreed.approvals.verified(),
                agreed.agreement_sha256,
                Path(agreed.run_dir).name,
                candidate_sha256(measured, generated, audited, utility),
            )
        )
    result = release(agreed, measured, generated, audited, utility, signoffs, registry_root)
    log.info("released %s → %s", result.release_id, result.card_html)
    return result


def standing_release_signoff(
    registry: Registry, approvals_file: Path, agreement_sha256: str, run_id: str, candidate: str
) -> SignOff:
    """Release approval from a standing-approval file, recorded in the hash-chained log before publication."""
    s = release_signoff(load_approvals(approvals_file), candidate)
    registry.append(
        "release_approved",
        s.name,
        s.role,
        agreement_sha256=agreement_sha256,
        run_id=run_id,
        decision=s.decision,
        comment=s.via,
        artifacts={"candidate": candidate},
    )
    return s
