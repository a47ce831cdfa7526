"""The draft generator card: rendered at the candidate stage, before anyone signs off.

The approver reads exactly this document (as Prefect artifacts on the flow run, and as files in the run
directory) before deciding; publishing (:mod:`sdgov.reporting.publish`) appends only the sign-off section to it
(:func:`sdgov.reporting.card.sign_draft`), so the published card.html and card.md are the draft byte for byte up to
:data:`sdgov.reporting.card.SIGNOFF_MARKER`. The draft's hashes are part of the candidate hash the approver signs.

The controller-only evidence report (:mod:`sdgov.reporting.evidence`: everything computed on the confidential data) is
written to the run's ``evidence/`` folder and never published with the release.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sdgov.agreement.spec import ReleaseSpec
from sdgov.artifacts import load_agreement, read_measurements, read_schema, read_spec, synthetic_records
from sdgov.audits.protocol import AuditReport
from sdgov.base.atomic import atomic_write_text
from sdgov.base.clock import utcnow
from sdgov.base.hashing import md5_file, sha256_bytes
from sdgov.base.model import Frozen
from sdgov.budget.accounting import PrivacyPlan
from sdgov.budget.statement import PrivacyStatement
from sdgov.contracts import Agreed, ArtifactRef, Audited, Generated, Measured, StageRecord, UtilityReported
from sdgov.governance.policy import rows_warning
from sdgov.measurement.selection.review import load_selection_records
from sdgov.registry import commitment
from sdgov.registry import key as registry_key
from sdgov.registry.log import Registry
from sdgov.reporting.card import Card, CardInputs, DataHashes, SyntheticFile, build_card, render
from sdgov.reporting.evidence import build_evidence, render_evidence
from sdgov.reporting.selection import CardSelection, card_selection
from sdgov.utility.summary import UtilitySummary

DRAFT_DIR = "draft"
"""The run directory's folder for the draft card."""
EVIDENCE_DIR = "evidence"
"""The run directory's folder for the controller's evidence report (never published)."""


class Drafted(Frozen):
    """The draft card (what will be published, less the sign-offs) and the controller-only evidence report."""

    release_id: str  # fixed at drafting: the card names it, so the published card cannot name another
    created: str
    card_html: ArtifactRef
    card_md: ArtifactRef
    card_json: ArtifactRef
    evidence_report: ArtifactRef | None = None  # controller-only, never published
    record: StageRecord


def audit_sections(audited: Audited) -> dict[str, dict[str, Any]]:
    """Each audit's own section (decomposability, privacy evidence), hash-checked: the card and the pause form
    take the one overall verdict (:mod:`sdgov.reporting.verdict`) from these and the audit rows."""
    return {name: json.loads(ref.verified().read_text())["section"] for name, ref in audited.evidence.items()}


def build_draft_card(
    agreed: Agreed, measured: Measured, generated: Generated, audited: Audited, utility: UtilityReported
) -> Card:
    """The public card built from the stage artifacts, with no sign-offs yet (they are appended at publishing)."""
    with card_inputs(agreed, measured, generated, audited, utility) as inputs:
        return build_card(inputs)


@contextmanager
def card_inputs(
    agreed: Agreed, measured: Measured, generated: Generated, audited: Audited, utility: UtilityReported
) -> Iterator[CardInputs]:
    """The card's inputs from the stage contracts, each artifact read back and hash-checked (the release id and the
    time fixed now), with the synthetic data open while they are used."""
    run_dir = Path(agreed.run_dir)
    agreement = load_agreement(agreed.agreement)
    schema = read_schema(agreed.schema_file)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    spec = read_spec(agreed.spec)
    plan = PrivacyPlan.model_validate_json(measured.privacy_plan.verified().read_bytes())
    codes = audited.synthetic_codes  # validated and encoded once, by the audit stage
    with synthetic_records(generated.synthetic, schema, agreement.attributes, codes=codes) as synthetic_codes:
        yield CardInputs(
            release_id=f"{agreement.spec_name}-{stamp}-{run_dir.name[:8]}",
            created=utcnow(),
            agreement=agreement,
            agreement_sha256=agreed.agreement_sha256,
            schema=schema,
            mset=read_measurements(measured.measurements),
            psi_sha256=measured.measurements.sha256,
            plan=plan,
            model_info=json.loads(generated.model_info.verified().read_text()),
            synthetic=SyntheticFile(
                rows=generated.rows,
                seed=generated.seed,
                chunk_rows=generated.chunk_rows,
                file="synthetic.parquet",
                sha256=generated.synthetic.sha256,
            ),
            synthetic_codes=synthetic_codes,
            utility_report=(json.loads(utility.full_report.verified().read_text()) if utility.full_report else None),
            audit_sections=audit_sections(audited),
            audit=AuditReport.model_validate_json(audited.report.verified().read_bytes()),
            records=[agreed.record, measured.record, generated.record, audited.record, utility.record],
            statement=PrivacyStatement.model_validate_json(measured.statement.verified().read_bytes()),
            data=DataHashes(
                fingerprint=agreed.data.fingerprint,
                sha256=agreed.data.sha256,
                dvc_md5=agreed.data.dvc_md5,
                measurements_dvc_md5=md5_file(measured.measurements.verified()),
            ),
            commit=run_committer(run_dir),
            run_dir=run_dir,
            registry_key_fingerprint=registry_key.registry_fingerprint(
                Registry(run_dir.parents[1]).config()["public_key"], str(run_dir.parents[1])
            ),
            model_card=spec.model_card,
            selections=_selections(spec, Path(agreed.spec.path), plan),
        )


def run_committer(run_dir: Path) -> commitment.Committer:
    """The keyed commitment of the registry a run belongs to (its run folder is ``<registry>/runs/<run id>``), under
    the secret the measure stage made or checked (never a new one here)."""
    return commitment.registry_committer(Registry(run_dir.parents[1]), create=False)


def _selections(spec: ReleaseSpec, spec_path: Path, plan: PrivacyPlan) -> list[CardSelection]:
    """The card's selection sections from the reviewed selection the spec names — one model's, or each split part's
    (checked before the draw by :func:`sdgov.intake.preflight.check_selection_review`)."""
    if spec.selection_review is None:
        return []
    path = spec_path.parent / spec.selection_review
    raw = path.read_bytes()
    return [card_selection(r, raw, plan) for r in load_selection_records(path)]


def write_evidence_report(
    card: Card, card_json: str, agreed: Agreed, audited: Audited, utility: UtilityReported
) -> Path:
    """The controller's evidence report (``evidence/evidence.{html,json}`` in the run directory) for this draft."""
    warning = rows_warning(load_agreement(agreed.agreement), agreed.data.rows)
    evidence = build_evidence(
        card,
        sha256_bytes(card_json.encode()),
        real_rows=agreed.data.rows,
        warnings=[warning] if warning else [],
        audit=AuditReport.model_validate_json(audited.report.verified().read_bytes()),
        audit_sections=audit_sections(audited),
        utility=UtilitySummary.model_validate_json(utility.report.verified().read_bytes()),
        utility_report=(json.loads(utility.full_report.verified().read_text()) if utility.full_report else None),
    )
    out = Path(agreed.run_dir) / EVIDENCE_DIR
    for name, text in render_evidence(evidence).items():
        atomic_write_text(out / name, text)
    return out / "evidence.html"


def write_draft(
    agreed: Agreed, measured: Measured, generated: Generated, audited: Audited, utility: UtilityReported
) -> dict[str, Any]:
    """Write ``draft/card.{html,md,json}`` and the controller's ``evidence/evidence.{html,json}`` in the run
    directory; the evidence report is listed as ``evidence_report.html``."""
    card = build_draft_card(agreed, measured, generated, audited, utility)
    out = Path(agreed.run_dir) / DRAFT_DIR
    paths: dict[str, Path | None] = {}
    rendered = render(card, draft=True)
    for name, text in rendered.items():
        atomic_write_text(out / name, text)
        paths[name] = out / name
    paths["evidence_report.html"] = write_evidence_report(card, rendered["card.json"], agreed, audited, utility)
    return {"card": card, "paths": paths}


def read_draft(drafted: Drafted) -> tuple[Card, dict[str, str]]:
    """The draft card (JSON model) and its card.html / card.md texts, each checked against its recorded hash."""
    card = Card.model_validate_json(drafted.card_json.verified().read_bytes())
    texts = {
        "card.html": drafted.card_html.verified().read_bytes().decode(),  # bytes as written: no newline translation
        "card.md": drafted.card_md.verified().read_bytes().decode(),
    }
    return card, texts
