"""Publishing a release: the sign-off gate, the generator card built from the artifacts, the immutable copy.

Runs only after a passing audit and a release sign-off bound to :attr:`Candidate.sha256` (the hash of exactly
what is being released).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from sdgov.artifacts import load_agreement, read_measurements, read_schema, read_spec, read_synthetic
from sdgov.atomic import atomic_write_text
from sdgov.audits.protocol import AuditReport
from sdgov.card import build_card, render
from sdgov.contracts import (
    Agreed,
    ArtifactRef,
    Audited,
    Generated,
    Measured,
    ReleaseResult,
    SignOff,
    UtilityReported,
    utcnow,
)
from sdgov.errors import SdgovError
from sdgov.evidence import build_evidence, render_evidence
from sdgov.hashing import md5_file, sha256_bytes, sha256_json, write_json
from sdgov.metrics import UtilitySummary
from sdgov.model import Frozen
from sdgov.privacy import PrivacyPlan
from sdgov.registry import Registry, log_head


class Candidate(Frozen):
    """A release candidate: the noisy marginals and what was made and learnt from them, awaiting sign-off."""

    measured: Measured
    generated: Generated
    audited: Audited
    utility: UtilityReported

    @property
    def sha256(self) -> str:
        """What a release approver signs: the noisy statistics, the synthetic data and the evidence about them."""
        utility = self.utility
        return sha256_json(
            {
                "measurements": self.measured.measurements.sha256,
                "synthetic": self.generated.synthetic.sha256,
                "model_info": self.generated.model_info.sha256,
                "audit": self.audited.report.sha256,
                "utility": utility.report.sha256,
                **({"utility_report": utility.full_report.sha256} if utility.full_report else {}),
                **{k: ref.sha256 for k, ref in self.audited.evidence.items()},
            }
        )


def _section(ref: ArtifactRef) -> dict:
    return json.loads(ref.verified().read_text())["section"]


def _model_card(agreed: Agreed) -> dict | None:
    card = read_spec(agreed.spec).model_card
    return None if card is None else card.model_dump(mode="json")


def log_blocked(registry: Registry, agreed: Agreed, audited: Audited, comment: str) -> None:
    """A failed audit blocks the release: say so in the hash-chained log."""
    registry.append(
        "release_blocked",
        "sdgov",
        "system",
        agreement_sha256=agreed.agreement_sha256,
        run_id=Path(agreed.run_dir).name,
        artifacts={"audit": audited.report.sha256},
        comment=comment,
    )


def check_releasable(registry: Registry, agreed: Agreed, candidate: Candidate, signoffs: list[SignOff]) -> None:
    """Refuse unless the audit passed (a failed one is logged as blocking) and a release sign-off names the
    candidate's hash."""
    run_dir, audited = Path(agreed.run_dir), candidate.audited
    if audited.verdict != "pass":
        log_blocked(registry, agreed, audited, "audit failed")
        raise SdgovError("the audit failed, so nothing was released", audited.report.path, "read the audit report")
    sha = candidate.sha256
    if not any(s.subject == "release" and s.decision == "approve" and s.subject_sha256 == sha for s in signoffs):
        raise SdgovError("no release sign-off for this candidate", run_dir.name, "a data controller must approve it")


def publish_release(
    registry: Registry, agreed: Agreed, candidate: Candidate, signoffs: list[SignOff], task_version: str
) -> ReleaseResult:
    """Build the card from the artifacts, write the provenance, and publish the immutable release.

    All under the registry lock, so that the log head the card names is exactly the ``prev`` of this release's
    ``released`` event (nothing else can be appended in between)."""
    with registry.lock():
        return _publish_locked(registry, agreed, candidate, signoffs, task_version)


def _publish_locked(
    registry: Registry, agreed: Agreed, candidate: Candidate, signoffs: list[SignOff], task_version: str
) -> ReleaseResult:
    run_dir = Path(agreed.run_dir)
    measured, generated, audited, utility = (
        candidate.measured,
        candidate.generated,
        candidate.audited,
        candidate.utility,
    )
    agreement = load_agreement(agreed.agreement)
    schema = read_schema(agreed.schema_file)
    mset = read_measurements(measured.measurements)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    release_id = f"{agreement.spec_name}-{stamp}-{run_dir.name[:8]}"
    model_info = json.loads(generated.model_info.verified().read_text())
    utility_report = json.loads(utility.full_report.verified().read_text()) if utility.full_report else None
    audit_sections = {name: _section(ref) for name, ref in audited.evidence.items()}
    audit = AuditReport.model_validate_json(audited.report.verified().read_bytes())
    card = build_card(
        release_id=release_id,
        created=utcnow(),
        agreement=agreement,
        agreement_sha256=agreed.agreement_sha256,
        schema=schema,
        mset=mset,
        psi_sha256=measured.measurements.sha256,
        plan=PrivacyPlan.model_validate_json(measured.privacy_plan.verified().read_bytes()),
        model_info=model_info,
        synthetic={
            "rows": generated.rows,
            "seed": generated.seed,
            "chunk_rows": generated.chunk_rows,
            "file": "synthetic.parquet",
            "sha256": generated.synthetic.sha256,
        },
        synthetic_codes=read_synthetic(generated.synthetic, schema, agreement.attributes),
        utility_report=utility_report,
        audit_sections=audit_sections,
        audit=audit,
        signoffs=signoffs,
        records=[agreed.record, measured.record, generated.record, audited.record, utility.record],
        ledger=json.loads(measured.budget.verified().read_text()) if measured.budget else None,
        data_info={
            "fingerprint": agreed.data.fingerprint,
            "sha256": agreed.data.sha256,
            "dvc_md5": agreed.data.dvc_md5,
            "measurements_dvc_md5": md5_file(measured.measurements.verified()),
        },
        log_head=log_head(*registry.head(), registry.registry_id()),
        model_card=_model_card(agreed),
    )
    card_dir = run_dir / "card"
    rendered = render(card)
    for name, text in rendered.items():
        atomic_write_text(card_dir / name, text)
    evidence = build_evidence(  # the controller's: beside the run, never in the release
        card,
        sha256_bytes(rendered["card.json"].encode()),
        real_rows=agreed.data.rows,
        audit=audit,
        audit_sections=audit_sections,
        utility=UtilitySummary.model_validate_json(utility.report.verified().read_bytes()),
        utility_report=utility_report,
    )
    for name, text in render_evidence(evidence).items():
        atomic_write_text(run_dir / "evidence" / name, text)
    write_json(
        run_dir / "provenance.json",
        {"stages": card.provenance["stages"], "signoffs": [s.model_dump() for s in signoffs]},
    )
    files = {
        "synthetic.parquet": generated.synthetic.verified(),
        "card.html": card_dir / "card.html",
        "card.md": card_dir / "card.md",
        "card.json": card_dir / "card.json",
        "artifacts/agreement.json": agreed.agreement.verified(),
        "artifacts/measurements.json": measured.measurements.verified(),
        "artifacts/privacy_plan.json": measured.privacy_plan.verified(),
        **({"artifacts/budget.json": measured.budget.verified()} if measured.budget else {}),
        "artifacts/model_info.json": generated.model_info.verified(),
        # not the audit and utility artifacts: computed on the confidential data, they are the controller's
        # evidence (run dir), bound into the candidate hash the approver signs but never published
        "artifacts/provenance.json": run_dir / "provenance.json",
    }
    approver = next(s for s in signoffs if s.subject == "release")
    path, manifest_sha = registry.publish(
        release_id,
        files,
        {
            "agreement_sha256": agreed.agreement_sha256,
            "candidate_sha256": candidate.sha256,
            "created": card.created,
            "task_version": task_version,
        },
        actor=approver.name,
        role=approver.role,
        agreement_sha256=agreed.agreement_sha256,
        run_id=run_dir.name,
        decision="approve",
        comment=f"released after sign-off of candidate {candidate.sha256}",
    )
    return ReleaseResult(
        release_id=release_id,
        path=str(path),
        card_html=str(path / "card.html"),
        card_md=str(path / "card.md"),
        card_json=str(path / "card.json"),
        manifest_sha256=manifest_sha,
        agreement_sha256=agreed.agreement_sha256,
    )
