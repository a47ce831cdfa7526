"""The draft generator card: rendered at the candidate stage, before anyone signs off.

The approver reads exactly this document (as Prefect artifacts on the flow run, and as files in the run
directory) before deciding; publishing (:mod:`sdgov.publishing`) appends only the sign-off section to it
(:func:`sdgov.card.sign_draft`), so the published card.html and card.md are the draft byte for byte up to
:data:`sdgov.card.SIGNOFF_MARKER`. The draft's hashes are part of the candidate hash the approver signs.

The controller-only evidence report (everything computed on the confidential data) is written beside the draft
and never published with the release.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sdgov.artifacts import load_agreement, read_measurements, read_schema
from sdgov.atomic import atomic_write_text
from sdgov.audits.protocol import AuditReport
from sdgov.card import Card, build_card, render
from sdgov.contracts import Agreed, ArtifactRef, Audited, Generated, Measured, StageRecord, UtilityReported, utcnow
from sdgov.hashing import md5_file
from sdgov.metrics import UtilitySummary
from sdgov.model import Frozen
from sdgov.privacy import PrivacyPlan

DRAFT_DIR = "draft"
"""The run directory's folder for the draft card and the evidence report."""


class Drafted(Frozen):
    """The draft card (what will be published, less the sign-offs) and the controller-only evidence report."""

    release_id: str  # fixed at drafting: the card names it, so the published card cannot name another
    created: str
    card_html: ArtifactRef
    card_md: ArtifactRef
    card_json: ArtifactRef
    evidence_report: ArtifactRef | None = None  # controller-only, never published
    record: StageRecord


def _section(ref: ArtifactRef) -> dict:
    return json.loads(ref.verified().read_text())["section"]


def draft_card(
    agreed: Agreed, measured: Measured, generated: Generated, audited: Audited, utility: UtilityReported
) -> Card:
    """The card built from the stage artifacts, with no sign-offs yet (they are appended at publishing)."""
    run_dir = Path(agreed.run_dir)
    agreement = load_agreement(agreed.agreement)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return build_card(
        release_id=f"{agreement.spec_name}-{stamp}-{run_dir.name[:8]}",
        created=utcnow(),
        agreement=agreement,
        agreement_sha256=agreed.agreement_sha256,
        schema=read_schema(agreed.schema_file),
        mset=read_measurements(measured.measurements),
        psi_sha256=measured.measurements.sha256,
        plan=PrivacyPlan.model_validate_json(measured.privacy_plan.verified().read_bytes()),
        model_info=json.loads(generated.model_info.verified().read_text()),
        synthetic={
            "rows": generated.rows,
            "seed": generated.seed,
            "chunk_rows": generated.chunk_rows,
            "file": "synthetic.parquet",
            "sha256": generated.synthetic.sha256,
        },
        utility=UtilitySummary.model_validate_json(utility.report.verified().read_bytes()),
        utility_report=(json.loads(utility.full_report.verified().read_text()) if utility.full_report else None),
        audit_sections={name: _section(ref) for name, ref in audited.evidence.items()},
        audit=AuditReport.model_validate_json(audited.report.verified().read_bytes()),
        signoffs=[],
        records=[agreed.record, measured.record, generated.record, audited.record, utility.record],
        ledger=json.loads(measured.budget.verified().read_text()) if measured.budget else None,
        data_info={
            "fingerprint": agreed.data.fingerprint,
            "sha256": agreed.data.sha256,
            "dvc_md5": agreed.data.dvc_md5,
            "rows": agreed.data.rows,
            "measurements_dvc_md5": md5_file(measured.measurements.verified()),
        },
    )


def write_evidence_report(utility: UtilityReported, out: Path) -> Path | None:
    """The controller-only evidence report.

    HOOK: until the evidence-report module (issue 14, item 2) lands, the controller's document is the full
    utility report (every measure computed on the confidential data); replace the body with its renderer."""
    if utility.full_report_html is None:
        return None
    shutil.copyfile(utility.full_report_html.verified(), out)
    return out


def write_draft(
    agreed: Agreed, measured: Measured, generated: Generated, audited: Audited, utility: UtilityReported
) -> dict[str, Any]:
    """Write ``draft/card.{html,md,json}`` and ``draft/evidence_report.html`` in the run directory."""
    card = draft_card(agreed, measured, generated, audited, utility)
    out = Path(agreed.run_dir) / DRAFT_DIR
    paths: dict[str, Path | None] = {}
    for name, text in render(card, draft=True).items():
        atomic_write_text(out / name, text)
        paths[name] = out / name
    paths["evidence_report.html"] = write_evidence_report(utility, out / "evidence_report.html")
    return {"card": card, "paths": paths}


def read_draft(drafted: Drafted) -> tuple[Card, dict[str, str]]:
    """The draft card (JSON model) and its card.html / card.md texts, each checked against its recorded hash."""
    card = Card.model_validate_json(drafted.card_json.verified().read_bytes())
    texts = {
        "card.html": drafted.card_html.verified().read_bytes().decode(),  # bytes as written: no newline translation
        "card.md": drafted.card_md.verified().read_bytes().decode(),
    }
    return card, texts
