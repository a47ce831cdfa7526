"""Stage 0 (optional) — private selection: the analyst's draft (Φ = 1-ways + ``privacy.selection``) becomes a
Φ proposal for the stakeholders, and a proposed spec that goes through the normal agreement.

The selection spends its declared share of the budget here, through the ledger and the draw-once store
(:mod:`sdgov.measurement.selection.store`); the 1-ways it measured are reused by the release of the proposed spec.
``sdgov propose --select`` calls :func:`propose_selection` in its own process; the Prefect task
(:func:`select_phi_task`, for the reviewed flow) is built on first use, so the command never imports Prefect (~3 CPU
s of imports, issue 27).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from sdgov.artifacts import read_codes, write_agreement
from sdgov.base.atomic import atomic_write_bytes
from sdgov.base.hashing import write_json
from sdgov.contracts import ArtifactRef, Recorder
from sdgov.governance.controller import APPROVERS, controller_files
from sdgov.governance.policy import check_plan_allowed
from sdgov.governance.site import Site
from sdgov.intake.inputs import CheckedProposal, check_proposal
from sdgov.measurement.selection.mst import Proposal
from sdgov.measurement.selection.review import SelectionRecord, SplitSelectionRecord
from sdgov.measurement.selection.store import check_draft, select_once

if TYPE_CHECKING:
    from prefect import Task

SELECT_STAGE = "select_phi"
SELECT_VERSION = "1.1.0"  # 1.1: signed drafts


def proposed_spec(
    draft_path: Path, pairs: dict[str | None, list[list[str]]], record: Path | None = None
) -> dict[str, Any]:
    """The draft with Φ = its 1-ways + the proposed pairs — each part's own, for a split synthesis (``pairs`` by
    part; ``None``: the one model's) — everything else, the selection block included, kept: the 1-ways' σ depends on
    it, and the release must find them at that σ to reuse them. Names the reviewed selection ``record`` (drawn on
    the card) when given."""
    raw = yaml.safe_load(draft_path.read_text(encoding="utf-8"))
    if raw.get("split") is None:
        raw["phi"] = _with_pairs(raw["phi"], pairs[None])
    else:
        for part in raw["split"]["parts"]:
            part["phi"] = _with_pairs(part["phi"], pairs[str(part["name"])])
    if record is not None:
        raw["selection_review"] = str(record.resolve())
    return dict(raw)


def _with_pairs(phi: dict[str, Any], pairs: list[list[str]]) -> dict[str, Any]:
    """A draft's Φ (its 1-ways, as marginals or a k = 1 shorthand) with ``pairs`` added, as explicit marginals."""
    ones = [list(m) for m in phi.get("marginals", [])]
    for kw in phi.get("all_kway", []):
        ones += [[a] for a in kw["attributes"]]
    return {"marginals": ones + [list(p) for p in pairs]}


def write_proposed_spec(
    draft_path: Path, pairs: dict[str | None, list[list[str]]], out: Path, record: Path | None = None
) -> Path:
    """Write the proposed spec (Φ = the draft's 1-ways + ``pairs``, by part) to ``out`` as YAML and return ``out``.

    Outside the draft's folder the schema and dataset paths are made absolute: a spec's paths are relative to it."""
    spec = proposed_spec(draft_path, pairs, record)
    base = draft_path.parent.resolve()
    if out.parent.resolve() != base:  # paths in a spec are relative to it: elsewhere, make them absolute
        spec["schema"] = str((base / spec["schema"]).resolve())
        spec["dataset"]["path"] = str((base / spec["dataset"]["path"]).resolve())
    out.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return out


def write_record(run_dir: Path, record: SelectionRecord | SplitSelectionRecord) -> Path:
    """The reviewed selection beside the selection run (``phi_review.json``), which the proposed spec names."""
    path = run_dir / "phi_review.json"
    atomic_write_bytes(path, (record.model_dump_json(indent=2) + "\n").encode())
    return path


def propose_selection(
    spec_path: str,
    site: Site,
    run_id: str,
    proposer: str,
    data_path: str | None = None,
    method: str | None = None,
    proposal: str | None = None,
    rec: Recorder | None = None,
    checked: CheckedProposal | None = None,
) -> tuple[dict[str | None, Proposal], dict[str, Any]]:
    """Select, log the proposals as the analyst's, and return them by part (``None``: one model's; a split
    synthesis's each part's, made on its own records at its own share of ρ) with a summary for the card and the
    reviewers. ``method`` (``--select``), when given, must be the draft's ``privacy.selection.method``;
    ``proposal`` is the analyst's signed statement over the draft (:mod:`sdgov.governance.proposals`: selection
    spends budget, so an unsigned draft runs only in a sandbox registry). ``rec``: the stage's recorder (the Prefect
    task's, which logs the stage); ``None``: one made here (``sdgov propose --select``, which loads no Prefect).
    ``checked``: the draft as the command checked it (the proposal, the draft and the policy), re-verified by hash
    instead of checked again."""
    rec = rec or Recorder(SELECT_STAGE, SELECT_VERSION)
    if checked is None:
        checked = check_proposal(spec_path, site.registry, proposer, data_path, proposal)
        ag, data = checked.loaded.agreement, checked.data
        check_draft(ag, spec_path, method)
        check_plan_allowed(site, ag, data.fingerprint, ag.dataset_name, data.rows)
    else:
        checked.inputs.reverified()
        ag = checked.loaded.agreement
    files = write_agreement(site.registry, run_id, checked.inputs)
    signed = checked.signed
    registry = site.registry
    registry.append(  # the signed draft counts once: its nonce is used from here on
        "selection_proposed",
        signed.proposer,
        "analyst",
        agreement_sha256=files.sha256,
        run_id=run_id,
        comment="draft proposed for private selection",
        artifacts={
            "identity_verified": str(signed.verified).lower(),
            **({"nonce": signed.nonce} if signed.nonce else {}),
        },
        signatures={"proposal": signed.token} if signed.token else {},
    )
    approvers = ArtifactRef.of("approvers", controller_files(registry)[APPROVERS])
    agreed = files.agreed(approvers, [], rec.record())
    sel = select_once(site, agreed, ag, checked.loaded.schema_, lambda: read_codes(files.codes))
    out = files.run_dir / "phi_proposal.json"
    proposals = sel.proposals
    summary: dict[str, Any] = {
        "draft_agreement_sha256": files.sha256,
        "how": sel.how,
        "one_ways": sel.one_ways.how,
        "one_way_rho": sel.one_ways.statement.spent_rho,
        "selection_rho": math.fsum(p.budget.rho for p in proposals.values()),
        "rho_budget": sel.one_ways.plan.rho_budget,
        "proposer_verified": signed.verified,
    }
    if list(proposals) == [None]:
        one = sel.parts[None]
        summary |= {"selection_statistic": one.key, "proposal": one.proposal.model_dump(mode="json")}
    else:  # a split synthesis: each part's selection, on its own records, at its own share
        summary["parts"] = {
            part: {
                "selection_statistic": s.key,
                "how": s.how,
                "selection_rho": s.proposal.budget.rho,
                "proposal": s.proposal.model_dump(mode="json"),
            }
            for part, s in sel.parts.items()
        }
    write_json(out, summary)
    who = checked.proposer
    pairs = sum(len(p.selected) for p in proposals.values())
    method_name = next(iter(proposals.values())).method
    registry.append(
        "phi_selected",
        who.name,
        who.role,
        agreement_sha256=files.sha256,
        run_id=run_id,
        decision="approve",
        comment=f"private selection ({method_name}): {pairs} pair(s) proposed"
        + ("" if list(proposals) == [None] else f" over {len(proposals)} split parts"),
        artifacts={"phi_proposal": ArtifactRef.of("phi_proposal", out).sha256},
    )
    return proposals, summary


@functools.cache
def select_phi_task() -> Task[..., tuple[dict[str | None, Proposal], dict[str, Any]]]:
    """The ``select_phi`` Prefect task (:func:`propose_selection`, its start and finish in the run's log), built on
    first use: importing this module loads no Prefect."""
    from prefect import task
    from prefect.cache_policies import NO_CACHE

    from sdgov.tasks.common import stage

    @task(name=SELECT_STAGE, version=SELECT_VERSION, cache_policy=NO_CACHE)
    def select_phi(
        spec_path: str,
        site: Site,
        run_id: str,
        proposer: str,
        data_path: str | None = None,
        method: str | None = None,
        proposal: str | None = None,
        checked: CheckedProposal | None = None,
    ) -> tuple[dict[str | None, Proposal], dict[str, Any]]:
        """Select and log the proposals as the analyst's (:func:`propose_selection`)."""
        with stage(SELECT_STAGE, SELECT_VERSION, f"{site.root}/runs/{run_id}") as rec:
            return propose_selection(spec_path, site, run_id, proposer, data_path, method, proposal, rec, checked)

    return select_phi
