"""The demo's people, with keys: the demo plays the analyst and the data controller as a real registry has them.

A standing approval counts only when the people it names signed it with keys the controller registered
(:mod:`sdgov.governance.standing`). So that the demo shows that path, not a shortcut around it, it makes an Ed25519 key
for
each demo person under ``build/demo/keys/`` (beside the registry, never inside it, never in the package), has the
demo controller commit an approvers registry listing them, and has both sign a copy of the shipped standing
approval pinned to the demo's agreement and data and lapsing in 30 days. These are demo identities: anyone holding
``build/demo/keys`` can sign as them, which is why a real registry's keys are each person's own.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import yaml

from sdgov.governance.controller import APPROVERS, check_controller_files, commit, controller_files
from sdgov.governance.standing import data_commitment, sign_standing, write_pinned
from sdgov.identity.keys import keygen, load_private_key, public_line
from sdgov.registry.log import Registry

ANALYST, CONTROLLER = "Ada Analyst", "Carl Controller"
PEOPLE = {ANALYST: "analyst", CONTROLLER: "controller"}


def _key(keys: Path, name: str) -> Path:
    path = keys / f"{name.split()[0].lower()}.pem"
    if not path.exists():
        keygen(path)
    return path


def signed_demo_approval(registry: Registry, shipped: Path, agreement_sha256: str, data: Path) -> Path:
    """A standing approval for this demo registry and the demo's ``data``, signed by the demo people; returns its
    path, beside the data."""
    work = data.parent
    keys = {name: _key(work / "keys", name) for name in PEOPLE}
    if check_controller_files(registry) is None:  # first demo run here: the controller registers the two keys
        entries = [
            {"name": n, "role": r, "public_key": public_line(load_private_key(keys[n]).public_key())}
            for n, r in PEOPLE.items()
        ]
        path = controller_files(registry)[APPROVERS]
        path.write_text(yaml.safe_dump({"description": "sdgov demo identities", "approvers": entries}, sort_keys=False))
        commit(registry, CONTROLLER, keys[CONTROLLER])
    lapse = dt.datetime.now(dt.UTC).date() + dt.timedelta(days=30)
    pin = data_commitment(registry, data, create=True)
    out = write_pinned(shipped, work / "approvals.yaml", agreement_sha256, lapse, pin)
    for name in PEOPLE:
        sign_standing(out, registry, name, keys[name])
    return out
