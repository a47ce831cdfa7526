"""A release's inputs as checked, for its flow: handed over by the command that checked them in this process, or
checked by the flow itself when nobody did before it (a scheduled run in the controller's worker) — once either way.

The command checks the inputs before it starts the orchestrator, and the flow's first stage writes the run from
what was checked (:class:`~sdgov.contracts.InputsChecked`). The record carries the data's hash, record count and
fingerprint, so it never travels as a run parameter (Prefect stores those where anyone with its login reads them):
the flow is passed a random ticket instead, which names the record in this process. Not a cache — nothing is found
by its content: a record is handed over once, by name, taken once, must be what the run asks for, and is
re-verified by hash by the stage. A run created by anyone else (over Prefect's API, in another process: the
controller's worker) holds no ticket this process issued, and is refused in one line.
"""

from __future__ import annotations

import secrets
from typing import TypeVar

from sdgov.base.errors import SpecError
from sdgov.contracts import InputsChecked
from sdgov.governance.site import Site
from sdgov.intake.inputs import CheckedProposal, check_governed_proposal, check_release_inputs

_handed: dict[str, InputsChecked | CheckedProposal] = {}

Checked = TypeVar("Checked", InputsChecked, CheckedProposal)


def hand_over(checked: InputsChecked | CheckedProposal) -> str:
    """Keep ``checked`` for the flow this process starts next → the ticket to pass it as."""
    ticket = secrets.token_hex(16)
    _handed[ticket] = checked
    return ticket


def taken(ticket: str, kind: type[Checked]) -> Checked:
    """The record handed over as ``ticket`` (of ``kind``), now no longer held; else one line."""
    checked = _handed.pop(ticket, None)
    if not isinstance(checked, kind):
        raise SpecError(
            "the run names checked inputs this process does not hold",
            "run parameters",
            "start a release with 'sdgov release' (or 'sdgov propose'): it checks the inputs it hands its flow",
        )
    return checked


def release_inputs(
    site: Site, spec: str, approvals: str | None, data: str | None, ticket: str | None, pin: str | None = None
) -> InputsChecked:
    """A release under a standing approval: the inputs the command checked (``ticket``), if they are what the run
    asks for; else checked here (``pin``: the data commitment of the worker's schedule entry)."""
    if ticket is None:
        return check_release_inputs(site, spec, approvals, data, pin)
    return taken(ticket, InputsChecked).for_run(site.root, spec, approvals, data)


def proposal_inputs(
    site: Site,
    spec: str,
    proposer: str,
    data: str | None,
    proposal: str | None,
    selection_verified: bool | None,
    ticket: str | None,
) -> CheckedProposal:
    """A governed proposal: as the command checked it (``ticket``), if it is what the run asks for; else checked
    here (``selection_verified``: the Φ review flow's reviewed Φ of a checked, signed draft)."""
    if ticket is None:
        return check_governed_proposal(site, spec, proposer, data, proposal, selection_verified)
    return taken(ticket, CheckedProposal).for_run(site.root, spec, data, proposer, proposal)
