"""Publish releases to the release channel the controller configured (``release_channel`` in ``controller.yaml``).

For each release: its public folder (:mod:`sdgov.channel.folder`) goes to ``releases/<id>/`` of the release
repository, ψ is tracked by ``dvc add``, the repository's ``dvc.yaml`` gains the release's ``generate`` stage (which
reproduces the synthetic data from ψ) and is committed (``dvc commit``: the released file is that stage's output),
the README is written again (:mod:`sdgov.channel.repository`), git commits them, and ``dvc push`` sends ψ and the
synthetic data to the release remote (``git push`` too, where a git remote is named).

The release repository is not the controller's project: only the public folder is ever copied into it, so nothing
in it — its history included — is computed on the confidential data alone. Publishing runs after the release,
controller side; a failure there is reported and leaves the release as it is: ``sdgov publish`` retries (a release
already committed is only pushed again).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from sdgov.base.atomic import atomic_write_text
from sdgov.base.errors import SdgovError
from sdgov.channel import project as repo
from sdgov.channel import repository
from sdgov.channel.folder import AGREEMENT, PSI, SYNTHETIC, read_agreement, write_public_release
from sdgov.governance import controller
from sdgov.registry.log import Registry


@dataclass(frozen=True)
class Published:
    """What publishing one release did: ``committed`` now (False: it was already), ``pushed`` to the remote(s)."""

    release_id: str
    committed: bool
    pushed: bool
    error: str = ""

    def line(self) -> str:
        """One line for the operator."""
        if self.error:
            retry = f"'sdgov publish {self.release_id}' retries"
            return f"release {self.release_id} stands, but publishing it failed: {self.error}; {retry}"
        done = "tracked, committed and pushed" if self.committed else "already tracked; pushed"
        return f"release {self.release_id} {done} to the release repository"


def channel(registry: Registry) -> controller.ReleaseChannel | None:
    """The release channel the registry's ``controller.yaml`` configures, if any."""
    return controller.load_config(registry).release_channel


def schema_for(registry: Registry, release_id: str, schemas: Iterable[Path]) -> Path | None:
    """The first of ``schemas`` that the release's agreement names (by hash), if any."""
    from sdgov.data.schema import load_schema

    want = read_agreement(registry.release_dir(release_id) / AGREEMENT).schema_sha256
    return next((s for s in schemas if load_schema(s).sha256() == want), None)


def publish_named(
    registry: Registry, release_ids: list[str], every: bool, schemas: Iterable[Path] = ()
) -> list[Published]:
    """``sdgov publish``: the releases named (``every``: all of the registry's) published into the release channel
    (:func:`publish_releases`), once the registry and the controller's files as last signed (the channel's
    configuration among them) check; naming none and ``every`` both, or neither, or a release the registry does not
    hold, is one line."""
    registry.require_existing()
    controller.check_controller_files(registry)  # the channel's configuration as the controller signed it
    known = [r["release_id"] for r in registry.releases()]
    if every == bool(release_ids):
        raise SdgovError("name the releases to publish, or --all", "sdgov publish", "sdgov publish --all")
    wanted = known if every else release_ids
    unknown = [r for r in wanted if r not in known]
    if unknown:
        raise SdgovError(f"no release {unknown[0]!r} in this registry", str(registry.root), "see 'sdgov registry list'")
    return publish_releases(registry, wanted, schemas)


def publish_releases(registry: Registry, release_ids: list[str], schemas: Iterable[Path] = ()) -> list[Published]:
    """Track, commit and push each release (see the module's docstring); one :class:`Published` each. The channel
    must be configured (else one ``SdgovError`` line)."""
    ch = channel(registry)
    if ch is None:
        raise SdgovError(
            "no release channel is configured",
            str(registry.root / "controller.yaml"),
            "set release_channel (project, remote) in controller.yaml and commit it ('sdgov approvers commit')",
        )
    project, schemas = ch.project_dir(registry.root), list(schemas)
    outcomes: list[Published] = []
    with repo.locked(project):
        try:
            repo.ensure_project(project, ch.remote_name, ch.remote)
        except SdgovError as exc:
            return [Published(r, False, False, exc.one_line()) for r in release_ids]
        committed: dict[str, bool] = {}
        for rid in release_ids:
            try:
                committed[rid] = _track(registry, project, rid, schemas)
            except SdgovError as exc:
                outcomes.append(Published(rid, False, False, exc.one_line()))
        if committed:
            try:
                _push(project, ch)
                outcomes += [Published(r, c, True) for r, c in committed.items()]
            except SdgovError as exc:
                outcomes += [Published(r, c, False, exc.one_line()) for r, c in committed.items()]
    return outcomes


def _track(registry: Registry, project: Path, release_id: str, schemas: list[Path]) -> bool:
    """The release's folder, tracked and committed in ``project``; False if it already was."""
    folder = f"releases/{release_id}"
    if repo.tracked(project, f"{folder}/manifest.json"):
        return False
    dest = project / folder
    if dest.exists():  # left by a publication that broke before its commit: nothing of it was published
        shutil.rmtree(dest)
    schema = schema_for(registry, release_id, schemas)
    if schema is None:
        raise SdgovError(
            f"release {release_id} is not in the release repository yet, and it needs its public schema",
            str(registry.release_dir(release_id)),
            f"sdgov publish {release_id} --schema SCHEMA (the schema the release was made under)",
        )
    write_public_release(registry, release_id, schema, dest)
    atomic_write_text(dest / ".gitignore", f"/{SYNTHETIC}\n")
    repo.run(project, "dvc", "add", "-q", f"{folder}/{PSI}")
    legacy = _drop_folder_stages(project)  # folders published with a dvc.yaml of their own, before the shared one
    _write_repository_files(registry, project)
    for rid in [release_id, *legacy]:
        repo.run(project, "dvc", "commit", "-f", "-q", f"{repository.DVC_YAML}:{repository.stage_of(rid)}")
    files = [folder, repository.DVC_YAML, repository.DVC_LOCK, repository.README, ".dvc", ".dvcignore"]
    return repo.commit_paths(project, [*files, *(f"releases/{r}" for r in legacy)], f"release {release_id}")


def _drop_folder_stages(project: Path) -> list[str]:
    """Remove the per-folder ``dvc.yaml`` / ``dvc.lock`` of releases published before the repository had one
    ``dvc.yaml`` (their stage moves there: two stages may not write one output); returns those releases."""
    legacy = []
    for rid in repository.release_ids(project):
        folder = project / "releases" / rid
        if (folder / "dvc.yaml").exists():
            (folder / "dvc.yaml").unlink()
            (folder / "dvc.lock").unlink(missing_ok=True)
            legacy.append(rid)
    return legacy


def _write_repository_files(registry: Registry, project: Path) -> None:
    """The repository's ``dvc.yaml`` (a generate stage per release folder) and README, written again."""
    import json

    from sdgov.registry import key

    ids = repository.release_ids(project)
    releases = []
    for rid in ids:
        manifest = json.loads((project / "releases" / rid / "manifest.json").read_text())
        releases.append((rid, str(manifest.get("agreement_sha256", ""))))
    cfg = registry.config()
    fingerprint = key.registry_fingerprint(cfg["public_key"], str(registry.root))
    atomic_write_text(project / repository.DVC_YAML, repository.dvc_yaml(ids))
    atomic_write_text(project / repository.README, repository.readme(releases, cfg["registry_id"], fingerprint))


def _push(project: Path, ch: controller.ReleaseChannel) -> None:
    repo.commit_paths(project, [".dvc", ".dvcignore"], "release channel configuration")
    repo.run(project, "dvc", "push", "-q", "-r", ch.remote_name)
    if ch.git_remote:
        repo.run(project, "git", "push", "-q", ch.git_remote, "HEAD")


def publish_after_release(
    registry: Registry, release_id: str, schema_file: Path, warn: Callable[[str], None], info: Callable[[str], None]
) -> Published | None:
    """The release step's last act: publish the new release where a channel is configured. Never raises: a
    failure is one ``warn`` line, and the release stands."""
    try:
        if channel(registry) is None:
            return None
        [outcome] = publish_releases(registry, [release_id], [schema_file])
    except Exception as exc:  # whatever broke, the release is published in the registry already
        outcome = Published(release_id, False, False, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    (warn if outcome.error else info)(outcome.line())
    return outcome
