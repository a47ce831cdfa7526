"""The controller's files: who may approve, what the budgets are, which policy switches hold — signed into the log.

Three files belong to the data controller, never to the proposer:

* ``ROOT/controller.yaml`` — this registry's configuration (optional; defaults below)::

      approvers_file: approvers.yaml          # where the approvers registry lives (relative to ROOT, or absolute)
      allow_unsigned_ui_approvals: false      # sandbox only: unsigned resumes count, recorded as unverified
      release_channel:                        # optional: every release is tracked and pushed here (sdgov/channel/)
        project: ../release-repo              # the public release repository's git + DVC project (relative to ROOT)
        remote: s3://release-bucket/sdgov     # its DVC remote: what `dvc push` fills and readers `dvc pull` from
        remote_name: release                  # (default) the remote's name in the project's .dvc/config
        git_remote: origin                    # optional: a git remote of the project the commit is pushed to

* the approvers registry (``ROOT/approvers.yaml`` unless ``approvers_file`` says otherwise);
* ``ROOT/policy.yaml`` — the release policy (its format is :mod:`sdgov.governance.policy`'s; only its bytes matter
here).

A file takes effect only once a controller has *committed* it: ``sdgov approvers commit --as NAME --key KEY``
appends an ``approvers_changed`` / ``policy_changed`` event holding the file's new sha256 and a
:class:`~sdgov.identity.statements.CommitStatement` signed by a controller of the approvers registry in force before the
change (the very first approvers registry is adopted by a controller listed, with their key, in that file). A
copy of every committed approvers registry is kept by hash under ``ROOT/controller/`` so the signatures can be
re-checked later. While any of the three files differs from its last committed hash — edited, replaced or removed
without a signed commit — no release runs (:func:`check_controller_files`, one line).

The registry id — a random id made once per registry and recorded in the log (``registry_created``) — is what
every signed statement names, so a statement made for one registry means nothing in another.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from pydantic import Field, ValidationError

from sdgov.base.clock import utcnow
from sdgov.base.errors import SdgovError, SpecError
from sdgov.base.hashing import sha256_file
from sdgov.base.model import Frozen
from sdgov.governance.approvers import Approver, Approvers, load_approvers
from sdgov.governance.lifetime import LIFETIME
from sdgov.governance.policy import POLICY_FILE, init_policy
from sdgov.identity.keys import key_fingerprint, load_private_key, verifies
from sdgov.identity.statements import (
    CommitStatement,
    LifetimeStatement,
    SignOffStatement,
    decode_statement,
    encode_statement,
    signed_bytes,
)
from sdgov.registry.commitment import SECRET_EVENT
from sdgov.registry.log import Event, LogBroken, Registry

CONFIG_FILE = "controller.yaml"
APPROVERS = "approvers.yaml"  # the label of the approvers registry in the log, wherever the file lives
SNAPSHOTS = "controller"
INIT = "sdgov init"  # marks the bootstrap adoption of a registry's first policy
COMMIT_EVENTS = {APPROVERS: "approvers_changed", CONFIG_FILE: "policy_changed", POLICY_FILE: "policy_changed"}


class ReleaseChannel(Frozen):
    """Where every release is published as a public release repository (:mod:`sdgov.channel.publish`). Part of the
    signed ``controller.yaml``: an unsigned change of where releases go stops releases like any controller file."""

    project: str = Field(min_length=1)
    remote: str = Field(pattern=r"^[^-\s]")  # never read as an option of the dvc command it is passed to
    remote_name: str = Field(default="release", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    git_remote: str = Field(default="", pattern=r"^([A-Za-z0-9][A-Za-z0-9_.-]*)?$")

    def project_dir(self, root: Path) -> Path:
        """The project directory (relative to the registry root ``root`` unless absolute)."""
        p = Path(self.project)
        return p if p.is_absolute() else root / p


class ControllerConfig(Frozen):
    approvers_file: str = APPROVERS
    allow_unsigned_ui_approvals: bool = False
    release_channel: ReleaseChannel | None = None


def registry_id(registry: Registry) -> str:
    """This registry's id, from its genesis (``registry_created``), creating the registry on first use (an existing
    registry's id is read without the lock: a reader never writes)."""
    if rid := registry.registry_id():
        return rid
    with registry.lock():
        if not registry.registry_id():
            registry.genesis_locked()  # creates the registry: id, key outside it, genesis event
    return registry.registry_id()


def load_config(registry: Registry) -> ControllerConfig:
    """The registry's ``controller.yaml`` (defaults when there is none); an invalid one is a one-line
    ``SpecError``."""
    path = registry.root / CONFIG_FILE
    if not path.exists():
        return ControllerConfig()
    try:
        return ControllerConfig.model_validate(yaml.safe_load(path.read_text()) or {})
    except (ValidationError, yaml.YAMLError, ValueError) as exc:
        raise SpecError(f"invalid controller configuration: {exc}".splitlines()[0], str(path), "fix it") from None


def controller_files(registry: Registry) -> dict[str, Path]:
    """Label → path of each controller file (the approvers registry where the configuration puts it)."""
    approvers = Path(load_config(registry).approvers_file)
    return {
        CONFIG_FILE: registry.root / CONFIG_FILE,
        APPROVERS: approvers if approvers.is_absolute() else registry.root / approvers,
        POLICY_FILE: registry.root / POLICY_FILE,
    }


def _current(registry: Registry) -> dict[str, str]:
    return {k: sha256_file(p) if p.exists() else "" for k, p in controller_files(registry).items()}


def _snapshot(registry: Registry, sha256: str) -> Path:
    return registry.root / SNAPSHOTS / f"approvers-{sha256}.yaml"


def _signer_key_ok(in_force: Approvers | None, proposed: Approvers | None, signer: str):
    """The signer's registered key, if they may commit: a controller of the registry in force (or, for the
    very first approvers registry, of the file being adopted)."""
    book = in_force or proposed
    who = book.find(signer) if book else None
    return who.key() if who is not None and who.role == "controller" else None


def committed(registry: Registry) -> tuple[dict[str, str], Approvers | None]:
    """The last committed hash of each controller file ('' = none/absent) and the approvers registry in force,
    re-checking every commit's signature against the controllers in force when it was made."""
    state, in_force, _ = _commits(registry, registry.verified_events())
    return state, in_force


def _commits(
    registry: Registry, events: list[Event]
) -> tuple[dict[str, str], Approvers | None, list[tuple[int, Approvers]]]:
    """:func:`committed` over verified ``events``, plus each adoption of an approvers registry as (line, registry)."""
    state = dict.fromkeys(COMMIT_EVENTS, "")
    in_force: Approvers | None = None
    adopted: list[tuple[int, Approvers]] = []
    rid = next((e.artifacts.get("registry_id", "") for e in events if e.event == "registry_created"), "")
    for e in events:
        if e.event not in ("approvers_changed", "policy_changed"):
            continue
        label, sha = e.artifacts.get("file", ""), e.artifacts.get("sha256", "")
        if e.artifacts.get("adopted") == INIT:
            # bootstrap: the first policy of a registry that has no approvers registry yet, adopted by `sdgov init`
            # (the event is signed by the registry key like every other; later changes need a controller's commit)
            if label != POLICY_FILE or not sha or state[label] or in_force is not None:
                raise _bad(e, "an unsigned adoption counts only for the first policy, before any approvers registry")
            state[label] = sha
            continue
        try:
            stmt, sig = decode_statement(e.artifacts.get("statement", ""), CommitStatement)
        except ValueError:
            stmt, sig = None, ""
        proposed = None
        if label == APPROVERS and sha:
            snap = _snapshot(registry, sha)
            if not snap.exists() or sha256_file(snap) != sha:
                raise _bad(e, f"the committed approvers registry {sha[:12]}… is missing from {SNAPSHOTS}/")
            proposed = load_approvers(snap)
        key = _signer_key_ok(in_force, proposed, stmt.signer) if stmt else None
        if (
            stmt is None
            or label not in state
            or (stmt.registry_id, stmt.file, stmt.sha256, stmt.previous_sha256) != (rid, label, sha, state[label])
            or key is None
            or not verifies(key, sig, signed_bytes(stmt))
        ):
            raise _bad(e, "its statement is not signed by a controller in force, or does not match the event")
        state[label] = sha
        if label == APPROVERS:
            in_force = proposed
            if proposed is not None:
                adopted.append((e.seq, proposed))
    return state, in_force, adopted


DECISION_EVENTS = {
    "agreement_approved": "agreement",
    "agreement_rejected": "agreement",
    "release_approved": "release",
    "release_rejected": "release",
    "budget_retry_approved": "budget",
    "budget_rejected": "budget",
}


def statement_problems(registry: Registry, events: list[Event]) -> list[str]:
    """Every logged decision recorded as identity-verified must carry a statement that still verifies: signed by
    the named approver's key in the approvers registry in force when they decided, for this registry, run, pause
    (nonce), subject hash and decision. Catches a decision rewritten by whoever holds the registry key (who can
    re-sign the log, but not an approver's statement)."""
    _, _, adopted = _commits(registry, events)
    rid = next((e.artifacts.get("registry_id", "") for e in events if e.event == "registry_created"), "")
    problems: list[str] = []
    for e in events:
        subject = DECISION_EVENTS.get(e.event)
        if subject is None or e.artifacts.get("identity_verified") != "true":
            continue
        book = next((a for seq, a in reversed(adopted) if seq < e.seq), None)
        where = f"log.jsonl line {e.seq + 1}: {e.actor!r}'s {e.event}"
        try:
            stmt, sig = decode_statement(e.artifacts.get("statement", ""), SignOffStatement)
        except ValueError:
            problems.append(f"{where} is marked identity-verified but carries no readable signed statement")
            continue
        who = book.find(stmt.approver) if book is not None else None
        bound = (stmt.registry_id, stmt.run_id, stmt.nonce, stmt.subject, stmt.sha256, stmt.decision) == (
            rid,
            e.artifacts.get("flow_run_id"),
            e.artifacts.get("nonce"),
            subject,
            e.artifacts.get(subject),
            e.decision,
        )
        if who is None or who.name != e.actor or not bound or not verifies(who.key(), sig, signed_bytes(stmt)):
            problems.append(f"{where}: its signed statement does not match the event or its approver's key")
    return problems + _lifetime_problems(events, adopted, rid) + _secret_problems(events, adopted, rid)


def _lifetime_problems(events: list[Event], adopted: list[tuple[int, Approvers]], rid: str) -> list[str]:
    """Every lifetime setting logged as a controller's act (``sdgov budget lifetime`` in a registry with approvers)
    must carry a statement signed by a controller in force then, for this registry, account and value."""
    problems = []
    for e in events:
        if e.event != LIFETIME or e.role != "controller":
            continue  # role 'system': a sandbox registry's unsigned setting, or the raise its signed policy commit made
        book = next((a for seq, a in reversed(adopted) if seq < e.seq), None)
        where = f"log.jsonl line {e.seq + 1}: {e.actor!r}'s {e.event}"
        try:
            stmt, sig = decode_statement(e.artifacts.get("statement", ""), LifetimeStatement)
            rho = json.loads(e.comment)["lifetime_rho"]
        except (ValueError, KeyError, TypeError):
            problems.append(f"{where} is a controller's act but carries no readable signed statement")
            continue
        who = book.find(stmt.signer) if book is not None else None
        bound = (stmt.registry_id, stmt.fingerprint, stmt.lifetime_rho) == (rid, e.artifacts.get("dataset"), rho)
        if (
            who is None
            or who.role != "controller"
            or who.name != e.actor
            or not bound
            or not verifies(who.key(), sig, signed_bytes(stmt))
        ):
            problems.append(f"{where}: its signed statement does not match the event or a controller's key")
    return problems


def _secret_problems(events: list[Event], adopted: list[tuple[int, Approvers]], rid: str) -> list[str]:
    """Every rotation of the commitment secret in a registry with approvers in force must carry a controller's
    statement for this registry and these secret ids (:mod:`sdgov.governance.secret`); a rotation without one is
    the registry key's holder acting alone."""
    problems = []
    for e in events:
        if e.event != SECRET_EVENT or e.artifacts.get("how") != "rotated":
            continue
        book = next((a for seq, a in reversed(adopted) if seq < e.seq), None)
        where = f"log.jsonl line {e.seq + 1}: {e.actor!r}'s rotation of the commitment secret"
        if book is None:
            continue  # a sandbox registry: the registry key's act
        try:
            stmt, sig = decode_statement(e.artifacts.get("statement", ""), CommitStatement)
        except ValueError:
            problems.append(f"{where} carries no controller's signed statement")
            continue
        who = book.find(stmt.signer)
        bound = (stmt.registry_id, stmt.file, stmt.sha256, stmt.previous_sha256) == (
            rid,
            SECRET_EVENT,
            e.artifacts.get("secret_id"),
            e.artifacts.get("previous_secret_id"),
        )
        if who is None or who.role != "controller" or who.name != e.actor or not bound:
            problems.append(f"{where}: its signed statement does not match the event or a controller")
        elif not verifies(who.key(), sig, signed_bytes(stmt)):
            problems.append(f"{where}: its signature does not verify with {who.name!r}'s key")
    return problems


def _bad(e: Event, why: str) -> SdgovError:
    return SdgovError(
        f"controller-file commit #{e.seq} ({e.artifacts.get('file', '?')}) is not valid: {why}",
        "log.jsonl",
        "the log was tampered with: restore it from a verified copy",
    )


def check_controller_files(registry: Registry, events: list[Event] | None = None) -> Approvers | None:
    """Refuse (one line) while the registry fails verification (:meth:`Registry.verified_events`), a controller file
    is a symbolic link, or differs from its last signed commit; else the approvers in force. What ``sdgov registry
    verify`` flags (:func:`controller_problems` beside :meth:`Registry.verify`) stops a release here, before it
    reads or writes anything. ``events``: the log as the caller just verified it under the registry lock (a spend),
    so that every release's files are not hashed a second time."""
    if events is None:
        events = registry.verified_events()
    state, in_force, _ = _commits(registry, events)
    now, paths = _current(registry), controller_files(registry)
    forged = statement_problems(registry, events)
    if forged:
        raise SdgovError(forged[0], "log.jsonl", "the log was rewritten: restore it from a verified copy")
    links = [p.name for p in paths.values() if p.is_symlink()]
    if links:
        raise SdgovError(
            f"controller file(s) are symbolic links (refused): {', '.join(links)}",
            str(registry.root),
            "replace each link by the file itself (the bytes a controller signed), then commit it if it changed",
        )
    changed = [k for k in state if now[k] != state[k]]
    if changed:
        raise SdgovError(
            "controller file(s) changed without a signed commit: "
            + ", ".join(f"{paths[k].name} ({'removed' if not now[k] else now[k][:12] + '…'})" for k in changed),
            str(registry.root),
            "a data controller reviews the change and runs 'sdgov approvers commit --as NAME --key KEY'",
        )
    return in_force


def controller_problems(registry: Registry) -> list[str]:
    """For ``sdgov registry verify``: each controller file (but ``policy.yaml``, which :meth:`Registry.verify`
    checks) that is a symbolic link or differs from its last signed commit, any commit whose signed statement does
    not hold, and any logged decision whose statement does not (:func:`statement_problems`) — one line each, the
    same checks that :func:`check_controller_files` refuses a release on."""
    try:
        events = registry.verified_events()
        state, _, _ = _commits(registry, events)
    except LogBroken:
        return []  # Registry.verify reports the broken log itself
    except SdgovError as exc:
        return [exc.one_line()]
    now, paths = _current(registry), controller_files(registry)
    out = statement_problems(registry, events)
    for label, path in paths.items():
        if label == POLICY_FILE:
            continue
        if path.is_symlink():
            out.append(f"{path.name}: a symbolic link (refused: a controller file must be the file itself)")
        elif now[label] != state[label]:
            what = "removed" if not now[label] else f"changed (now {now[label][:12]}…)"
            out.append(f"{path.name}: {what} without a signed commit ('sdgov approvers commit'); no release runs")
    return out


def controller_signer(
    in_force: Approvers | None, signer: str | None, key: str | Path | None, registry: Registry, act: str
) -> tuple[str, Path, Approver] | None:
    """Who signs a controller's act (``act``: the command, for the one-line refusals): a controller of the approvers
    registry in force, with their own key (checked against the one registered); None in a sandbox registry (no
    approvers registry), where the act is the registry key's alone and ``--as``/``--key`` are refused."""
    if in_force is None:
        if signer or key:
            raise SdgovError(
                "this registry has no approvers registry, so no signature can be checked: the act is the registry "
                "key's alone (as its 'sdgov init' adoption was)",
                str(registry.root),
                "leave out --as and --key, or commit an approvers registry first ('sdgov approvers commit')",
            )
        return None
    if not signer or not key:
        raise SdgovError(
            f"'{act}' in a registry with an approvers registry is a controller's signed act",
            act,
            "add --as NAME --key KEY (a controller listed, with their public key, in the approvers registry)",
        )
    who = in_force.find(signer)
    if who is None or who.role != "controller":
        raise SdgovError(
            f"{signer!r} is not a data controller of the approvers registry in force",
            act,
            "a controller listed (with a public key) in the committed approvers registry must sign",
        )
    if load_private_key(key).public_key().public_bytes_raw() != who.key().public_bytes_raw():
        raise SdgovError(
            f"{key} is not the key registered for {who.name!r}",
            str(key),
            "sign with your own key (the one whose public key the approvers registry lists)",
        )
    return who.name, Path(key), who


def controller_approvers(registry: Registry) -> Approvers:
    """The approvers registry in force (committed and unchanged), or a one-line error."""
    in_force = check_controller_files(registry)
    if in_force is None:
        raise SdgovError(
            "this registry has no committed approvers registry",
            str(controller_files(registry)[APPROVERS]),
            "the data controller writes approvers.yaml (each person with a public key) and runs "
            "'sdgov approvers commit --as NAME --key KEY'",
        )
    return in_force


def commit(registry: Registry, signer: str, private_key_file: str | Path) -> list[Event]:
    """Sign and log every controller file that differs from its last commit (approvers first)."""
    rid = registry_id(registry)
    state, in_force = committed(registry)
    now, paths = _current(registry), controller_files(registry)
    events: list[Event] = []
    for label in (APPROVERS, CONFIG_FILE, POLICY_FILE):
        if now[label] == state[label]:
            continue
        proposed = None
        if label == APPROVERS:
            if not now[label]:
                raise SdgovError(
                    "the approvers registry cannot be removed", str(paths[label]), "restore the file, then commit"
                )
            proposed = load_approvers(paths[label])
        key = _signer_key_ok(in_force, proposed, signer)
        if key is None:
            raise SdgovError(
                f"{signer!r} is not a data controller of the "
                + ("approvers registry being adopted" if in_force is None else "approvers registry in force"),
                str(paths[APPROVERS]),
                "a controller listed (with a public key) in the committed approvers registry must sign",
            )
        stmt = CommitStatement(
            registry_id=rid, file=label, sha256=now[label], previous_sha256=state[label], signer=signer, time=utcnow()
        )
        token = encode_statement(stmt, private_key_file)
        sig = token.rsplit(".", 1)[1]
        if not verifies(key, sig, signed_bytes(stmt)):
            raise SdgovError(
                f"{private_key_file} is not the key registered for {signer!r}",
                str(private_key_file),
                "sign with your own key (the one whose public key the approvers registry lists)",
            )
        if proposed is not None:
            snap = _snapshot(registry, now[label])
            snap.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(paths[label], snap)  # readable by the readers' group once logged (access.protect)
        events.append(
            registry.append(
                COMMIT_EVENTS[label],
                signer,
                "controller",
                comment=f"{label} {'removed' if not now[label] else 'adopted'} ({paths[label]})",
                artifacts={
                    "file": label,
                    "sha256": now[label],
                    "previous_sha256": state[label],
                    "key": key_fingerprint(key),
                    "statement": token,
                    # the ledger and verify read the policy in force from the last event naming it
                    **({POLICY_FILE: now[label]} if label == POLICY_FILE else {}),
                },
            )
        )
        state[label] = now[label]
        if proposed is not None:
            in_force = proposed
    return events


def init(
    registry: Registry, controller: str = "Data Controller", readers: str | None = None
) -> tuple[Path, bool, bool]:
    """``sdgov init``: write the default policy (an existing file is kept) and, in a registry that has no committed
    policy and no approvers registry yet, adopt it in the log — the bootstrap a standing-approval registry (the
    demo, scheduled runs) needs; ``readers``: the group whose members may read the registry's public parts (the log,
    releases, the public key). Returns (path, written now, adopted now). Once an approvers registry is in force, a
    policy counts only through a controller's signed :func:`commit`."""
    path, written = init_policy(registry.root, controller=controller)
    with registry.lock():
        state, in_force = committed(registry)
        sha = sha256_file(path)
        adopted = not (state[POLICY_FILE] or in_force is not None)
        if adopted:
            registry.append_locked(
                COMMIT_EVENTS[POLICY_FILE],
                "sdgov",
                "system",
                comment=f"{POLICY_FILE} adopted by sdgov init ({path})",
                artifacts={
                    "file": POLICY_FILE,
                    "sha256": sha,
                    "previous_sha256": "",
                    "adopted": INIT,
                    POLICY_FILE: sha,
                },
            )
    if readers:
        registry.set_readers_group(readers)
    return path, written, adopted
