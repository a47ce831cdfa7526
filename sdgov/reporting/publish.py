"""Publishing a release: the sign-off gate, the generator card built from the artifacts, the immutable copy.

Runs only after a passing audit and a release sign-off bound to :attr:`Candidate.sha256` (the hash of exactly
what is being released, the draft card included). The card is not rebuilt here: the published card.html and
card.md are the draft the approver read (:mod:`sdgov.reporting.draft`), byte for byte, plus the sign-off section.
"""

from __future__ import annotations

from pathlib import Path

from sdgov.base.atomic import atomic_write_text
from sdgov.base.errors import SdgovError
from sdgov.base.hashing import sha256_json, write_json
from sdgov.base.model import Frozen
from sdgov.budget.statement import key_facts
from sdgov.contracts import Agreed, Audited, Generated, Measured, ReleaseResult, UtilityReported
from sdgov.governance.signoff import SignOff
from sdgov.registry.log import Registry, log_head
from sdgov.reporting.card import public_stages, sign_draft
from sdgov.reporting.draft import Drafted, read_draft, run_committer


class ReleaseCandidate(Frozen):
    """A release candidate: the noisy marginals and what was made and learnt from them, awaiting sign-off."""

    measured: Measured
    generated: Generated
    audited: Audited
    utility: UtilityReported
    draft: Drafted  # the card as it will be published, less the sign-offs; and the controller's evidence report

    @property
    def sha256(self) -> str:
        """What a release approver signs: the noisy statistics, the synthetic data, the evidence about them and the
        draft card. The files computed on the confidential data (audit, utility, evidence) enter by their keyed
        commitments, as the card names them: anyone can recompute this hash from the published card, and it is no
        function of the confidential data."""
        utility, draft = self.utility, self.draft
        commit = run_committer(Path(draft.card_html.path).parents[1])  # the run folder: <run>/draft/card.html

        def private(sha256: str) -> str:
            return commit("sha256", sha256)

        return sha256_json(
            {
                "measurements": self.measured.measurements.sha256,
                "synthetic": self.generated.synthetic.sha256,
                "model_info": self.generated.model_info.sha256,
                "audit": private(self.audited.report.sha256),
                "utility": private(utility.report.sha256),
                **({"utility_report": private(utility.full_report.sha256)} if utility.full_report else {}),
                **{k: private(ref.sha256) for k, ref in self.audited.evidence.items()},
                # the draft card the approver reads: what is published is these bytes plus the sign-offs
                "draft_card_html": draft.card_html.sha256,
                "draft_card_md": draft.card_md.sha256,
                "draft_card_json": draft.card_json.sha256,
                **({"evidence_report": private(draft.evidence_report.sha256)} if draft.evidence_report else {}),
            }
        )


def log_blocked(registry: Registry, agreed: Agreed, audited: Audited, comment: str) -> None:
    """A failed audit blocks the release: say so in the hash-chained log."""
    _log_end(registry, agreed, "release_blocked", comment, {"audit": audited.report.sha256})


def log_failed(registry: Registry, agreed: Agreed, exc: BaseException) -> None:
    """A run that broke after its agreement: say so in the hash-chained log (nothing was released), so the trail
    never shows a drawn measurement as the last word of a run that ended in an error."""
    if getattr(exc, "logged", False):
        return  # an ending the log already records (a refused budget, a blocked release)
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    _log_end(registry, agreed, "run_failed", f"{type(exc).__name__}: {first}" if first else type(exc).__name__)


def _log_end(
    registry: Registry, agreed: Agreed, event: str, comment: str, artifacts: dict[str, str] | None = None
) -> None:
    """How a run that released nothing ends, in the log, by sdgov, under its agreement and run id."""
    registry.append(
        event,
        "sdgov",
        "system",
        agreement_sha256=agreed.agreement_sha256,
        run_id=Path(agreed.run_dir).name,
        artifacts=artifacts or {},
        comment=comment,
    )


def check_releasable(registry: Registry, agreed: Agreed, candidate: ReleaseCandidate, signoffs: list[SignOff]) -> None:
    """Refuse unless the audit passed (a failed one is logged as blocking) and a release sign-off names the
    candidate's hash."""
    run_dir, audited = Path(agreed.run_dir), candidate.audited
    if audited.verdict != "pass":
        log_blocked(registry, agreed, audited, "audit failed")
        blocked = SdgovError("the audit failed, so nothing was released", audited.report.path, "read the audit report")
        blocked.logged = True  # release_blocked, above
        raise blocked
    sha = candidate.sha256
    if not any(s.subject == "release" and s.decision == "approve" and s.subject_sha256 == sha for s in signoffs):
        raise SdgovError("no release sign-off for this candidate", run_dir.name, "a data controller must approve it")


def publish_release(
    registry: Registry, agreed: Agreed, candidate: ReleaseCandidate, signoffs: list[SignOff], task_version: str
) -> ReleaseResult:
    """Build the card from the artifacts, write the provenance, and publish the immutable release.

    All under the registry lock, so that the log head the card names is exactly the ``prev`` of this release's
    ``released`` event (nothing else can be appended in between)."""
    with registry.lock():
        return _publish_locked(registry, agreed, candidate, signoffs, task_version)


def _publish_locked(
    registry: Registry, agreed: Agreed, candidate: ReleaseCandidate, signoffs: list[SignOff], task_version: str
) -> ReleaseResult:
    run_dir = Path(agreed.run_dir)
    measured, generated, drafted = candidate.measured, candidate.generated, candidate.draft
    draft, texts = read_draft(drafted)  # the very files the approver read, hash-checked
    release_id = drafted.release_id
    card = draft.model_copy(
        update={
            "signoffs": signoffs,
            "provenance": {
                **draft.provenance,
                "stages": [
                    *draft.provenance["stages"],
                    *public_stages([drafted.record], run_dir, run_committer(run_dir)),
                ],
                "log_head": log_head(*registry.head(), registry.registry_id()),
            },
        }
    )
    card_dir = run_dir / "card"
    for name, text in sign_draft(texts, card).items():
        atomic_write_text(card_dir / name, text)
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
        "artifacts/privacy_statement.json": measured.statement.verified(),
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
        # the trail's privacy line: the card's statement, in the words every surface uses
        comment=f"released after sign-off of candidate {candidate.sha256}; privacy: {key_facts(card.statement)}",
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
