"""Who signs off what: the roles a registry knows and the sign-off record a release carries.

A :class:`SignOff` is the reader-facing record of one decision (agreement or release) as the card and the
trail show it; the signed statement behind it is :mod:`sdgov.identity.statements`. It sits in the governance
room, below the stage contracts, so approvers and standing approvals need not import the contracts hub.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sdgov.base.model import Frozen

__all__ = ["Role", "SignOff"]

Role = Literal["analyst", "controller", "compliance"]


class SignOff(Frozen):
    """One decision on an agreement or a release, as shown on the card and in the trail."""

    name: str = Field(min_length=1)
    role: Role
    subject: Literal["agreement", "release"]
    decision: Literal["approve", "reject"] = "approve"
    subject_sha256: str = ""
    time: str = ""
    comment: str = ""
    via: str = "standing approval"
    identity_verified: bool | None = None  # True: a signature with the approver's registered key; None: not asked
