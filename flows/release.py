"""The release flow: agree Φ → measure → generate → audit → utility → draft card → sign-off → release.

:func:`evaluate` (generate → audit → utility) and :func:`publish` are the spine it shares with the governed flow
(flows/governed.py), which adds human decisions around them.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from sdgov import __version__
from sdgov.artifacts import load_agreement, read_spec
from sdgov.contracts import Agreed, GenerateInput, Measured, ReleaseResult
from sdgov.flows.handover import release_inputs
from sdgov.governance.signoff import SignOff
from sdgov.governance.site import Site
from sdgov.governance.standing import StandingApproval, load_approvals, release_signoff, standing_artifacts
from sdgov.registry.log import Registry
from sdgov.reporting.publish import ReleaseCandidate, log_failed
from sdgov.tasks.agree_phi import agree_phi
from sdgov.tasks.audit import audit
from sdgov.tasks.draft_card import draft_card, summary_artifact
from sdgov.tasks.generate import generate
from sdgov.tasks.measure import measure
from sdgov.tasks.release import release
from sdgov.tasks.utility_report import utility_report


def new_run_id() -> str:
    """The Prefect flow run's id without dashes (32 hex characters); a fresh uuid4 hex outside a flow run."""
    rid = flow_run.get_id()
    return str(rid).replace("-", "") if rid else uuid.uuid4().hex


def evaluate(agreed: Agreed, measured: Measured) -> ReleaseCandidate:
    """generate → audit → utility → draft card: everything between the noisy marginals and the release decision.

    The draft card is the card as it will be published, less the sign-offs: the approver reads it before deciding
    and its hash is part of the candidate's."""
    agreement = load_agreement(agreed.agreement)
    generated = generate(
        GenerateInput(
            measurements=measured.measurements,
            schema_file=agreed.schema_file,
            generator=agreement.generator,
            rows=agreement.rows,
            seed=agreement.seed,
            out_dir=str(Path(agreed.run_dir) / "generate"),
            split=agreement.split,
            engine=read_spec(agreed.spec).engine,  # public configuration: where the sample's parts run
        )
    )
    audited = audit(agreed, measured, generated)
    utility = utility_report(agreed, generated, audited)
    drafted = draft_card(agreed, measured, generated, audited, utility)
    candidate = ReleaseCandidate(
        measured=measured, generated=generated, audited=audited, utility=utility, draft=drafted
    )
    summary_artifact(candidate)
    return candidate


def standing_release_signoff(
    registry: Registry, standing: StandingApproval, agreed: Agreed, candidate: str, comment: str | None = None
) -> SignOff:
    """Release approval from a standing-approval file, recorded in the hash-chained log before publication."""
    s = release_signoff(standing, agreed.agreement_sha256, candidate, agreed.approvals.path, registry)
    registry.append(
        "release_approved",
        s.name,
        s.role,
        agreement_sha256=agreed.agreement_sha256,
        run_id=Path(agreed.run_dir).name,
        decision=s.decision,
        comment=comment or s.via,
        artifacts={"candidate": candidate, **standing_artifacts(s)},
    )
    return s


def publish(agreed: Agreed, candidate: ReleaseCandidate, signoffs: list[SignOff], site: Site) -> ReleaseResult:
    """Publish the candidate through the release task, which refuses it without a passing audit and a bound sign-off."""
    result = release(agreed, candidate, signoffs, site)
    get_run_logger().info("released %s → %s", result.release_id, result.card_html)
    return result


@flow(name="sdgov-release", version=__version__, log_prints=False)
def release_flow(
    spec_path: str,
    registry_root: str,
    approvals_path: str | None = None,
    data_path: str | None = None,
    checked: str | None = None,
) -> ReleaseResult:
    """The release on standing approvals: agree Φ, measure, evaluate, publish; no human decision during the run.

    ``checked``: the ticket of the inputs as the command checked them (:mod:`sdgov.flows.handover`), which the agree
    stage re-verifies by hash; without one the flow checks them itself (controller files as last signed, inputs,
    standing approval, policy). The standing release sign-off is added only on a passing audit (publication refuses a
    candidate without one); a failure after agreement is logged as a failed run, then re-raised. The site (registry,
    keys, secret, budget authority) is resolved here, once, from this process's settings."""
    site = Site.resolve(registry_root)
    inputs = release_inputs(site, spec_path, approvals_path, data_path, checked)  # checked once, by whoever starts
    agreed = agree_phi(inputs, site, new_run_id())
    get_run_logger().info(
        "agreement %s signed by %s", agreed.agreement_sha256[:12], ", ".join(s.name for s in agreed.signoffs)
    )
    try:
        candidate = evaluate(agreed, measure(agreed, site))
        signoffs = list(agreed.signoffs)
        if candidate.audited.verdict == "pass":
            standing = load_approvals(agreed.approvals.verified())
            signoffs.append(standing_release_signoff(site.registry, standing, agreed, candidate.sha256))
        return publish(agreed, candidate, signoffs, site)
    except Exception as exc:  # the trail records the run as failed, not as drawn and left there
        log_failed(site.registry, agreed, exc)
        raise
