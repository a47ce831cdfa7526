"""Stage 5b — draft card (controller side): the generator card as it will be published, before anyone signs off.

Writes ``draft/card.{html,md,json}`` and the controller-only ``draft/evidence_report.html`` in the run directory
(:mod:`sdgov.reporting.draft`), and shows them on the flow run as Prefect artifacts, so the approver reads in the UI the
very document that publishing will release (plus the sign-off section). The summary table with the candidate
hash is added by :func:`summary_artifact` once the candidate (whose hash covers the draft) exists.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_link_artifact, create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from sdgov.base.settings import load_settings
from sdgov.budget.statement import rows
from sdgov.contracts import Agreed, ArtifactRef, Audited, Generated, Measured, UtilityReported
from sdgov.registry.access import share
from sdgov.reporting.approver_summaries import hash_lines
from sdgov.reporting.card import Card
from sdgov.reporting.draft import Drafted, write_draft
from sdgov.reporting.publish import ReleaseCandidate
from sdgov.tasks.common import logger, stage

VERSION = "1.1.0"  # 1.1: the release-candidate summary as Markdown, its figures the privacy statement's


@task(name="draft_card", version=VERSION, cache_policy=NO_CACHE)
def draft_card(
    agreed: Agreed, measured: Measured, generated: Generated, audited: Audited, utility: UtilityReported
) -> Drafted:
    """Write the draft card and the controller-only evidence report, show them on the run → ``Drafted``.

    The draft is the card as it will be published, less the sign-off section."""
    with stage("draft_card", VERSION, agreed.run_dir) as rec:
        written = write_draft(agreed, measured, generated, audited, utility)
        paths = written["paths"]
        for name in ("card.html", "card.md", "card.json"):  # what approvers read before they sign (not the evidence)
            share(Path(paths[name]))
        refs = {name: ArtifactRef.of(f"draft_{name.replace('.', '_')}", p) for name, p in paths.items() if p}
        rec.inputs = [
            agreed.agreement,
            measured.measurements,
            measured.privacy_plan,
            generated.synthetic,
            generated.model_info,
            audited.report,
            utility.report,
        ]
        rec.outputs = list(refs.values())
    drafted = Drafted(
        release_id=written["card"].release_id,
        created=written["card"].created,
        card_html=refs["card.html"],
        card_md=refs["card.md"],
        card_json=refs["card.json"],
        evidence_report=refs.get("evidence_report.html"),
        record=rec.record(),
    )
    _card_artifacts(drafted)
    return drafted


def _card_artifacts(drafted: Drafted) -> None:
    """The draft card (Markdown) and where the controller-only evidence report is, as artifacts on the run."""
    md = drafted.card_md.verified().read_bytes().decode()
    create_markdown_artifact(
        markdown=(
            "> **DRAFT generator card, awaiting sign-off.** On approval this document is published unchanged, "
            f"with the sign-off section appended. Files: `{drafted.card_html.path}` (HTML), "
            f"`{drafted.card_md.path}` (Markdown).\n\n" + md
        ),
        key="draft-card",
        description=f"Draft generator card of release {drafted.release_id} (what the approver signs off)",
    )
    if drafted.evidence_report is not None:
        create_markdown_artifact(
            markdown=(
                "## Evidence report (controller only — never published)\n\n"
                "Everything computed on the confidential data, for the data controller's decision, lies in the "
                f"registry as `{Path(drafted.evidence_report.path).name}` of this run (read it on the controller's "
                "machine: `sdgov approve` prints where). Not shown here: this server's every login can read its "
                "artifacts."
            ),
            key="evidence-report",
            description="Controller-only evidence report (not part of the release)",
        )
    base = load_settings().runs_url()
    if base:  # the registry's runs/ folder is served (e.g. behind the same proxy as the UI): link the HTML files
        for key, ref, text in (
            ("draft-card-html", drafted.card_html, "Draft generator card (HTML)"),
            ("evidence-report-html", drafted.evidence_report, "Evidence report (controller only, HTML)"),
        ):
            if ref is not None:
                run_dir = Path(ref.path).parent.parent
                link = f"{base}/{run_dir.name}/{Path(ref.path).relative_to(run_dir).as_posix()}"
                create_link_artifact(link=link, link_text=text, key=key, description=text)
    logger().info("draft card of release %s: %s", drafted.release_id, drafted.card_html.path)


def summary_artifact(candidate: ReleaseCandidate) -> None:
    """What the release approver signs, as a Markdown artifact on the flow run: Φ, the overall verdict, every ε and δ
    of the card's privacy statement and the full candidate hash — one paragraph per item and the hash in groups of
    16, so nothing is cut off on the right at any window width (a table artifact clips its wide cells)."""
    card = Card.model_validate_json(candidate.draft.card_json.verified().read_bytes())
    items = [
        ("Φ (agreed tables)", "; ".join(" × ".join(m.clique) for m in card.privacy.marginals)),
        ("Overall verdict", card.verdict.label),  # the card's (rows computed without the data)
        *rows(card.statement),
        ("Release candidate hash (type its first 8 characters to approve)", hash_lines(candidate.sha256)),
        ("Draft card", f"`{candidate.draft.card_html.path}`"),
    ]
    create_markdown_artifact(
        markdown="## Release candidate: what the approver signs\n\n"
        + "\n\n".join(f"**{label}:** {value}" for label, value in items),
        key="release-candidate",
        description="What the release approver signs",
    )
