"""Test helper: a registry whose controller files are committed, and the people's private keys."""

from __future__ import annotations

from pathlib import Path

import yaml

from sdgov.governance.controller import commit
from sdgov.identity.keys import keygen
from sdgov.registry.log import Registry

PEOPLE = [("Ada Analyst", "analyst"), ("Carl Controller", "controller"), ("Cora Compliance", "compliance")]


def key_path(keys: Path, name: str) -> Path:
    return keys / (name.split()[0].lower() + ".pem")


def write_approvers(root: Path, keys: Path, people=PEOPLE) -> dict[str, Path]:
    """Write ``root/approvers.yaml`` with a fresh key for each person; their private key files by name."""
    root.mkdir(parents=True, exist_ok=True)
    keys.mkdir(parents=True, exist_ok=True)
    paths, entries = {}, []
    for name, role in people:
        paths[name] = key_path(keys, name)
        pub = keygen(paths[name]) if not paths[name].exists() else None
        entries.append({"name": name, "role": role, "public_key": pub or _public(paths[name])})
    (root / "approvers.yaml").write_text(yaml.safe_dump({"approvers": entries}, sort_keys=False, allow_unicode=True))
    return paths


def _public(private: Path) -> str:
    from sdgov.identity.keys import load_private_key, public_line

    return public_line(load_private_key(private).public_key())


def controller_registry(root: Path, keys: Path, people=PEOPLE, signer: str = "Carl Controller") -> dict[str, Path]:
    """An approvers registry and the default policy adopted by a signed commit (what a controller does once per
    registry)."""
    from sdgov.governance.policy import init_policy

    init_policy(root, controller=signer)
    paths = write_approvers(root, keys, people)
    commit(Registry(root), signer, paths[signer])
    return paths


def sign_standing_approval(
    spec: Path, root: Path, keys: dict[str, Path], days: int = 30, data: Path | None = None
) -> Path:
    """Pin the spec's standing approval (``approvals:`` beside it) to its agreement, its data (``data``, else the
    spec's file) and a lapse date, and have the people it names sign it for this registry — what a registry with an
    approvers registry requires."""
    import datetime as dt

    from sdgov.agreement.load import load_spec
    from sdgov.governance.standing import data_commitment, load_approvals, sign_standing, write_pinned

    loaded = load_spec(spec)
    assert loaded.approvals_path is not None
    lapse = dt.date.today() + dt.timedelta(days=days)
    pin = data_commitment(Registry(root), data or loaded.data_path, create=True)
    path = write_pinned(loaded.approvals_path, loaded.approvals_path, loaded.agreement.sha256(), lapse, pin)
    for name in load_approvals(path).people():
        sign_standing(path, Registry(root), name, keys[name])
    return path


def signed_proposal(root: Path, spec: Path, keys: dict[str, Path], who: str = "Ada Analyst") -> str:
    """The analyst's signed proposal of ``spec`` to the registry at ``root`` (what ``sdgov propose --key`` sends)."""
    from sdgov.agreement.load import load_spec
    from sdgov.governance.proposals import sign_proposal

    return sign_proposal(Registry(root).registry_id(), load_spec(spec).agreement.sha256(), who, keys[who])
