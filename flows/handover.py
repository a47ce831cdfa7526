"""The record of a release's checked inputs, handed from the command to its flow's first stage in this process.

The command checks the inputs before it starts the orchestrator and the flow's first stage writes the run from what
was checked (:class:`~sdgov.contracts.InputsChecked`). The record carries the data's hash, record count and
fingerprint, so it never travels as a run parameter (Prefect stores those where anyone with its login reads them):
the flow is passed a random ticket instead, which names the record in this process. Not a cache — nothing is found
by its content: a record is handed over once, by name, taken once, and re-verified by hash by the stage. A run
created by anyone else (over Prefect's API, in another process: the controller's worker) holds no ticket this
process issued, and is refused in one line.
"""

from __future__ import annotations

import secrets
from typing import TypeVar

from sdgov.base.errors import SpecError
from sdgov.contracts import InputsChecked
from sdgov.intake.inputs import CheckedProposal

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
