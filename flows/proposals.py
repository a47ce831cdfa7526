"""An analyst's proposals: the use cases of ``sdgov propose``, one function each.

* :func:`propose_release` — the governed release in this process: the proposal checked once, then
  :func:`~sdgov.flows.governed.governed_release_flow`, which pauses for the controller's decisions;
* :func:`propose_reviewed` (``--select --review``) — the Φ review flow
  (:func:`~sdgov.flows.phi_review.phi_review_flow`): select, pause for the stakeholders' reviews, then the governed
  release of the reviewed Φ;
* :func:`propose_phi_selection` (``--select``) — the private selection in this process, without Prefect: the Φ
  proposal and the proposed spec;
* :func:`submit_proposal` (``--submit``) — the signed proposal handed to the controller's worker as a run of its
  proposals deployment: this process reads the spec and its public schema only.

Prefect is imported only by the use cases that start a run (a selection alone loads none of it).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdgov.base.errors import InternalError, SdgovError

if TYPE_CHECKING:
    from sdgov.flows.governed import GovernedOutcome
    from sdgov.governance.site import Site
    from sdgov.intake.inputs import CheckedProposal
    from sdgov.measurement.selection.mst import Proposal
    from sdgov.registry.log import Registry

DEFAULT_TIMEOUT_S = 3600  # a release run in this process waits this long for its decisions, in total
DEFAULT_POLL_S = 5


def sign_local_proposal(registry: Registry, spec: str, who: str, key: str | None) -> str | None:
    """The analyst's signed proposal of ``spec`` for this registry (``key``), or None: unsigned, which only a sandbox
    registry accepts (the proposal check says so in one line)."""
    if not key:
        return None
    from sdgov.agreement.load import load_spec
    from sdgov.governance.proposals import sign_proposal

    registry.require_existing()
    return sign_proposal(registry.registry_id(), load_spec(spec).agreement.sha256(), who, key)


def propose_release(
    site: Site, spec: str, who: str, key: str | None, data: str | None, timeout_s: int | None, poll_s: int | None
) -> GovernedOutcome:
    """Run a governed release that pauses for the controller's decisions, in this process, against the configured
    server (``PREFECT_API_URL``: an ephemeral server would die with this process, and nobody could resume the run).
    The proposal is checked once, here, before the flow; a run that failed (a decision that never came) is one
    line."""
    from sdgov.flows.plumbing.prefect_api import require_server
    from sdgov.intake.inputs import check_governed_proposal

    require_server()
    root = site.root.resolve()
    token = sign_local_proposal(site.registry, spec, who, key)
    checked = check_governed_proposal(site, spec, who, data, token)  # fail fast, before the flow
    from sdgov.flows.governed import governed_release_flow

    run = _Run(root, who, data, timeout_s, poll_s, token, checked)
    return run.here(governed_release_flow, "the governed release", "the decisions", spec_path=str(Path(spec).resolve()))


def propose_reviewed(
    site: Site,
    draft: str,
    who: str,
    key: str | None,
    data: str | None,
    out_path: str | None,
    timeout_s: int | None,
    poll_s: int | None,
) -> GovernedOutcome:
    """The Φ review flow (select, pause for reviews, then the governed release of the reviewed Φ), its draft checked
    once, here, before the orchestrator starts."""
    from sdgov.flows.plumbing.prefect_api import require_server
    from sdgov.governance.policy import check_plan_allowed
    from sdgov.intake.inputs import check_proposal
    from sdgov.measurement.selection.store import check_draft

    require_server()
    root = site.root.resolve()
    token = sign_local_proposal(site.registry, draft, who, key)
    checked = check_proposal(draft, site.registry, who, data, token)
    ag = checked.loaded.agreement
    check_draft(ag, draft)
    check_plan_allowed(site, ag, checked.data.fingerprint, ag.dataset_name, checked.data.rows)
    from sdgov.flows.phi_review import phi_review_flow

    run = _Run(root, who, data, timeout_s, poll_s, token, checked)
    return run.here(
        phi_review_flow,
        "the reviewed release",
        "the reviews and decisions",
        draft_path=str(Path(draft).resolve()),
        out_path=str(Path(out_path).resolve()) if out_path else None,
    )


@dataclass(frozen=True)
class _Run:
    """What every proposal run in this process is given: the registry, the proposer, the data (None: the spec's),
    how long it waits for decisions and how often it looks (None: the defaults), the signed proposal and the
    proposal as checked (handed to the flow by ticket)."""

    root: Path
    proposer: str
    data: str | None
    timeout_s: int | None
    poll_s: int | None
    token: str | None
    checked: CheckedProposal

    def here(self, flow: Callable[..., object], run: str, recorded: str, **params: Any) -> GovernedOutcome:
        """Run ``flow`` in this process (Prefect's tracebacks for an sdgov refusal quieted) and return its outcome; a
        run that failed — e.g. a decision that never came: Prefect fails a timed-out pause — is one line naming the
        ``run`` and pointing at what the trail ``recorded``."""
        from prefect.exceptions import FailedRun

        from sdgov.flows.governed import GovernedOutcome
        from sdgov.flows.handover import hand_over
        from sdgov.flows.plumbing.refusals import quiet_refusals

        quiet_refusals()
        try:
            out = flow(
                registry_root=str(self.root),
                proposer=self.proposer,
                data_path=str(Path(self.data).resolve()) if self.data else None,
                timeout_s=DEFAULT_TIMEOUT_S if self.timeout_s is None else self.timeout_s,
                poll_interval=DEFAULT_POLL_S if self.poll_s is None else self.poll_s,
                proposal=self.token,
                checked=hand_over(self.checked),
                **params,
            )
        except FailedRun as exc:
            raise SdgovError(
                f"{run} ended without a release: {exc}",
                str(self.root),
                f"see 'sdgov trail --root ROOT' for {recorded} recorded",
            ) from None
        if not isinstance(out, GovernedOutcome):  # in-process a flow returns its value; Prefect types a State too
            raise InternalError("the flow returned no outcome", str(type(out)), "report this as a bug")
        return out


@dataclass(frozen=True)
class SelectionProposed:
    """A private selection made by ``sdgov propose --select``: the proposals by part (``None``: one model's), the
    selection's summary, where the proposal and the proposed spec were written, the proposed agreement's hash and
    the selection's run id."""

    proposals: dict[str | None, Proposal]
    summary: dict[str, Any]
    proposal_file: Path
    proposed_spec: Path
    agreement_sha256: str
    run_id: str


def propose_phi_selection(
    site: Site, draft: str, out: str | None, who: str, key: str | None, data: str | None, method: str
) -> SelectionProposed:
    """Spend the draft's selection share, write the Φ proposal and the proposed spec (``out``, default
    ``DRAFT.proposed.yaml``), and return them with the proposed spec's agreement hash — what the analyst and the
    controller sign, known without a dry run. Runs in this process, without Prefect."""
    from sdgov.agreement.load import load_spec
    from sdgov.measurement.selection.review import selection_records
    from sdgov.tasks.select_phi import propose_selection, write_proposed_spec, write_record

    root = site.root.resolve()
    draft_path = Path(draft).resolve()
    out_path = Path(out) if out else draft_path.with_name(draft_path.stem + ".proposed.yaml")
    run_id = "select-" + uuid.uuid4().hex  # no flow run here: what new_run_id gives outside one, without the flow
    token = sign_local_proposal(site.registry, draft, who, key)
    proposals, summary = propose_selection(str(draft_path), site, run_id, who, data, method, token)
    pairs = {part: p.pairs for part, p in proposals.items()}
    record = selection_records(summary["draft_agreement_sha256"], proposals, pairs)
    write_proposed_spec(draft_path, pairs, out_path, write_record(root / "runs" / run_id, record))
    sha = load_spec(out_path).agreement.sha256()
    return SelectionProposed(proposals, summary, root / "runs" / run_id / "phi_proposal.json", out_path, sha, run_id)


def submit_proposal(
    spec: str, who: str, key: str | None, worker_name: str, timeout_s: int | None = None, poll_s: int | None = None
) -> dict[str, str]:
    """Sign the proposal for the registry the controller's worker ``worker_name`` serves and start a run of its
    proposals deployment with the spec's text; this process reads the spec and its public schema only — never the
    data, never the registry key. Returns the run's id, the agreement's hash, the registry's id and the deployment,
    once the run is created. The worker decides how long a proposal waits: a ``timeout_s`` or ``poll_s`` is one
    line."""
    from prefect import get_client
    from prefect.client.schemas.objects import FlowRun as PrefectRun
    from prefect.deployments import run_deployment
    from prefect.exceptions import ObjectNotFound

    from sdgov.agreement.load import load_spec
    from sdgov.flows.plumbing.prefect_api import require_server
    from sdgov.flows.worker import PROPOSALS_FLOW, REGISTRY_TAG
    from sdgov.governance.proposals import sign_proposal
    from sdgov.identity.keys import load_private_key

    if not key:
        raise SdgovError("a proposal to the controller's worker must be signed", "--key", "pass --key YOUR_KEY.pem")
    if timeout_s is not None or poll_s is not None:
        raise SdgovError(
            "the controller's worker decides how long a proposal waits for decisions (worker.yaml)",
            "--timeout/--poll",
            "leave them out with --submit; the deadline is shown on the pause's form and by 'sdgov runs'",
        )
    load_private_key(key)
    loaded = load_spec(spec)
    sha = loaded.agreement.sha256()
    require_server()
    name = f"{PROPOSALS_FLOW}/{worker_name}"
    with get_client(sync_client=True) as c:
        try:
            dep = c.read_deployment_by_name(name)
        except ObjectNotFound:
            raise SdgovError(
                f"no deployment {name} on the Prefect server",
                "--submit",
                "the controller starts it on their machine: sdgov worker start --config worker.yaml",
            ) from None
    rid = next((t.removeprefix(REGISTRY_TAG) for t in dep.tags or [] if t.startswith(REGISTRY_TAG)), "")
    token = sign_proposal(rid, sha, who, key)
    fr: PrefectRun = run_deployment(  # type: ignore[assignment]  # from sync code: a FlowRun, not a coroutine
        name,
        parameters={
            "proposal": token,
            "spec_yaml": Path(spec).read_text(encoding="utf-8"),
        },
        timeout=0,
    )
    return {"flow_run_id": str(fr.id), "agreement_sha256": sha, "registry_id": rid, "deployment": name}
