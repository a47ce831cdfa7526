"""The draft card (issue 14): rendered before sign-off; the published card is that draft byte for byte plus the
sign-off section; the draft's hashes are in the candidate hash the approver signs; artifacts on the flow run."""

from __future__ import annotations

import json
from pathlib import Path

from sdgov.base.hashing import sha256_file
from sdgov.registry.log import Registry
from sdgov.reporting.card import SIGNOFF_MARKER, Card, render

MARKER = SIGNOFF_MARKER.encode()


def _draft_outputs(card: dict) -> dict[str, dict]:
    stage = next(s for s in card["provenance"]["stages"] if s["stage"] == "draft_card")
    return {o["name"]: o for o in stage["outputs"]}


def _run_dir(released: dict) -> Path:
    [run_dir] = (released["root"] / "runs").iterdir()
    return run_dir


def test_published_card_is_the_draft_plus_the_signoff_section(released):
    result = released["result"]
    card = json.loads(Path(result.card_json).read_text())
    drafts = _draft_outputs(card)
    run_dir = _run_dir(released)
    full = render(Card.model_validate(card))  # the signed card with its figures drawn: sign_draft leaves them out
    for name in ("card.html", "card.md"):
        ref = drafts["draft_" + name.replace(".", "_")]
        assert ref["file"] == f"draft/{name}"  # named inside the run, never by a machine path
        draft = (run_dir / ref["file"]).read_bytes()
        assert sha256_file(run_dir / ref["file"]) == ref["sha256"]  # the file the approver read, unchanged since
        published = (Path(result.path) / name).read_bytes()
        assert draft.count(MARKER) == 1 and published.count(MARKER) == 1, name
        common, pending = draft.split(MARKER)
        assert published.split(MARKER)[0] == common, name  # byte comparison of everything before the sign-offs
        assert len(common) > 0.9 * len(published) - 20_000, name  # the common part is (nearly) the whole card
        signoff = published.split(MARKER)[1].decode()
        assert signoff == full[name].split(SIGNOFF_MARKER)[1], name  # the same section as a render with figures
        assert "DRAFT" in pending.decode() and "DRAFT" not in signoff, name
        assert "Sign-offs" in signoff and card["signoffs"][-1]["subject_sha256"] in signoff, name
        assert card["provenance"]["log_head"]["hash"] in signoff, name
        assert "awaiting sign-off" not in common.decode() and "Sign-offs" not in common.decode(), name
    assert card["release_id"] == result.release_id
    assert json.loads((run_dir / drafts["draft_card_json"]["file"]).read_text())["signoffs"] == []


def test_the_candidate_hash_covers_the_draft_and_the_evidence_report_is_not_published(released):
    result = released["result"]
    card = json.loads(Path(result.card_json).read_text())
    drafts = _draft_outputs(card)
    assert "draft_evidence_report_html" in drafts  # controller-only document, beside the draft
    released_files = {p.name for p in Path(result.path).rglob("*")}
    assert "evidence_report.html" not in released_files
    manifest_candidate = next(
        e.artifacts["candidate"] for e in Registry(released["root"]).events() if e.event == "release_approved"
    )
    assert card["signoffs"][-1]["subject_sha256"] == manifest_candidate
    # the candidate hash changes with the draft: recompute it from its parts with one draft hash altered
    from sdgov.base.hashing import sha256_json

    stages = {s["stage"]: s for s in card["provenance"]["stages"]}
    # as the card names them: public files by sha256, the controller's by their keyed commitment (issue 25: the
    # candidate hash anyone recomputes from the card is no function of the confidential data)
    outs = {o["name"]: o.get("sha256") or o["hmac_sha256"] for st in stages.values() for o in st["outputs"]}
    assert any("hmac_sha256" in o for st in stages.values() for o in st["outputs"] if o["name"] == "audit")
    parts = {
        "measurements": outs["measurements"],
        "synthetic": card["synthetic"]["sha256"],
        "model_info": outs["model_info"],
        "audit": outs["audit"],
        "utility": outs["utility"],
        "utility_report": outs["utility_report"],
        **{k: outs[k] for k in card["audit_sections"]},
        "draft_card_html": drafts["draft_card_html"]["sha256"],
        "draft_card_md": drafts["draft_card_md"]["sha256"],
        "draft_card_json": drafts["draft_card_json"]["sha256"],
        "evidence_report": outs["draft_evidence_report_html"],
    }
    assert sha256_json(parts) == manifest_candidate
    assert sha256_json({**parts, "draft_card_html": "0" * 64}) != manifest_candidate


def test_the_draft_card_and_the_sampling_progress_are_shown_on_the_flow_run_as_artifacts(released):
    from uuid import UUID

    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    card = json.loads(Path(released["result"].card_json).read_text())
    draft_html = _run_dir(released) / _draft_outputs(card)["draft_card_html"]["file"]
    flow_run_id = UUID(draft_html.parent.parent.name)  # the run directory is named for the flow run
    with get_client(sync_client=True) as c:
        arts = c.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    by_key = {a.key: a for a in arts}
    assert by_key["draft-card"].type == "markdown" and card["title"] in by_key["draft-card"].data
    assert draft_html.with_name("card.md").read_text() in by_key["draft-card"].data  # the whole draft
    assert by_key["evidence-report"].type == "markdown"  # where it is, not its hash: it was computed on the data
    evidence = by_key["evidence-report"].data
    assert "sha256" not in evidence and "in the registry" in evidence
    summary = by_key["release-candidate"]
    assert summary.type == "markdown"  # paragraphs, not a table whose wide cells the UI clips
    from sdgov.budget.statement import PrivacyStatement, rows
    from sdgov.reporting.approver_summaries import hash_lines

    assert hash_lines(card["signoffs"][-1]["subject_sha256"]) in summary.data  # the full hash, in groups
    s = PrivacyStatement.model_validate(card["statement"])  # the card's figures, this release's and the dataset's
    assert all(f"**{label}:** {value}" in summary.data for label, value in rows(s)), summary.data
    assert f"**ε of this release (zCDP bound):** {s.release.zcdp:.4g}" in summary.data
    assert f"(privacy-loss-distribution accounting, an upper bound):** {s.release.pld:.4g}" in summary.data
    assert f"**ε of the dataset over every release (zCDP bound):** {s.cumulative.zcdp:.4g}" in summary.data
    assert {"draft-card-html", "evidence-report-html"}.isdisjoint(by_key)  # no served runs folder: no links
    progress = by_key["synthetic-sampling"]  # the generate stage's progress bar, full once the sample is written
    assert progress.type == "progress" and float(progress.data) == 100.0


def test_link_artifacts_to_the_html_files_when_the_runs_folder_is_served(tmp_path, monkeypatch):
    from uuid import UUID

    from prefect import flow, get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from sdgov.contracts import ArtifactRef, StageRecord
    from sdgov.reporting.draft import Drafted
    from sdgov.tasks.draft_card import _card_artifacts

    draft = tmp_path / "runs" / "0a1b2c" / "draft"
    draft.mkdir(parents=True)
    for name in ("card.html", "card.md", "card.json", "evidence_report.html"):
        (draft / name).write_text(f"# {name}\n")
    ref = {name: ArtifactRef.of(name, draft / name) for name in ("card.html", "card.md", "card.json")}
    drafted = Drafted(
        release_id="demo-x",
        created="2026-01-01T00:00:00Z",
        card_html=ref["card.html"],
        card_md=ref["card.md"],
        card_json=ref["card.json"],
        evidence_report=ArtifactRef.of("evidence", draft / "evidence_report.html"),
        record=StageRecord(stage="draft_card", task_version="1", started="", finished="", seconds=0, inputs=[],
                           outputs=[]),
    )  # fmt: skip

    @flow
    def show(served: bool) -> str:
        from prefect.runtime import flow_run

        with monkeypatch.context() as m:
            if served:
                m.setenv("SDGOV_RUNS_URL", "https://sdgov.example/runs/")
            else:
                m.delenv("SDGOV_RUNS_URL", raising=False)
            _card_artifacts(drafted)
        return str(flow_run.id)

    def links(run_id: str) -> dict[str, str]:
        with get_client(sync_client=True) as c:
            arts = c.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(run_id)]))
            )
        return {a.key: str(a.data) for a in arts if a.key.endswith("-html")}  # Prefect stores a link as Markdown

    assert links(show(served=False)) == {}  # nothing served: no link that would lead nowhere
    served = links(show(served=True))
    assert (
        served["draft-card-html"] == "[Draft generator card (HTML)](https://sdgov.example/runs/0a1b2c/draft/card.html)"
    )
    assert "(https://sdgov.example/runs/0a1b2c/draft/evidence_report.html)" in served["evidence-report-html"]
