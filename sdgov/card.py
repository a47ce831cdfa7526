"""The generator card ⟨ψ, Φ, G⟩: built from the artifacts, never typed by hand.

:func:`build_card` reads the stage artifacts and produces a :class:`Card` (the JSON form); :func:`render`
turns it into self-contained HTML and Markdown with the Jinja templates in ``cards/``.
"""

from __future__ import annotations

import itertools
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from jinja2 import Environment
from pydantic import BaseModel

from sdgov import __version__
from sdgov.audits.protocol import AuditReport
from sdgov.cards import environment as template_environment
from sdgov.contracts import SignOff, StageRecord
from sdgov.measure import MeasurementSet
from sdgov.metrics import UtilitySummary
from sdgov.model import Strict
from sdgov.privacy import PrivacyPlan
from sdgov.schema import Column, Schema
from sdgov.spec import Agreement, Clique
from sdgov.svg import pyplot, to_svg
from sdgov.synthesis_graph import SynthesisGraph, graph_svg, synthesis_graph

PACKAGES = ["sdgov", "mbi", "opendp", "prefect", "dvc", "jax", "numpy", "pandas", "pyarrow", "pydantic", "scipy"]
REPO = Path(__file__).resolve().parents[1]


class PhiEntry(BaseModel):
    attributes: list[str]
    plain: str
    cells: int
    sigma: float
    rho: float | None
    tvd: float | None


class Card(Strict):
    card_version: str = "1"
    title: str
    release_id: str
    created: str
    agreement_sha256: str
    psi_sha256: str
    description: str
    dataset: dict[str, Any]
    attributes: list[dict[str, Any]]
    phi: list[PhiEntry]
    not_preserved: list[str]
    privacy: PrivacyPlan
    privacy_statement: str
    generator: dict[str, Any]
    synthetic: dict[str, Any]
    utility: UtilitySummary
    utility_note: str
    utility_report: dict[str, Any] | None = None  # fitness statement, radar data and link to the full report
    audit_sections: dict[str, dict[str, Any]] = {}  # audit check name → its section (cards/audits/<name>.*.j2)
    audit: AuditReport
    signoffs: list[SignOff]
    provenance: dict[str, Any]
    ledger: dict[str, Any] | None = None  # the dataset's lifetime ledger and where each statistic came from
    synthesis_graphs: list[SynthesisGraph] = []  # each model's tables and sampling order (sdgov.synthesis_graph)


def ledger_statement(ledger: dict[str, Any] | None) -> str:
    """The lifetime ledger in words: what this release spent, what was reused, and from which releases."""
    if ledger is None:
        return ""
    reused = [s for s in ledger["statistics"] if s["how"] == "reused"]
    s = (
        f"Dataset {ledger['dataset']!r} (content fingerprint {ledger['fingerprint'][:12]}…) had spent "
        f"ρ = {ledger['spent_before_rho']:.6g} of its lifetime ρ = {ledger['lifetime_rho']:.6g} before this release; "
        f"this release spent ρ = {ledger['this_release_rho']:.6g}, leaving {ledger['remaining_rho']:.6g}."
    )
    if ledger["reused"]:
        s += " The guarantee above covers all of this release's tables; those reused from earlier draws were paid then."
    if reused:
        s += (
            f" {len(reused)} of its {len(ledger['statistics'])} tables were measured before at the same σ and are "
            "reused as they were drawn (post-processing: no new noise, no new spend): "
            + "; ".join(
                " × ".join(r["attributes"])
                + f" (drawn {r['measured_at']} in run {(r['measured_in_run'] or '')[:8]}"
                + (f", released in {', '.join(r['earlier_releases'])}" if r["earlier_releases"] else "")
                + ")"
                for r in reused
            )
            + "."
        )
    rescaled = [s for s in ledger["statistics"] if s.get("other_sigmas")]
    if rescaled:
        s += (
            " Measured before on this dataset at another noise scale, so two measurements that both count in the "
            "lifetime ρ: "
            + "; ".join(
                " × ".join(r["attributes"])
                + f" (σ = {r['sigma']:.4g} now; before: "
                + ", ".join(f"σ = {o['sigma']:.4g} on {o['measured_at']}" for o in r["other_sigmas"])
                + ")"
                for r in rescaled
            )
            + "."
        )
    if ledger["earlier_releases_sharing"]:
        s += (
            " Earlier releases sharing measurements with this one: "
            + ", ".join(ledger["earlier_releases_sharing"])
            + "."
        )
    return s


def environment() -> dict[str, Any]:
    pkgs = {}
    for p in PACKAGES:
        try:
            pkgs[p] = version(p)
        except PackageNotFoundError:
            pkgs[p] = "not installed"
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": pkgs,
        "sdgov": __version__,
        "git_commit": git_commit(),
    }


def git_commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown (git unavailable)"
    if sha.returncode != 0:
        return "unknown (not a git checkout)"
    return sha.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


RELEASED_AS = {
    "label": "the bin's label (text)",
    "midpoint": "numbers: the middle of each bin (an open-ended top bin: its lower edge)",
    "uniform": "numbers drawn uniformly within each bin with the public seed (an open-ended top bin: its lower edge)",
}
"""How the card states a numeric column's release rule (``release_as`` in the schema)."""


def _categories(col: Column) -> list[str]:
    if col.kind == "numeric":
        return col.labels()
    return [f"{code} = {label}" for code, label in zip(col.codes(), col.labels())]


def _plain(clique: Clique, schema: Schema) -> str:
    if len(clique) == 1:
        return f"how many people fall in each category of {clique[0]}"
    return "how many people fall in each combination of " + ", ".join(clique[:-1]) + f" and {clique[-1]}"


def not_preserved(agreement: Agreement, schema: Schema) -> list[str]:
    covered = [set(c) for c in agreement.cliques]
    out = []
    pairs = [p for p in itertools.combinations(agreement.attributes, 2) if not any(set(p) <= c for c in covered)]
    if pairs:
        out.append(
            "Associations between these pairs were not measured; the synthetic data shows only what the "
            "measured tables imply (often close to independence): " + "; ".join(f"{a} × {b}" for a, b in pairs) + "."
        )
    biggest = max(len(c) for c in agreement.cliques)
    if len(agreement.attributes) > biggest:
        out.append(
            f"No interaction among more than {biggest} attributes at once was measured: higher-order patterns "
            "(e.g. a three-way interaction) are not preserved beyond what Φ implies."
        )
    attached = {c for c, src in schema.derived.items() if src in agreement.attributes}  # lookups: released
    dropped = [c.name for c in schema.columns if c.name not in agreement.attributes and c.name not in attached]
    if dropped:
        out.append("Not released at all (not in the synthetic data): " + ", ".join(dropped) + ".")
    out.append(
        "Individual records are not real people; no row can be linked to a respondent, and record-level "
        "analysis (e.g. small areas, rare combinations) is not supported."
    )
    out.append("Every count carries noise: small cells and rare categories are unreliable.")
    return out


def privacy_statement(plan: PrivacyPlan) -> str:
    if plan.noise == "none":
        return (
            "NO NOISE WAS ADDED. The agreed statistics were declared already public and were measured exactly; "
            "this release carries no differential-privacy guarantee."
        )
    s = (
        f"The agreed statistics were measured with {plan.mechanism}, at ρ = {plan.rho:.6g} in total "
        f"(zero-concentrated DP), which implies (ε = {plan.epsilon:.4g}, δ = {plan.delta:.3g})-DP for "
        f"neighbouring datasets that differ by {plan.neighbours}. Everything after measurement is post-processing "
        "of the noisy statistics and spends no further budget."
    )
    if plan.sigma_floor is not None:
        s += (
            f" A noise floor σ ≥ {plan.sigma_floor:g} applies (the data controller's policy; ONS small-count rule)"
            f"{' and was binding' if plan.floor_binding else ''}; with this many marginals it permits at most "
            f"ε = {plan.floor_max_epsilon:.4g}."
        )
    return s


def build_card(
    *,
    release_id: str,
    created: str,
    agreement: Agreement,
    agreement_sha256: str,
    schema: Schema,
    mset: MeasurementSet,
    psi_sha256: str,
    plan: PrivacyPlan,
    model_info: dict[str, Any],
    synthetic: dict[str, Any],
    utility: UtilitySummary,
    audit: AuditReport,
    signoffs: list[SignOff],
    records: list[StageRecord],
    data_info: dict[str, Any],
    utility_report: dict[str, Any] | None = None,
    audit_sections: dict[str, dict[str, Any]] | None = None,
    log_head: dict[str, Any] | None = None,
    ledger: dict[str, Any] | None = None,
) -> Card:
    tvd = {tuple(m.clique): m.tvd for m in utility.phi}
    sig = {tuple(m.clique): m for m in plan.marginals}
    phi = [
        PhiEntry(
            attributes=list(c),
            plain=_plain(c, schema),
            cells=schema.cells(c),
            sigma=sig[c].sigma,
            rho=None if plan.noise == "none" else sig[c].rho,
            tvd=tvd.get(c),
        )
        for c in agreement.cliques
    ]
    attrs = [
        {
            "name": a,
            "description": schema.by_name[a].description,
            "categories": _categories(schema.by_name[a]),
            "released_as": RELEASED_AS[schema.by_name[a].rule] if schema.by_name[a].kind == "numeric" else "",
        }
        for a in agreement.attributes
    ]
    return Card(
        title=f"Generator card — {agreement.spec_name}",
        release_id=release_id,
        created=created,
        agreement_sha256=agreement_sha256,
        psi_sha256=psi_sha256,
        description=agreement.description,
        dataset={"name": agreement.dataset_name, "schema": schema.name, "source": schema.source, **data_info},
        attributes=attrs,
        phi=phi,
        not_preserved=not_preserved(agreement, schema),
        privacy=plan,
        privacy_statement=privacy_statement(plan),
        generator=model_info,
        synthetic=synthetic,
        utility=utility,
        utility_note=(
            "Utility figures compare the synthetic data with the confidential data. They are computed by "
            "the data controller and are not covered by the differential-privacy guarantee."
        ),
        audit=audit,
        signoffs=signoffs,
        utility_report=utility_report_summary(utility_report),
        audit_sections=audit_sections or {},
        provenance={
            "stages": [r.model_dump() for r in records],
            "environment": environment(),
            **({"log_head": log_head} if log_head else {}),  # sdgov.registry.log_head: the log this release joins
        },
        ledger=ledger,
        synthesis_graphs=[g] if (g := synthesis_graph(model_info, "the model")) else [],
    )


def utility_report_summary(report: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the card shows of the full utility report (sdgov.utility): the fitness statement, the radar, links."""
    if report is None:
        return None
    return {
        "html": "utility_report.html",
        "json": "artifacts/utility_report.json",
        "tasks_sha256": report.get("tasks_sha256"),
        "fitness": report["fitness"],
        "verdicts": report["verdicts"],
        "radar": report["radar"],
    }


# ------------------------------------------------------------------------------------------------ render


def tvd_plot_svg(utility: UtilitySummary) -> str:
    """Bar chart of TVD for every Φ marginal and every 2-way pair (inline SVG, no external file)."""
    plt = pyplot()
    rows = [(" × ".join(m.clique), m.tvd, "Φ marginal") for m in utility.phi]
    phi_set = {tuple(m.clique) for m in utility.phi}
    rows += [
        (" × ".join(m.clique), m.tvd, "2-way in Φ" if m.in_phi else "2-way not in Φ")
        for m in utility.two_way
        if tuple(m.clique) not in phi_set
    ]
    colours = {"Φ marginal": "#1b7837", "2-way in Φ": "#7fbf7b", "2-way not in Φ": "#c51b7d"}
    fig, ax = plt.subplots(figsize=(7.5, 0.28 * len(rows) + 1.2))
    ax.barh(range(len(rows)), [r[1] for r in rows], color=[colours[r[2]] for r in rows])
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("total variation distance, real vs synthetic (0 = identical)")
    for label, colour in colours.items():
        ax.barh([0], [0], color=colour, label=label)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, fontsize=8, frameon=False)
    fig.tight_layout()
    return to_svg(fig)


def _pretty(v: Any) -> str:
    """Lists of attribute sets as 'A × B; C × D', dicts as 'k: v' — for the generator table."""
    if isinstance(v, list) and v and all(isinstance(x, list) for x in v):
        return "; ".join(" × ".join(map(str, x)) for x in v)
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):  # e.g. structural zeros, lookups
        return "; ".join(_pretty(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k}: {' × '.join(map(str, x)) if isinstance(x, list) else x}" for k, x in v.items())
    return str(v)


def _env() -> Environment:
    env = template_environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["short"] = lambda h: (h or "")[:12] + "…" if h else ""
    env.filters["g"] = lambda x, p=4: "—" if x is None else f"{x:.{p}g}"
    env.filters["pretty"] = _pretty
    return env


def render(card: Card) -> dict[str, str]:
    """``{'card.html': ..., 'card.md': ..., 'card.json': ...}``."""
    env = _env()
    ctx = {
        "c": card,
        "plot_svg": tvd_plot_svg(card.utility),
        "ledger_statement": ledger_statement(card.ledger),
        "graph_svgs": [graph_svg(g) for g in card.synthesis_graphs],
    }
    if card.utility_report:
        from sdgov.utility.plots import radar

        ctx["radar_svg"] = radar(card.utility_report["radar"])
    return {
        "card.html": env.get_template("card.html.j2").render(**ctx),
        "card.md": env.get_template("card.md.j2").render(**ctx),
        "card.json": card.model_dump_json(indent=2) + "\n",
    }
