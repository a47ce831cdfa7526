"""One public release folder, ``releases/<id>/`` of the release repository: what a third party needs to verify a
release and reproduce its synthetic data, and nothing computed on the confidential data.

It holds the registry's release as published (every file its manifest lists, and the manifest) and three files
the registry keeps elsewhere:

* ``released.json`` — the release's ``released`` event, exactly as the log holds it: signed by the registry key, it
  names the manifest's sha256 and every released file's, and its ``prev`` is the log head the card names;
* ``registry.json`` — the registry's id and public key (what the genesis event names; not where the private key is);
* ``schema.json`` — the public schema in the canonical form whose sha256 the agreement records: with ψ, the
  agreement's generator settings and its public seed it reproduces the synthetic data bit for bit.

Everything in it is public by construction: the released files passed the public-card checks, the event holds
hashes of public files and names, and the schema was declared before any data was read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sdgov.agreement.spec import Agreement
from sdgov.artifacts import load_agreement
from sdgov.base.atomic import atomic_write_bytes
from sdgov.base.errors import RegistryError
from sdgov.base.hashing import canonical_json
from sdgov.contracts import ArtifactRef
from sdgov.data.schema import Schema, load_schema
from sdgov.registry import log
from sdgov.registry.log import Registry

RELEASED = "released.json"
REGISTRY = "registry.json"
SCHEMA = "schema.json"
SYNTHETIC = "synthetic.parquet"
PSI = "artifacts/measurements.json"
AGREEMENT = "artifacts/agreement.json"
MODEL_INFO = "artifacts/model_info.json"
CARD = "card.json"
ADDED = frozenset({RELEASED, REGISTRY, SCHEMA})
"""The files the channel adds beside the registry's release."""
DVC_FILES = frozenset({".gitignore", "artifacts/.gitignore", f"{PSI}.dvc"})
"""The release repository's own bookkeeping in the folder: what DVC ignores for git, and the .dvc file of ψ (the
generate stage is the repository's, :mod:`sdgov.channel.repository`)."""


def read_agreement(path: Path) -> Agreement:
    """The agreement of a release's ``artifacts/agreement.json`` (its ``agreement`` section, validated); ValueError
    or OSError where it is not one."""
    return load_agreement(ArtifactRef.of("agreement", path))


def released_event_line(registry: Registry, release_id: str) -> bytes:
    """The ``released`` event of ``release_id`` as the log holds it (its signed bytes), from a verified log."""
    for e in registry.verified_events():
        if e.event == "released" and e.release_id == release_id:
            return canonical_json(e.model_dump()) + b"\n"
    raise RegistryError(f"no release {release_id!r} in the log", str(registry.log_path), "see 'sdgov registry list'")


def canonical_schema(schema: Schema) -> bytes:
    """The schema as the canonical JSON its agreement hash covers (``Schema.sha256``)."""
    return json.dumps(schema.model_dump(mode="json"), indent=2, sort_keys=True).encode() + b"\n"


def write_public_release(registry: Registry, release_id: str, schema_file: Path, dest: Path) -> None:
    """Write the public folder of ``release_id`` at ``dest`` (which must not exist). The schema must be the one the
    release's agreement names (by hash), else a one-line error and nothing written."""
    src = registry.release_dir(release_id)
    manifest = registry.manifest(release_id)
    schema = load_schema(schema_file)
    agreement = read_agreement(src / AGREEMENT)
    if schema.sha256() != agreement.schema_sha256:
        raise RegistryError(
            f"this schema is not the one release {release_id} was made under (its agreement names schema "
            f"{agreement.schema_sha256[:12]}…)",
            str(schema_file),
            "give the release's public schema with --schema",
        )
    event = released_event_line(registry, release_id)
    cfg = registry.config()
    dest.mkdir(parents=True)
    try:
        for name in [*sorted(manifest["files"]), log.MANIFEST]:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / name, dest / name)
        atomic_write_bytes(dest / RELEASED, event)
        public = {"registry_id": cfg.get("registry_id", ""), "public_key": cfg.get("public_key", "")}
        atomic_write_bytes(dest / REGISTRY, json.dumps(public, indent=2, sort_keys=True).encode() + b"\n")
        atomic_write_bytes(dest / SCHEMA, canonical_schema(schema))
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
