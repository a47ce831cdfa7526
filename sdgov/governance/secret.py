"""Rotating the commitment secret: a controller's signed act, logged, never a silent re-creation.

The log commits the id of the secret every release's commitments are made under (:mod:`sdgov.registry.commitment`).
When that secret is lost for good, or replaced and its original cannot be restored, the controller rotates:
``sdgov registry rotate-secret --as CONTROLLER --key KEY`` adopts the secret now on the machine (or makes a new one
where there is none) and logs its id with the previous one (``commitment_secret``, ``how: rotated``), signed by a
controller of the approvers registry in force (a :class:`~sdgov.identity.statements.CommitStatement` naming the
secret's new and previous ids, re-checked by ``sdgov registry verify``). In a sandbox registry (no approvers
registry) the rotation is the registry key's act alone, as its ``sdgov init`` adoption is.

Releases committed under the previous secret stay as published; ``sdgov registry prove`` says for those that they
were committed under another secret (restore its backup to prove them), never that they name other data.
"""

from __future__ import annotations

from pathlib import Path

from sdgov.base.clock import utcnow
from sdgov.base.errors import RegistryError
from sdgov.governance.controller import check_controller_files, controller_signer
from sdgov.identity.keys import key_fingerprint
from sdgov.identity.statements import CommitStatement, encode_statement
from sdgov.registry.commitment import (
    ROTATE,
    SECRET_EVENT,
    load_or_create_secret,
    load_secret,
    logged_secret,
    secret_id,
    secret_path,
)
from sdgov.registry.log import Event, Registry


def rotate(registry: Registry, signer: str | None = None, key: str | Path | None = None) -> Event:
    """Log the secret now on the machine (made if there is none) as the one in force, with the previous id; refused
    (one line, nothing written) while the registry fails verification or its controller files differ from their
    last commit, without a controller's signature where approvers are in force, or when the secret here already is
    the one in force (nothing to rotate: a secret is never replaced behind a working one)."""
    registry.require_existing()
    with registry.lock():
        events = registry.verified_events()
        in_force = check_controller_files(registry, events)
        who = controller_signer(in_force, signer, key, registry, ROTATE)
        store, rid = registry.keys, registry.registry_id()
        logged = logged_secret(events)
        previous = logged[0] if logged else ""
        found = load_secret(store, rid)
        if found is not None and secret_id(found) == previous:
            raise RegistryError(
                "the commitment secret here is the one the log commits to: nothing to rotate",
                str(secret_path(store, rid)),
                "to retire a working secret, move it away (keep it: it proves the releases made under it), then rotate",
            )
        secret = found if found is not None else load_or_create_secret(store, rid)
        new = secret_id(secret)
        artifacts = {"secret_id": new, "previous_secret_id": previous, "how": "rotated"}
        if who is not None:
            name, key_file, approver = who
            stmt = CommitStatement(registry_id=rid, file=SECRET_EVENT, sha256=new, previous_sha256=previous,
                                   signer=name, time=utcnow())  # fmt: skip
            artifacts |= {"statement": encode_statement(stmt, key_file), "key": key_fingerprint(approver.key())}
        return registry.append_locked(
            SECRET_EVENT,
            "sdgov" if who is None else who[0],
            "system" if who is None else "controller",
            comment=f"commitment secret rotated: {previous[:12] or 'none'}… → {new[:12]}…"
            + ("" if found is not None else " (a new secret made here)"),
            artifacts=artifacts,
        )
