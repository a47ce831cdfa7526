"""The public generator card ⟨ψ, Φ, G⟩: built from the artifacts, never typed by hand.

The card is the published document, so it holds only what is public or differentially private: Φ and the
privacy guarantee, ψ's hash, the generator, figures computed from the *noisy* statistics (the synthetic data's
distance to ψ, the noisy record total) and the verdicts. Everything computed on the confidential data — the real
record count, distances to the real tables, the audits' figures — goes to the controller's evidence report
(:mod:`sdgov.reporting.evidence`), which is written beside the run and never published.

:func:`build_card` produces a :class:`Card` (the JSON form); :func:`render` turns it into self-contained HTML and
Markdown with the Jinja templates in ``cards/``.
"""

from __future__ import annotations

import itertools
import math
import platform
import subprocess
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
from jinja2 import Environment
from pydantic import BaseModel, Field

from sdgov import __version__
from sdgov.agreement.spec import AgreedSplit, Agreement, ModelCardSpec
from sdgov.audits.protocol import AuditReport, Check
from sdgov.base.model import Frozen, Strict
from sdgov.base.svg import pyplot, to_svg
from sdgov.budget.accounting import PrivacyPlan
from sdgov.budget.statement import PrivacyStatement, guarantee, headline, ledger_words, plain, rows
from sdgov.cards import environment as template_environment
from sdgov.contracts import ArtifactRef, StageRecord
from sdgov.data.psi import MeasurementSet
from sdgov.data.schema import Clique, Column, Schema
from sdgov.engines.base import RowFilter
from sdgov.engines.recordset import RecordSet
from sdgov.generators.graph import SynthesisGraph, graph_svg, synthesis_graph
from sdgov.governance.signoff import SignOff
from sdgov.registry import commitment
from sdgov.reporting.selection import CardSelection, selection_svg
from sdgov.reporting.verdict import Verdict, overall_verdict, section_title
from sdgov.synthesis.split import privacy_summary, split_graphs

PACKAGES = ["sdgov", "mbi", "opendp", "prefect", "dvc", "jax", "numpy", "pandas", "pyarrow", "pydantic", "scipy"]
REPO = Path(__file__).resolve().parents[1]


class PhiEntry(BaseModel):
    attributes: list[str]
    plain: str
    cells: int
    sigma: float
    rho: float | None
    tvd: float | None  # synthetic vs the noisy table ψ (public: post-processing of ψ), never vs the real table
    part: str | None = Field(default=None, exclude_if=lambda v: v is None)  # a split synthesis: whose records


class Card(Strict):
    card_version: str = "1"
    title: str
    release_id: str
    created: str
    agreement_sha256: str
    psi_sha256: str
    description: str
    model_card: dict[str, Any] | None = None  # the spec's model_card: contact, controller, licence, uses, review date
    dataset: dict[str, Any]
    attributes: list[dict[str, Any]]
    phi: list[PhiEntry]
    not_preserved: list[str]
    privacy: PrivacyPlan  # σ and ρ per table (every ε and δ the card states is the statement's)
    statement: PrivacyStatement  # what this release and its dataset spent, made at measure time (sdgov.budget)
    generator: dict[str, Any]
    synthetic: dict[str, Any]
    utility_note: str
    fitness: dict[str, Any] | None = None  # the uses judged fit / partly fit / not fit, without the figures
    verdict: Verdict  # the one overall verdict (sdgov.reporting.verdict), shown first
    audit: dict[str, Any]  # each check's name and result (its figures are in the evidence report)
    audit_sections: dict[str, dict[str, Any]] = {}  # audit check name → its title and verdict
    signoffs: list[SignOff]
    provenance: dict[str, Any]
    registry_key_fingerprint: str  # the registry key that signs the release, as its controller publishes it
    synthesis_graphs: list[SynthesisGraph] = []  # each model's tables and sampling order (sdgov.generators.graph)
    split: dict[str, Any] | None = None  # a split synthesis: the attribute and each part's codes, rows, Φ and ρ
    selection: CardSelection | None = None  # how Φ's pairs were selected and reviewed (sdgov.reporting.selection)
    part_selections: list[CardSelection] = Field(  # a split synthesis: each part's selection, on its own records
        default_factory=list, exclude_if=lambda v: not v
    )


def environment() -> dict[str, Any]:
    """The software that made the release, for the card: the ``PACKAGES`` versions ("not installed" for one absent),
    Python's version, sdgov's and the git commit — package versions, never the machine (no kernel, libc or build of
    the controller's worker: a public card names nothing about where the confidential data lives)."""
    pkgs = {}
    for p in PACKAGES:
        try:
            pkgs[p] = version(p)
        except PackageNotFoundError:
            pkgs[p] = "not installed"
    return {
        "python": platform.python_version(),
        "packages": pkgs,
        "sdgov": __version__,
        "git_commit": git_commit(),
    }


def git_commit() -> str:
    """The commit sdgov runs from, "(with uncommitted changes)" when tracked files differ; without git or outside a
    checkout an "unknown (…)" text, never an error."""
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


def not_preserved(agreement: Agreement, schema: Schema, exact: bool = False) -> list[str]:
    """The card's "not preserved" sentences: unmeasured pairs, interactions above Φ's largest marginal, columns not
    released, no real records, and the noise on every count (``exact``: that there is none)."""
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
    out.append(
        "No count carries noise: the agreed tables were measured exactly, with no privacy protection."
        if exact
        else "Every count carries noise: small cells and rare categories are unreliable."
    )
    return out


def noisy_tvd(
    mset: MeasurementSet, synthetic: RecordSet, split: AgreedSplit | None = None
) -> dict[tuple[str | None, Clique], float]:
    """TVD between each synthetic marginal and the noisy measured table ψ (negative noisy counts taken as 0),
    by (part, marginal): a split part's table against the synthetic records of that part.

    Public: ψ is differentially private and the synthetic data is post-processing of it, so this distance spends
    no budget and says nothing about the confidential data beyond what ψ already does."""

    def part(name: str | None) -> RowFilter | None:
        return None if split is None or name is None else (split.attribute, list(split.part(name).cells))

    for name in dict.fromkeys(m.part for m in mset.measurements):  # one grouped count per part
        synthetic.prefetch([m.clique for m in mset.measurements if m.part == name], part(name))
    out = {}
    for m in mset.measurements:
        noisy = np.clip(m.array().astype(np.float64).ravel(), 0, None)
        synth = synthetic.table(m.clique, part(m.part)).astype(np.float64).ravel()
        p, q = noisy / max(noisy.sum(), 1.0), synth / max(synth.sum(), 1.0)
        out[(m.part, tuple(m.clique))] = round(float(0.5 * np.abs(p - q).sum()), 6)
    return out


def split_summary(
    agreement: Agreement, plan: PrivacyPlan, statement: PrivacyStatement, model_info: dict[str, Any]
) -> dict[str, Any] | None:
    """A split synthesis on the card: each part's codes, synthetic rows, Φ, ρ (the parts' ρ add up) and the ε of
    that ρ alone (the claim each part's pre-registered audits test)."""
    split = agreement.split
    if split is None:
        return None
    fits = model_info.get("split", {}).get("parts", {})
    privacy = privacy_summary(plan)
    return {
        "attribute": split.attribute,
        "composition": privacy["composition"],
        "parts": [
            {
                "name": p.name,
                "codes": p.codes,
                "rows": fits.get(p.name, {}).get("rows"),
                "phi": [list(c) for c in p.cliques],
                "rho": None if plan.noise == "none" else privacy["parts"][p.name]["rho"],
                # with private selection: the part's selection's ρ, inside its ρ
                **({"selection_rho": sel} if (sel := privacy["parts"][p.name].get("selection_rho")) else {}),
                # the ε of the part's own ρ: what its model claims, and what its pre-registered audits tested
                "epsilon": statement.parts[p.name].zcdp if p.name in statement.parts else None,
            }
            for p in split.parts
        ],
    }


def public_fitness(report: dict[str, Any] | None, agreement: Agreement) -> dict[str, Any] | None:
    """What the public card may say about fitness for use: only what follows from public facts (Φ), never a
    judgement made by comparing with the confidential data. The utility report's verdicts (fit / partly fit / not
    fit for each declared task, and which unmeasured pairs lost their real association) are such comparisons:
    even without their figures they tell something about the real data, so they stay in the controller's evidence
    report (:mod:`sdgov.reporting.evidence`)."""
    if report is None:
        return None
    covered = [set(c) for c in agreement.cliques]
    unmeasured = [p for p in itertools.combinations(agreement.attributes, 2) if not any(set(p) <= c for c in covered)]
    return {
        "fit_for": [],
        "partly_fit_for": [],
        "not_fit_for": [
            "analysing the association between "
            + "; ".join(" × ".join(p) for p in unmeasured)
            + ": these pairs were not in Φ, so the synthetic data shows only what the measured tables imply"
        ]
        if unmeasured
        else [],
        "tasks_assessed": bool(report["verdicts"]),
        "caveats": [
            "Not fit for anything about individual people: records are not real and cannot be linked to anyone."
        ],
        "rules": "These judgements follow from what was measured (Φ) alone. Judgements that compare the synthetic "
        "data with the confidential data (fitness for the declared analysis tasks, and their figures) are kept in "
        "the data controller's evidence report.",
    }


PUBLIC_HASHES = frozenset(
    {
        "spec",
        "schema",
        "approvals",
        "agreement",
        "measurements",
        "privacy_plan",
        "privacy_statement",
        "synthetic",
        "model_info",
        "draft_card_html",
        "draft_card_md",
        "draft_card_json",
    }
)
"""The stage artifacts whose file sha256 the card may print: inputs the analyst wrote, files the release
publishes, and the draft card. Every other artifact (the data, its codes, the audits' and the utility report's
figures, the evidence report: each a function of the confidential records) is named by its keyed commitment."""


def public_artifact(a: ArtifactRef, run_dir: Path, commit: commitment.Committer) -> dict[str, str]:
    """One stage input or output as the card names it: its name, its file's name (relative to the run directory,
    else the bare name: no machine path), and its sha256 if the file is public, else its keyed commitment. No size
    (the confidential data's size would tell its record count)."""
    path, run_dir = Path(a.path).resolve(), run_dir.resolve()
    file = path.relative_to(run_dir).as_posix() if path.is_relative_to(run_dir) else path.name
    if a.name in PUBLIC_HASHES:
        return {"name": a.name, "file": file, "sha256": a.sha256}
    return {"name": a.name, "file": file, "hmac_sha256": commit("sha256", a.sha256)}


def public_stages(records: list[StageRecord], run_dir: Path, commit: commitment.Committer) -> list[dict[str, Any]]:
    """The stages' provenance as published: every artifact by :func:`public_artifact`."""
    out = []
    for r in records:
        d = r.model_dump()
        for side in ("inputs", "outputs"):
            d[side] = [public_artifact(a, run_dir, commit) for a in getattr(r, side)]
        out.append(d)
    return out


JSONObject = dict[str, Any]
"""An artifact read back as JSON whose shape belongs to its own stage: the generator's model info, the utility
report, an audit's section, the budget ledger."""


class SyntheticFile(Frozen):
    """The released synthetic file as the card names it."""

    rows: int
    seed: int
    chunk_rows: int
    file: str
    sha256: str


class DataHashes(Frozen):
    """The confidential data's hashes, controller-side: unkeyed, each is a function of the records alone, so the
    card publishes only their commitments (:meth:`committed`). Its record count stays out (the card states ψ's
    noisy total)."""

    fingerprint: str
    sha256: str
    dvc_md5: str
    measurements_dvc_md5: str  # ψ's file: public

    def committed(self, commit: commitment.Committer) -> dict[str, str]:
        """What the card's ``dataset`` names the data by: keyed commitments the controller can open to an auditor
        (``sdgov registry prove``), and ψ's own md5."""
        return {
            "commitment": commitment.SCHEME,
            "fingerprint_hmac": commit("fingerprint", self.fingerprint),
            "sha256_hmac": commit("sha256", self.sha256),
            "dvc_md5_hmac": commit("dvc_md5", self.dvc_md5),
            "measurements_dvc_md5": self.measurements_dvc_md5,
        }


@dataclass(frozen=True, kw_only=True)
class CardInputs:
    """Everything the public card is built from, typed: the stage contracts' artifacts, read back and hash-checked
    (:func:`sdgov.reporting.draft.card_inputs`). ``audit``, ``audit_sections`` and ``utility_report`` are read only
    for their verdicts."""

    release_id: str
    created: str
    agreement: Agreement
    agreement_sha256: str
    schema: Schema
    mset: MeasurementSet  # ψ
    psi_sha256: str
    plan: PrivacyPlan
    model_info: JSONObject  # the generator's own (sdgov.generators.graph reads its tables and sampling order)
    synthetic: SyntheticFile
    synthetic_codes: RecordSet  # the synthetic data, open: the distances to ψ are computed on it
    data: DataHashes
    commit: (
        commitment.Committer
    )  # the registry's keyed commitment (sdgov.registry.commitment): how the card names the data
    run_dir: Path  # the run's folder: artifacts are named relative to it, never by a machine path
    registry_key_fingerprint: str  # sha256:… of the registry's public key (sdgov.identity.keys.published_fingerprint)
    audit: AuditReport
    audit_sections: dict[str, JSONObject] = field(default_factory=dict)  # audit check name → its section
    utility_report: JSONObject | None = None
    signoffs: list[SignOff] = field(default_factory=list)
    records: list[StageRecord]
    statement: PrivacyStatement  # made at measure time: every ε and δ the card states
    model_card: ModelCardSpec | None = None
    selections: list[CardSelection] = field(default_factory=list)  # one model's, or each split part's


def _phi(i: CardInputs) -> list[PhiEntry]:
    """Φ's tables, each with its σ, ρ and the synthetic data's distance to its noisy table."""
    agreement, schema, plan = i.agreement, i.schema, i.plan
    tvd = noisy_tvd(i.mset, i.synthetic_codes, agreement.split)
    sig = {(m.part, tuple(m.clique)): m for m in plan.marginals}
    units = (
        [(None, c) for c in agreement.cliques]
        if agreement.split is None
        else [(p.name, c) for p in agreement.split.parts for c in p.cliques]
    )
    return [
        PhiEntry(
            attributes=list(c),
            plain=_plain(c, schema),
            cells=schema.cells(c),
            sigma=sig[u].sigma,
            rho=None if plan.noise == "none" else sig[u].rho,
            tvd=tvd.get(u),
            part=part,
        )
        for u in units
        for part, c in [u]
    ]


def _attributes(agreement: Agreement, schema: Schema) -> list[dict[str, Any]]:
    return [
        {
            "name": a,
            "description": schema.by_name[a].description,
            "categories": _categories(schema.by_name[a]),
            "released_as": RELEASED_AS[schema.by_name[a].rule] if schema.by_name[a].kind == "numeric" else "",
        }
        for a in agreement.attributes
    ]


def _dataset(i: CardInputs) -> dict[str, Any]:
    """The dataset's names and hashes, and ψ's noisy record total (never the real count)."""
    agreement, schema, mset = i.agreement, i.schema, i.mset
    return {
        "name": agreement.dataset_name,
        "schema": schema.name,
        "source": schema.source,
        **i.data.committed(i.commit),
        "noisy_rows": round(
            mset.noisy_total()
            if agreement.split is None
            else math.fsum(mset.of_part(p.name, p.attributes).noisy_total() for p in agreement.split.parts)
        ),
    }


def build_card(inputs: CardInputs) -> Card:
    """The public card from its inputs (:class:`CardInputs`)."""
    i, agreement, plan, model_info = inputs, inputs.agreement, inputs.plan, inputs.model_info
    sections = i.audit_sections
    return Card(
        title=f"Generator card — {agreement.spec_name}",
        release_id=i.release_id,
        created=i.created,
        agreement_sha256=i.agreement_sha256,
        psi_sha256=i.psi_sha256,
        description=agreement.description,
        model_card=None if i.model_card is None else i.model_card.model_dump(mode="json"),
        dataset=_dataset(i),
        attributes=_attributes(agreement, i.schema),
        phi=_phi(i),
        not_preserved=not_preserved(agreement, i.schema, exact=plan.noise == "none"),
        # σ and ρ per table; a spent dataset's card claims no finite ε anywhere, its plan's included
        privacy=plan.model_copy(update={"epsilon": None, "floor_max_epsilon": None}) if i.statement.spent else plan,
        statement=i.statement,
        generator=model_info,
        synthetic=i.synthetic.model_dump(),
        utility_note=(
            "The distances below compare the synthetic data with the noisy agreed tables ψ, which are public: they "
            "say how faithfully the generator reproduces what it was given. How the synthetic data compares with "
            "the confidential data is assessed by the data controller in an evidence report that is not published."
        ),
        fitness=public_fitness(i.utility_report, agreement),
        verdict=overall_verdict(public_rows(i.audit)),  # the rows computed on ψ, the synthetic data and public facts
        audit={
            "checks": [{"name": c.name, "result": public_result(c, i.audit)} for c in i.audit.checks],
            "not_run": i.audit.not_run,
        },
        audit_sections={
            name: {
                "title": sec.get("title") or section_title(name).capitalize(),
                "verdict": CONTROLLER_SIDE,
                **({"parts": list(sec["parts"])} if "parts" in sec else {}),  # a split: run once per part
            }
            for name, sec in sections.items()
        },
        signoffs=i.signoffs,
        registry_key_fingerprint=i.registry_key_fingerprint,
        provenance={
            "stages": public_stages(i.records, i.run_dir, i.commit),
            "environment": environment(),
        },
        synthesis_graphs=split_graphs(agreement.split, model_info["split"]["parts"])
        if agreement.split is not None
        else [g]
        if (g := synthesis_graph(model_info, "the model"))
        else [],
        split=split_summary(agreement, plan, i.statement, model_info),
        selection=next((s for s in i.selections if s.part is None), None),
        part_selections=[s for s in i.selections if s.part is not None],
    )


CONTROLLER_SIDE = "controller-side"
"""How the public card states a pre-registered audit's row or section: it ran on the confidential data and did not
block the release; its result (a pass or a warning) is a figure of that data, so it stays in the evidence report."""


def public_rows(audit: AuditReport) -> AuditReport:
    """The audit with only its rows computed from ψ, the synthetic data and public facts."""
    return audit.model_copy(update={"checks": [c for c in audit.checks if c.name not in audit.confidential]})


def public_result(check: Check, audit: AuditReport) -> str:
    """A row as the public card states it: its result, or :data:`CONTROLLER_SIDE` for a row computed on the
    confidential data (``fail`` where it blocked: only a draft that is never published can show that)."""
    if check.name in audit.confidential:
        return "fail" if not check.passed and check.severity == "block" else CONTROLLER_SIDE
    return check_result(check.passed, check.severity)


def check_result(passed: bool, severity: str) -> str:
    """One word per audit row: ``pass``, ``warning`` (a failed warn check) or ``fail`` (a failed blocking one)."""
    return "pass" if passed else ("warning" if severity == "warn" else "fail")


# ------------------------------------------------------------------------------------------------ render


def tvd_plot_svg(phi: list[PhiEntry]) -> str:
    """Bar chart of each Φ table's TVD to its noisy version ψ (inline SVG, no external file), axis from 0."""
    plt = pyplot()
    rows = [(" × ".join(p.attributes), p.tvd or 0.0) for p in phi]
    fig, ax = plt.subplots(figsize=(7.5, 0.28 * len(rows) + 1.2))
    ax.barh(range(len(rows)), [r[1] for r in rows], color="#1b7837")
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max([r[1] for r in rows] + [0.01]) * 1.15)
    ax.set_xlabel("total variation distance, synthetic vs the noisy table ψ (0 = identical)")
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
    env.filters["basename"] = lambda p: Path(p).name if p else ""
    return env


SIGNOFF_MARKER = "<!-- sdgov: sign-off section -->\n"
"""Where the sign-off section starts in card.html and card.md: everything before it is the draft the approver read."""


def _card_selections(card: Card) -> list[CardSelection]:
    """The card's selection sections in the order drawn: one model's, or each split part's."""
    return [card.selection] if card.selection is not None else card.part_selections


def render(card: Card, *, draft: bool = False, figures: bool = True) -> dict[str, str]:
    """``{'card.html': ..., 'card.md': ..., 'card.json': ...}``; ``draft=True``: a notice that sign-off is pending
    after :data:`SIGNOFF_MARKER` instead of the sign-offs (see :func:`sign_draft`). ``figures=False`` leaves the
    figures out (every one is drawn before the marker): for :func:`sign_draft`, which keeps only the sign-off
    section and would otherwise draw them all again (~1.5 CPU s of matplotlib on Adult)."""
    env = _env()
    ctx = {
        "c": card,
        "draft": draft,
        "plot_svg": tvd_plot_svg(card.phi) if figures else "",
        "st": card.statement,  # every ε and δ on the card: the release's privacy statement, in its own words
        "privacy_rows": rows(card.statement),
        "headline": headline(card.statement),
        "guarantee": guarantee(card.statement),
        "ledger_words": ledger_words(card.statement),
        "plain": plain(card.statement),
        "graph_svgs": [graph_svg(g) if figures else "" for g in card.synthesis_graphs],
        "selection_svgs": [selection_svg(s) if figures else "" for s in _card_selections(card)],
    }
    return {
        "card.html": env.get_template("card.html.j2").render(**ctx),
        "card.md": env.get_template("card.md.j2").render(**ctx),
        "card.json": card.model_dump_json(indent=2) + "\n",
    }


def draft_part(text: str) -> str:
    """The part of a rendered card.html / card.md before its sign-off section: what the approver signs off."""
    return text[: text.index(SIGNOFF_MARKER)]


def sign_draft(draft: dict[str, str], signed: Card) -> dict[str, str]:
    """The published card: the draft's bytes up to the sign-off marker, then the signed card's sign-off section.

    The common part is taken from the draft the approver read, never re-rendered, so nothing in it can differ (nor
    are its figures drawn again)."""
    full = render(signed, figures=False)
    out = {name: draft_part(draft[name]) + full[name][full[name].index(SIGNOFF_MARKER) :] for name in draft}
    out["card.json"] = full["card.json"]
    return out
