"""The data controller's evidence report: everything about a release that was computed on the confidential data.

The public card (:mod:`sdgov.reporting.card`) states only what is public or differentially private. The figures behind
its
verdicts — the real record count, each table's distance to the real table, the utility report's fitness figures and
radar, every audit row's detail and the audits' own sections (real-unique records reproduced, privacy gains,
the decomposability test's cells) — are not covered by the DP guarantee, so they go here: written into the run
directory for the controller and the approver, never into the published release.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from sdgov.audits.protocol import AuditReport
from sdgov.base.model import Strict
from sdgov.base.svg import pyplot, to_svg
from sdgov.reporting.card import Card, _env, check_result
from sdgov.reporting.verdict import Verdict, part_verdicts
from sdgov.utility.summary import UtilitySummary


class EvidenceReport(Strict):
    report_version: str = "1"
    title: str
    release_id: str
    created: str
    agreement_sha256: str
    card_sha256: str  # the public card (card.json) this report backs
    real_rows: int
    warnings: list[str] = []  # for the controller only, e.g. a spec asking for exactly N synthetic rows
    verdict: Verdict
    # a split synthesis: each part's verdict from its own audit rows and sections (the release fails if any part does)
    part_verdicts: dict[str, Verdict] = Field(default_factory=dict, exclude_if=lambda v: not v)
    audit: AuditReport  # every row with its detail
    audit_sections: dict[str, dict[str, Any]]  # every audit section as the audit wrote it
    utility: UtilitySummary  # TVD and RMSE of every Φ, 1-way and 2-way table against the real data
    utility_report: dict[str, Any] | None  # the fitness statement with its figures, the verdicts, the radar
    note: str


def build_evidence(
    card: Card,
    card_sha256: str,
    *,
    real_rows: int,
    audit: AuditReport,
    audit_sections: dict[str, dict[str, Any]],
    utility: UtilitySummary,
    utility_report: dict[str, Any] | None,
    warnings: list[str] | None = None,
) -> EvidenceReport:
    """The controller-only report backing ``card`` (bound by ``card_sha256``): figures from the confidential data, never
    published; of ``utility_report`` only the tasks hash, fitness, verdicts and radar are kept."""
    return EvidenceReport(
        title=f"Evidence report — {card.title.removeprefix('Generator card — ')}",
        release_id=card.release_id,
        created=card.created,
        agreement_sha256=card.agreement_sha256,
        card_sha256=card_sha256,
        real_rows=real_rows,
        warnings=warnings or [],
        verdict=card.verdict,
        part_verdicts=part_verdicts(audit, audit_sections),
        audit=audit,
        audit_sections=audit_sections,
        utility=utility,
        utility_report=(
            None
            if utility_report is None
            else {k: utility_report.get(k) for k in ("tasks_sha256", "fitness", "verdicts", "radar")}
        ),
        note=(
            "CONFIDENTIAL — for the data controller and the release approver. Every figure here was computed on the "
            "confidential data and is not covered by the differential-privacy guarantee: do not publish it. The "
            "public generator card states the verdicts drawn from it."
        ),
    )


def real_tvd_plot_svg(utility: UtilitySummary) -> str:
    """Bar chart of TVD to the real data for every Φ marginal and every 2-way pair; axis from 0, legend below."""
    plt = pyplot()
    rows = [(" × ".join(m.clique), m.tvd, "Φ marginal") for m in utility.phi]
    phi_set = {tuple(m.clique) for m in utility.phi}
    rows += [
        (" × ".join(m.clique), m.tvd, "2-way in Φ" if m.in_phi else "2-way not in Φ")
        for m in utility.two_way
        if tuple(m.clique) not in phi_set
    ]
    colours = {"Φ marginal": "#1b7837", "2-way in Φ": "#7fbf7b", "2-way not in Φ": "#c51b7d"}
    height = 0.28 * len(rows) + 1.6
    fig, ax = plt.subplots(figsize=(7.5, height))
    ax.barh(range(len(rows)), [r[1] for r in rows], color=[colours[r[2]] for r in rows])
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max([r[1] for r in rows] + [0.01]) * 1.15)
    ax.set_xlabel("total variation distance, real vs synthetic (0 = identical)")
    for label, colour in colours.items():
        ax.barh([0], [0], color=colour, label=label)
    fig.legend(loc="lower center", ncol=3, fontsize=8, frameon=False)  # below the axis, never on the bars
    fig.tight_layout(rect=(0, 0.35 / height, 1, 1))
    return to_svg(fig)


def render_evidence(report: EvidenceReport) -> dict[str, str]:
    """``{'evidence.html': ..., 'evidence.json': ...}``."""
    env = _env()
    env.filters["result"] = lambda c: check_result(c.passed, c.severity)
    ctx: dict[str, Any] = {"e": report, "plot_svg": real_tvd_plot_svg(report.utility)}
    if report.utility_report:
        from sdgov.utility.plots import radar

        ctx["radar_svg"] = radar(report.utility_report["radar"])
    return {
        "evidence.html": env.get_template("evidence.html.j2").render(**ctx),
        "evidence.json": report.model_dump_json(indent=2) + "\n",
    }
