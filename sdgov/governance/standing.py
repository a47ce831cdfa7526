"""Standing approvals: the sign-offs of an unattended release (the demo, scheduled runs), signed in advance.

``approvals.yaml`` names who proposed Φ, who approved it and who approves releases of it, pins the agreement it
covers and the date it lapses, and carries one signature per person::

    proposer: {name: Ada Analyst, role: analyst}
    agreement_approver: {name: Carl Controller, role: controller}
    release_approver: {name: Carl Controller, role: controller}
    agreement_sha256: 3f5c…          # the exact agreement (Φ, budget, generator) this approval covers
    data_sha256_hmac: 9a41…          # the exact data: the controller's keyed commitment to the file's sha256
    valid_until: 2027-05-31          # no release under it after this day (UTC)
    signatures:                      # appended by 'sdgov approvals sign FILE --as NAME --key KEY'
      - sdgov1.…

In a registry whose controller has committed an approvers registry (:mod:`sdgov.governance.controller`), every person
named
must have signed a :class:`~sdgov.identity.statements.StandingStatement` over this file's content (signatures aside),
this
registry's id, the pinned agreement and the lapse date, with the key registered for them in the role the file
gives them: a typed name proves nothing. The release approver approves in advance only candidates whose every
audit check passed (flows/governed.py pauses for a human otherwise). The sign-offs it yields carry the time the
person signed, not the time of the run, and say they come from a standing approval.

**The data is pinned too.** An agreement fixes Φ, the budget and the generator, not the population: a run of a
scheduled deployment pointed at another file of the same schema would otherwise spend ρ and draw noise on data
nobody approved. So the approval names the data by ``data_sha256_hmac``, the controller's keyed commitment to the
file's sha256 (:mod:`sdgov.registry.commitment`, the value a card publishes as ``dataset.sha256_hmac``; an unkeyed
hash of the data would be an oracle on the records). :func:`check_pinned_data` hashes the file — without parsing
it — and refuses any other data before it is read for measurement, before any draw or spend; new data is a new
approval (``sdgov approvals pin``, then every person signs again).

A registry with no approvers registry (a sandbox: ``sdgov init`` alone) has no keys to check names against; there
an unsigned standing approval is accepted and recorded as such (``identity_verified=False``, "typed names, not
verified"), so no reader mistakes it for a signed sign-off.
"""

from __future__ import annotations

import datetime as dt
import hmac
import re
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import TYPE_CHECKING

import yaml
from pydantic import Field

from sdgov.base.atomic import atomic_write_text
from sdgov.base.clock import utcnow
from sdgov.base.errors import SdgovError, SpecError
from sdgov.base.hashing import sha256_file, sha256_json
from sdgov.base.loading import load_model_file, parse_yaml
from sdgov.base.model import Frozen
from sdgov.governance.controller import check_controller_files, registry_id
from sdgov.governance.signoff import Role, SignOff
from sdgov.identity.keys import verifies
from sdgov.identity.names import check_name, same_person
from sdgov.identity.statements import StandingStatement, decode_statement, encode_statement, signed_bytes
from sdgov.registry import commitment
from sdgov.registry.log import Registry
from sdgov.registry.trail import SIGNED_AT

if TYPE_CHECKING:
    from sdgov.governance.approvers import Approvers


class Person(Frozen):
    name: str = Field(min_length=1)
    role: Role


class StandingApproval(Frozen):
    description: str = ""
    proposer: Person
    agreement_approver: Person
    release_approver: Person
    agreement_sha256: str | None = None
    data_sha256_hmac: str | None = None
    valid_until: dt.date | None = None
    signatures: list[str] = Field(default_factory=list)

    def content_sha256(self) -> str:
        """What a signature covers: every field but the signatures themselves (an approval that pins no data hashes
        as it did before the field existed)."""
        body = self.model_dump(mode="json", exclude={"signatures"})
        if body["data_sha256_hmac"] is None:
            del body["data_sha256_hmac"]
        return sha256_json(body)

    def people(self) -> dict[str, Person]:
        """Each distinct person once (the agreement and release approver are often the same controller)."""
        out: dict[str, Person] = {}
        for p in (self.proposer, self.agreement_approver, self.release_approver):
            out.setdefault(p.name, p)
        return out


def load_approvals(path: str | Path) -> StandingApproval:
    """The standing approval in ``path``, refusing (one ``SpecError`` line) a name hiding characters, a proposer who
    is not an analyst, an approver who is not a controller or who is (or looks like) the proposer. Signatures are not
    checked here (:func:`verify_standing`)."""
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


def _today() -> dt.date:
    """Today's date in UTC: the day a lapse date is compared with."""
    return dt.datetime.now(dt.UTC).date()


@dataclass(frozen=True)
class Verified:
    """The outcome of checking a standing approval against a registry: when each person signed (empty: unsigned,
    accepted only in a registry with no approvers registry)."""

    signed_at: dict[str, str]

    @property
    def signed(self) -> bool:
        """Whether anyone signed it (False: an unsigned approval, typed names only)."""
        return bool(self.signed_at)


def _sign_cmd(path: str, name: str) -> str:
    return f"'sdgov approvals sign {path} --as \"{name}\" --key KEY' (with the key registered for them)"


def verify_standing(
    a: StandingApproval,
    agreement_sha256: str,
    where: str,
    registry: Registry,
    in_force: Approvers | None | EllipsisType = ...,
) -> Verified:
    """Refuse (one line) a standing approval that does not cover this agreement today in this registry.
    ``in_force``: the approvers as the caller just checked the controller's files (``...``: checked here)."""
    if a.agreement_sha256 and a.agreement_sha256 != agreement_sha256:
        raise SpecError(
            f"the standing approval covers agreement {a.agreement_sha256[:12]}…, but the spec now hashes to "
            f"{agreement_sha256[:12]}… (Φ, budget or generator changed)",
            where,
            "have the controller approve the new agreement and update 'agreement_sha256'",
        )
    if a.valid_until is not None and _today() > a.valid_until:
        raise SpecError(
            f"the standing approval lapsed on {a.valid_until.isoformat()}",
            where,
            "the data controller renews it (a new 'valid_until', signed again)",
        )
    approvers = check_controller_files(registry) if isinstance(in_force, EllipsisType) else in_force
    if approvers is None:
        if a.signatures:
            raise SpecError(
                "the standing approval is signed, but this registry has no approvers registry to check the keys",
                where,
                "the data controller commits approvers.yaml ('sdgov approvers commit') before signed approvals count",
            )
        return Verified(signed_at={})
    for field, value in (
        ("agreement_sha256", a.agreement_sha256),
        ("data_sha256_hmac", a.data_sha256_hmac),
        ("valid_until", a.valid_until),
    ):
        if value is None:
            raise SpecError(
                f"a standing approval in a registry with an approvers registry must set '{field}'",
                where,
                "pin the agreement, the data and a lapse date ('sdgov approvals pin'), then sign again",
            )
    rid, content = registry_id(registry), a.content_sha256()
    good: dict[str, str] = {}
    for token in a.signatures:
        try:
            st, sig = decode_statement(token, StandingStatement)
        except ValueError:
            raise SpecError("a standing-approval signature is not an sdgov1 token", where, "sign again") from None
        who = approvers.find(st.signer)
        fresh = (st.registry_id, st.approval_sha256, st.agreement_sha256, st.valid_until) == (
            rid,
            content,
            agreement_sha256,
            str(a.valid_until),
        )
        if who is not None and fresh and verifies(who.key(), sig, signed_bytes(st)):
            good[who.name] = st.time
    signed_at: dict[str, str] = {}
    for person in a.people().values():
        who = approvers.find(person.name)
        if who is None or who.role != person.role:
            raise SpecError(
                f"{person.name!r} is not a {person.role} in the approvers registry in force",
                where,
                "name people the data controller registered, in their registered role",
            )
        if who.name not in good:
            raise SpecError(
                f"the standing approval has no valid signature by {person.name!r} for this file, registry, agreement "
                "and date",
                where,
                _sign_cmd(where, person.name),
            )
        signed_at[person.name] = good[who.name]
    return Verified(signed_at=signed_at)


def data_commitment(registry: Registry, data_file: str | Path, create: bool = False) -> str:
    """The controller's keyed commitment to ``data_file`` (HMAC of its sha256 under the registry's commitment
    secret: what a card publishes as ``dataset.sha256_hmac``). The file is hashed, not parsed. ``create``: make the
    secret if this registry has none yet (pinning a first approval); a check never makes one — a new secret would
    refuse every pin, so a missing one is its own one-line error."""
    return commitment.registry_committer(registry, create=create)("sha256", sha256_file(data_file))


def check_pinned_data(
    a: StandingApproval,
    data_file: str | Path,
    where: str,
    registry: Registry,
    schedule_pin: str | None = None,
    in_force: Approvers | None | EllipsisType = ...,
) -> str | None:
    """Refuse (one line) data other than what the standing approval pins — and, for a run of the controller's
    worker, what the schedule's entry in ``worker.yaml`` pins (``schedule_pin``) — before the file is parsed:
    the file's sha256, or None when nothing pins the data (a sandbox registry's approval may leave it out; in a
    registry with an approvers registry :func:`verify_standing` requires it). The caller compares the sha256 with
    the one of the records it then reads, so a file swapped between the two is refused too. ``in_force``: as for
    :func:`verify_standing`."""
    pins = [p for p in (a.data_sha256_hmac, schedule_pin) if p]
    if not pins:
        try:
            governed = (
                check_controller_files(registry) if isinstance(in_force, EllipsisType) else in_force
            ) is not None
        except SdgovError:  # the registry's own problem: the checks that follow report it, in their order
            governed = False
        if governed:
            raise SpecError(
                "a standing approval in a registry with an approvers registry must set 'data_sha256_hmac'",
                where,
                "pin the agreement, the data and a lapse date ('sdgov approvals pin'), then sign again",
            )
        return None
    if not Path(data_file).is_file():  # nothing to read: the data check that follows says so in its own line
        return None
    sha = sha256_file(data_file)
    now = commitment.registry_committer(registry, create=False)("sha256", sha)
    for pin, whose in ((a.data_sha256_hmac, "the standing approval"), (schedule_pin, "the schedule in worker.yaml")):
        if pin and not hmac.compare_digest(now, pin.strip().lower()):
            raise SpecError(
                f"this data is not the data {whose} pins (commitment {now[:8]}…, pinned {pin.strip()[:8]}…)",
                str(data_file),
                "release the approved data; new data needs a new approval (sdgov approvals pin, signed again)",
            )
    return sha


def write_pinned(
    source: str | Path,
    out: str | Path,
    agreement_sha256: str,
    valid_until: dt.date,
    data_sha256_hmac: str | None = None,
) -> Path:
    """Write ``source``'s standing approval to ``out`` pinned to ``agreement_sha256``, to the data committed to by
    ``data_sha256_hmac`` (:func:`data_commitment`) and lapsing after ``valid_until``, without signatures (they
    covered the old content): what each person then signs."""
    a = load_approvals(source).model_copy(
        update={
            "agreement_sha256": agreement_sha256,
            "data_sha256_hmac": data_sha256_hmac,
            "valid_until": valid_until,
            "signatures": [],
        }
    )
    out = Path(out)
    body = a.model_dump(mode="json", exclude={"signatures"}, exclude_none=True)
    out.write_text(yaml.safe_dump(body, sort_keys=False, allow_unicode=True))
    return out


@dataclass(frozen=True)
class PinnedApproval:
    """What ``sdgov approvals pin`` wrote into a standing approval (:meth:`shown`: as ``--json`` prints it), and
    the data file it commits to."""

    file: str
    agreement_sha256: str
    data_sha256_hmac: str
    valid_until: dt.date
    data_file: Path

    def shown(self) -> dict[str, str]:
        """The pin as ``--json`` prints it: the file, the agreement's hash, the data's commitment, the lapse date."""
        return {
            "file": self.file,
            "agreement_sha256": self.agreement_sha256,
            "data_sha256_hmac": self.data_sha256_hmac,
            "valid_until": str(self.valid_until),
        }


def pin_standing(
    registry: Registry, path: str | Path, spec: str | None, data: str | None, valid_until: str | None
) -> PinnedApproval:
    """``sdgov approvals pin``: write the agreement hash of ``spec``, the keyed commitment to its data (``data``, else
    the spec's; the file is hashed, not parsed) and the lapse date ``valid_until`` (YYYY-MM-DD) into the standing
    approval ``path``, its signatures cleared — each person then signs it again."""
    from sdgov.agreement.load import load_spec

    if not (spec and valid_until):
        raise SdgovError(
            "pinning needs the spec and a lapse date", "--spec/--valid-until", "e.g. --valid-until 2027-05-31"
        )
    try:
        lapse = dt.date.fromisoformat(valid_until)
    except ValueError:
        raise SdgovError(f"{valid_until!r} is not a date", "--valid-until", "write it as YYYY-MM-DD") from None
    loaded = load_spec(spec)
    data_file = Path(data).resolve() if data else loaded.data_path
    pin = data_commitment(registry, data_file, create=True)
    sha = loaded.agreement.sha256()
    write_pinned(path, path, sha, lapse, pin)
    return PinnedApproval(str(path), sha, pin, lapse, data_file)


def sign_standing(path: str | Path, registry: Registry, signer: str, private_key_file: str | Path) -> str:
    """``sdgov approvals sign``: append the signer's statement to the file's ``signatures`` (text appended, so
    comments and layout stay as the controller wrote them); return the token."""
    path = Path(path)
    a = load_approvals(path)
    if signer not in {p.name for p in a.people().values()}:
        raise SpecError(f"{signer!r} is not named in this standing approval", str(path), "sign as a person it names")
    if a.agreement_sha256 is None or a.data_sha256_hmac is None or a.valid_until is None:
        raise SpecError(
            "a standing approval is signed only once it pins 'agreement_sha256', 'data_sha256_hmac' and 'valid_until'",
            str(path),
            "the controller pins them: sdgov approvals pin FILE --spec SPEC --valid-until DATE",
        )
    if _today() > a.valid_until:
        raise SpecError(
            f"the standing approval lapsed on {a.valid_until.isoformat()}: a signature would not make it valid",
            str(path),
            "set a new 'valid_until' (today or later; the existing signatures then no longer count) and sign again",
        )
    stmt = StandingStatement(
        registry_id=registry_id(registry),
        approval_sha256=a.content_sha256(),
        agreement_sha256=a.agreement_sha256,
        valid_until=str(a.valid_until),
        signer=signer,
        time=utcnow(),
    )
    token = encode_statement(stmt, private_key_file)
    signed = a.model_copy(update={"signatures": [*a.signatures, token]})
    atomic_write_text(path, _with_signatures(path.read_text(encoding="utf-8"), signed))
    return token


def _with_signatures(text: str, signed: StandingApproval) -> str:
    """``text`` with its top-level ``signatures`` replaced by ``signed``'s, as a block list (comments and layout
    elsewhere kept as the controller wrote them). Whatever form the key had (absent, ``[]``, empty, a block list,
    not last in the file), the result is checked to read back as ``signed``; if it would not, the file is written
    afresh from ``signed`` (its comments lost, never its content): the next signer always finds valid YAML."""
    block = "signatures:\n" + "".join(f"  - {t}\n" for t in signed.signatures)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        spans = [  # a block list ends with its last item (a block node's own end is the next key's start)
            (k.start_mark.index, (v.value[-1] if isinstance(v, yaml.SequenceNode) and v.value else v).end_mark.index)
            for k, v in (root.value if isinstance(root, yaml.MappingNode) else [])
            if isinstance(k, yaml.ScalarNode) and k.value == "signatures"
        ]
    except yaml.YAMLError:
        spans = []
    if len(spans) == 1:
        start, end = spans[0]
        rest = text[end:]
        first, newline, after = rest.partition("\n")
        rest = after if not first.strip() and newline else rest.lstrip(" \t")
        out = text[:start] + block + rest
    else:
        out = text.rstrip("\n") + "\n" + block
    try:
        again = StandingApproval.model_validate(parse_yaml(out))
    except (ValueError, yaml.YAMLError):
        again = None
    if again != signed:
        out = yaml.safe_dump(signed.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    return out


def standing_artifacts(s: SignOff) -> dict[str, str]:
    """What the log records of the standing approval a sign-off applies: the time its person signed it, so the
    trail shows the signature at its own time and the run's event as sdgov applying it."""
    m = re.match(r"standing approval signed (\S+),", s.via)
    return {SIGNED_AT: m.group(1) if m else "unsigned"}


def _via(a: StandingApproval, v: Verified, name: str) -> str:
    if not v.signed:
        return "standing approval, unsigned (typed names, not verified: this registry has no approvers registry)"
    return f"standing approval signed {v.signed_at[name]}, valid until {a.valid_until}"


def agreement_signoffs(
    a: StandingApproval,
    agreement_sha256: str,
    where: str,
    registry: Registry,
    in_force: Approvers | None | EllipsisType = ...,
) -> list[SignOff]:
    """The proposer's and the agreement approver's sign-offs on this agreement, once :func:`verify_standing` accepts
    the approval (else its one-line refusal); each dated when signed, or now when unsigned."""
    v = verify_standing(a, agreement_sha256, where, registry, in_force)
    now = utcnow()
    return [
        SignOff(
            name=p.name,
            role=p.role,
            subject="agreement",
            decision="approve",
            subject_sha256=agreement_sha256,
            time=v.signed_at.get(p.name, now),
            comment="proposed" if p is a.proposer else "",
            via=_via(a, v, p.name),
            identity_verified=v.signed,
        )
        for p in (a.proposer, a.agreement_approver)
    ]


def release_signoff(
    a: StandingApproval, agreement_sha256: str, candidate_sha256: str, where: str, registry: Registry
) -> SignOff:
    """The release approver's advance approval, applied to this candidate now (its time is the application's; the
    ``via`` says when it was signed)."""
    v = verify_standing(a, agreement_sha256, where, registry)  # again: it may have lapsed or been re-keyed since
    p = a.release_approver
    return SignOff(
        name=p.name,
        role=p.role,
        subject="release",
        decision="approve",
        subject_sha256=candidate_sha256,
        time=utcnow(),
        comment="applied automatically: every audit check passed",
        via=_via(a, v, p.name),
        identity_verified=v.signed,
    )
