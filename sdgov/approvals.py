"""Sign-offs: who agreed Φ, who approved the release — checked for separation of duties, recorded by hash.

A *standing approval* file supplies them for unattended runs (the demo, scheduled releases)::

    proposer: {name: Ada Analyst, role: analyst}
    agreement_approver: {name: Carl Controller, role: controller}
    release_approver: {name: Carl Controller, role: controller}
    agreement_sha256: null   # optional: pin the exact agreement this approval covers
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from sdgov.contracts import Role, SignOff, utcnow
from sdgov.errors import SpecError
from sdgov.loading import load_model_file
from sdgov.model import Frozen
from sdgov.names import check_name, same_person


class Person(Frozen):
    name: str = Field(min_length=1)
    role: Role


class StandingApproval(Frozen):
    description: str = ""
    proposer: Person
    agreement_approver: Person
    release_approver: Person
    agreement_sha256: str | None = None


def load_approvals(path: str | Path) -> StandingApproval:
    a = load_model_file(StandingApproval, path, SpecError, "standing approval")
    where = str(path)
    for person in (a.proposer, a.agreement_approver, a.release_approver):
        check_name(person.name, where)
    if a.proposer.role != "analyst":
        raise SpecError(f"the proposer must have role 'analyst', not {a.proposer.role!r}", where, "fix 'proposer.role'")
    for key in ("agreement_approver", "release_approver"):
        p: Person = getattr(a, key)
        if p.role != "controller":
            raise SpecError(f"{key} must have role 'controller', not {p.role!r}", where, f"fix '{key}.role'")
        if same_person(p.name, a.proposer.name):
            raise SpecError(
                f"{p.name!r} cannot approve what they proposed (separation of duties: the name is, or looks "
                f"like, the proposer's {a.proposer.name!r})",
                where,
                f"name a different data controller as {key}",
            )
    return a


def agreement_signoffs(a: StandingApproval, agreement_sha256: str, where: str) -> list[SignOff]:
    if a.agreement_sha256 and a.agreement_sha256 != agreement_sha256:
        raise SpecError(
            f"the standing approval covers agreement {a.agreement_sha256[:12]}…, but the spec now hashes to "
            f"{agreement_sha256[:12]}… (Φ, budget or generator changed)",
            where,
            "have the controller approve the new agreement and update 'agreement_sha256'",
        )
    now = utcnow()
    return [
        SignOff(
            name=a.proposer.name,
            role=a.proposer.role,
            subject="agreement",
            decision="approve",
            subject_sha256=agreement_sha256,
            time=now,
            comment="proposed",
        ),
        SignOff(
            name=a.agreement_approver.name,
            role=a.agreement_approver.role,
            subject="agreement",
            decision="approve",
            subject_sha256=agreement_sha256,
            time=now,
        ),
    ]


def release_signoff(a: StandingApproval, candidate_sha256: str) -> SignOff:
    return SignOff(
        name=a.release_approver.name,
        role=a.release_approver.role,
        subject="release",
        decision="approve",
        subject_sha256=candidate_sha256,
        time=utcnow(),
    )
