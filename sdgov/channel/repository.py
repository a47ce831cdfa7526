"""The release repository's own files, beside its ``releases/<id>/`` folders: the one ``dvc.yaml`` whose generate
stage reproduces every release's synthetic data from its ψ (so a plain ``dvc repro`` in a clone works), and the
README a stranger reads first: what the repository is, how to verify a release, how to reproduce it.

Both are rewritten from the list of release folders each time a release is published, and hold nothing but public
facts: release ids, agreement hashes, the registry's id and its public key's fingerprint.
"""

from __future__ import annotations

from pathlib import Path

from sdgov.channel.folder import AGREEMENT, PSI, SCHEMA, SYNTHETIC

DVC_YAML = "dvc.yaml"
DVC_LOCK = "dvc.lock"
README = "README.md"
STAGE = "generate"


def stage_of(release_id: str) -> str:
    """The name DVC gives a release's generate stage (``dvc.yaml:generate@<id>``, its key in ``dvc.lock``)."""
    return f"{STAGE}@{release_id}"


def dvc_yaml(release_ids: list[str]) -> str:
    """The repository's ``dvc.yaml``: one generate stage per release folder, run in the folder, from ψ, the
    agreement and the public schema alone."""
    items = "".join(f"      - {r}\n" for r in release_ids)
    return f"""\
# Every release's synthetic data, reproduced from ψ alone: `dvc repro` (after `dvc pull`), or one release with
# `dvc repro {DVC_YAML}:{STAGE}@<release id>`. `sdgov verify-release releases/<release id>` also checks every hash
# and the registry's signature. The generator sees ψ, the public schema and the agreement's generator settings, row
# count and public seed; no confidential input exists in this repository. Written by sdgov: do not edit.
stages:
  {STAGE}:
    foreach:
{items}    do:
      wdir: releases/${{item}}
      cmd: sdgov regenerate . --out {SYNTHETIC}
      deps:
        - {PSI}
        - {AGREEMENT}
        - {SCHEMA}
      outs:
        - {SYNTHETIC}
"""


def readme(releases: list[tuple[str, str]], registry_id: str, fingerprint: str) -> str:
    """The repository's README: ``releases`` as (release id, agreement hash), the registry's id and its key's
    published fingerprint."""
    listed = "\n".join(f"- [`{rid}`](releases/{rid}/card.md) — agreement hash `{sha[:16]}…`" for rid, sha in releases)
    return f"""\
# Synthetic-data releases

Each folder under `releases/` is one synthetic-data release made with [sdgov](https://pypi.org/project/sdgov/) by
the data controller whose registry is `{registry_id}`: synthetic records generated **only** from a set of
agreed statistical tables measured on confidential data with calibrated noise (ψ), and everything needed to check
it. Nothing in this repository is a record, a count or a hash of the confidential data.

A release folder holds:

- `card.md`, `card.html`, `card.json` — the generator card: what was preserved and what was not, the privacy
  statement (ε and δ by the zCDP bound and by privacy-loss-distribution accounting, for the release and for the
  dataset over all its releases), the audits, the sign-offs and the registry key's fingerprint;
- `synthetic.parquet` — the synthetic data (fetched by `dvc pull`);
- `artifacts/measurements.json` — ψ, the noisy tables the generator was fitted to (fetched by `dvc pull`),
  `artifacts/agreement.json`, `artifacts/privacy_plan.json`, `artifacts/privacy_statement.json`, the provenance
  and an in-toto statement;
- `released.json` — the registry's signed `released` event, `registry.json` — the registry's id and public key,
  `schema.json` — the public schema.

## The controller's key

Releases are signed by the registry key whose fingerprint is

    {fingerprint}

**Do not take that line from here**: whoever can change this repository can change it too. Compare it with the
fingerprint the data controller publishes elsewhere (its website, its release notes); every card states it as well.

## How to verify a release

    git clone <this repository> && cd <it>
    dvc pull                                  # ψ and the synthetic data, from the release remote
    sdgov verify-release releases/<release id> --public-key <the fingerprint the controller publishes>

(with sdgov installed: the version each card names under *Provenance*). `verify-release` checks the registry's
signature against the key you give (never merely the one `registry.json`
names), every file's hash, the card, the in-toto statement and the DVC files, and regenerates the synthetic data
from ψ bit for bit. The first release it verifies pins the key in your own `~/.config/sdgov/release-keys.json`;
later verifications of this registry use the pinned key, and a release signed by another key fails.

## How to reproduce the synthetic data

    dvc repro                                 # every release, from its ψ alone (nothing changes: it is the same)
    dvc repro -f {DVC_YAML}:{STAGE}@<release id>   # one release, forced to run

## Releases

{listed}
"""


def release_ids(project: Path) -> list[str]:
    """The release folders of the repository, in name order."""
    folder = project / "releases"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
