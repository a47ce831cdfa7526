"""Verify one public release folder from the outside: no registry, no confidential data, no private key.

After ``git clone`` of the release repository and ``dvc pull``, ``sdgov verify-release releases/<id>`` checks, one
finding per line:

* the ``released`` event (``released.json``) is signed by the registry key the reader trusts — given with
  ``--public-key`` or pinned before (:mod:`sdgov.channel.pins`), never merely the one ``registry.json`` names — and
  its ``prev`` is the log head the manifest and the card name;
* the manifest is the one that event names, and every file it lists has the sha256 it and the event record (the
  card included); no file is there that neither the manifest nor the repository's DVC bookkeeping explains;
* the card names this release, its agreement, ψ (sha256 and DVC md5), the approved candidate and the registry key's
  fingerprint;
* the in-toto statement lists exactly the released files with their hashes, and the manifest's log head;
* ψ, the agreement and the public schema agree with each other (the schema by the hash the agreement records);
* in a release repository, its ``dvc.yaml`` is the generate stage sdgov writes and ``dvc.lock`` records the
  released files' md5s (what ``dvc pull`` and ``dvc repro`` check against);
* the synthetic data and the model description are regenerated from ψ, bit for bit.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from sdgov.base.errors import SdgovError
from sdgov.base.hashing import canonical_json, md5_file, sha256_file
from sdgov.channel.folder import (
    ADDED,
    AGREEMENT,
    CARD,
    DVC_FILES,
    MODEL_INFO,
    PSI,
    REGISTRY,
    RELEASED,
    SCHEMA,
    SYNTHETIC,
    read_agreement,
)
from sdgov.channel.pins import Trust
from sdgov.channel.repository import DVC_LOCK, DVC_YAML, STAGE, dvc_yaml, stage_of
from sdgov.registry import attestation, log
from sdgov.registry import key as registry_key
from sdgov.registry.log import Event

_MANIFEST, _STATEMENT = log.MANIFEST, attestation.FILE


@dataclass(frozen=True)
class Finding:
    """One line of the verdict: which file, what was checked, whether it holds."""

    ok: bool
    file: str
    what: str

    def line(self) -> str:
        """``ok   FILE: WHAT`` or ``FAIL FILE: WHAT``."""
        return f"{'ok  ' if self.ok else 'FAIL'} {self.file}: {self.what}"

    def as_dict(self) -> dict[str, Any]:
        """For ``--json``."""
        return asdict(self)


class _Findings(list[Finding]):
    def check(self, ok: bool, file: str, what: str, failed: str | None = None) -> bool:
        self.append(Finding(ok, file, what if ok else (failed or what)))
        return ok


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def registry_of(folder: Path) -> str:
    """The registry id a release folder names (``registry.json``; unauthenticated: what the pin is looked up by)."""
    if not folder.is_dir():
        raise SdgovError("not a release folder", str(folder), "give releases/<id> of a clone of the release repository")
    reg = _json(folder / REGISTRY)
    return str(reg.get("registry_id", "")) if isinstance(reg, dict) else ""


@dataclass(frozen=True)
class ReleaseVerified:
    """``sdgov verify-release``'s answer: every finding, the key they were checked against (and where it came from),
    and the line saying the key was pinned now (empty: it was not)."""

    findings: list[Finding]
    trusted: Trust
    pinned: str

    @property
    def failed(self) -> list[Finding]:
        """The findings that do not hold."""
        return [f for f in self.findings if not f.ok]


def verify_with_pins(
    folder: Path, public_key: str | None, pin_file: Path | None = None, regenerate: bool = True
) -> ReleaseVerified:
    """``sdgov verify-release``: every finding about ``folder`` against the key the reader gives (``public_key``, a
    fingerprint or the key) or the one pinned in ``pin_file`` (default :func:`~sdgov.channel.pins.default_pin_file`)
    for its registry — never the folder's own; the first release that verifies with a given key pins it. No key given
    nor pinned, or not a release folder, is one line."""
    from sdgov.channel.pins import default_pin_file, pin, trust

    pins = pin_file or default_pin_file()
    registry_id = registry_of(folder)
    trusted = trust(registry_id, public_key, pins)
    findings = verify_release(folder, trusted, regenerate=regenerate)
    ok = all(f.ok for f in findings)
    named = str(_json(folder / REGISTRY)["public_key"]) if trusted.pinned_now and ok else ""
    pinned = pin(pins, registry_id, named) if named else ""
    return ReleaseVerified(findings, trusted, pinned)


def verify_release(folder: Path, trusted: Trust, regenerate: bool = True) -> list[Finding]:
    """Every finding about ``folder`` (see the module's docstring) against the ``trusted`` registry key; a bad folder
    is one ``SdgovError``."""
    if not folder.is_dir():
        raise SdgovError("not a release folder", str(folder), "give releases/<id> of a clone of the release repository")
    f = _Findings()
    event = _signed_event(folder, trusted, f)
    manifest = _manifest(folder, event, f)
    if manifest is None:
        return f
    files: dict[str, Any] = manifest["files"]
    _guarded(f, _MANIFEST, _files, folder, files, event, f)
    _guarded(f, CARD, _card, folder, manifest, f)
    _guarded(f, _STATEMENT, _statement, folder, manifest, f)
    _guarded(f, "dvc.yaml", _dvc_files, folder, f)
    consistent = _guarded(f, AGREEMENT, _inputs, folder, manifest, f)
    if regenerate and consistent:
        _regenerated(folder, files, f)
    elif regenerate:
        f.check(False, SYNTHETIC, "", "not regenerated: ψ, the agreement or the schema is not as released")
    return f


def _guarded(f: _Findings, file: str, check: Callable[..., Any], *args: Any) -> Any:
    """Run one check; a file whose JSON has another shape than a release's (an edited one: its hash fails too) is
    one finding naming it, never a traceback."""
    try:
        return check(*args)
    except (AttributeError, KeyError, OSError, TypeError, ValueError, yaml.YAMLError):
        f.check(False, file, "", "missing, or not shaped as a release's file (edited)")
        return None


def _signed_event(folder: Path, trusted: Trust, f: _Findings) -> Event | None:
    """The ``released`` event, if its registry signature verifies under the trusted key (which the key
    ``registry.json`` names must be: that file proves nothing by itself)."""
    raw_reg = _json(folder / REGISTRY)
    reg = raw_reg if isinstance(raw_reg, dict) else {}
    text = str(reg.get("public_key", ""))
    if not f.check(
        trusted.matches(text),
        REGISTRY,
        f"names the registry key you trust ({trusted.source})",
        f"names another registry key ({text[:24]}…) than the one you trust ({trusted.source}): a re-signed copy",
    ):
        f.check(False, RELEASED, "", "its signature is not checked against a key you do not trust")
        return None
    key = registry_key.parse_registry_public_key(text, REGISTRY)
    raw = (folder / RELEASED).read_bytes() if (folder / RELEASED).is_file() else b""
    try:
        event = Event.model_validate_json(raw)
    except ValueError:
        f.check(False, RELEASED, "", "missing or not a log event")
        return None
    well_formed = canonical_json(event.model_dump()) + b"\n" == raw and event.hash == event.body_hash()
    signed = well_formed and registry_key.signature_ok(key, log.EVENT_DOMAIN, event.hash.encode(), event.sig)
    f.check(
        signed and event.event == "released",
        RELEASED,
        f"'released' event {event.seq} of registry {reg.get('registry_id', '?')} is signed by the key you trust",
        "the registry signature does not verify (edited, or signed by another key)",
    )
    return event if signed else None


def _manifest(folder: Path, event: Event | None, f: _Findings) -> dict[str, Any] | None:
    path = folder / _MANIFEST
    manifest = _json(path)
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        f.check(False, _MANIFEST, "", "missing or unreadable")
        return None
    named = event is not None and event.artifacts.get(_MANIFEST) == sha256_file(path)
    f.check(named, _MANIFEST, "is the manifest the signed event names", "sha256 differs from the signed event's")
    head = manifest.get("log_head") if isinstance(manifest.get("log_head"), dict) else {}
    if event is not None:
        f.check(
            head.get("hash") == event.prev and head.get("sequence") == event.seq - 1,
            _MANIFEST,
            f"its log head (event {head.get('sequence')}, {str(head.get('hash'))[:12]}…) is the signed event's prev",
            "its log head is not the prev of the signed 'released' event",
        )
        reg = _json(folder / REGISTRY)
        f.check(
            isinstance(reg, dict) and reg.get("registry_id") == head.get("registry_id"),
            REGISTRY,
            f"names registry {head.get('registry_id')}, as the manifest's log head does",
            "names another registry than the manifest's log head",
        )
        f.check(
            manifest.get("release_id") == event.release_id == folder.name,
            _MANIFEST,
            f"release {event.release_id}",
            f"names release {manifest.get('release_id')!r}, the event {event.release_id!r}, the folder {folder.name!r}",
        )
    return manifest


def _files(folder: Path, files: dict[str, Any], event: Event | None, f: _Findings) -> None:
    signed = event.artifacts if event is not None else {}
    for name, meta in sorted(files.items()):
        p = folder / name
        if not p.is_file() or p.is_symlink():
            f.check(False, name, "", "missing (run 'dvc pull' for ψ and the synthetic data)")
            continue
        sha = sha256_file(p)
        f.check(
            sha == meta.get("sha256") == signed.get(name),
            name,
            f"sha256 {sha[:12]}… as in the manifest and the signed event",
            f"sha256 {sha[:12]}… differs from the manifest's / the signed event's (modified)",
        )
    listed = set(files) | {_MANIFEST} | ADDED | DVC_FILES
    for p in sorted(folder.rglob("*")):
        name = p.relative_to(folder).as_posix()
        if p.is_file() and name not in listed:
            f.check(False, name, "", "not in the manifest (added)")


def _card(folder: Path, manifest: dict[str, Any], f: _Findings) -> None:
    card = _json(folder / CARD)
    if not isinstance(card, dict):
        f.check(False, CARD, "", "unreadable")
        return
    psi = folder / PSI
    head = (card.get("provenance") or {}).get("log_head") or {}
    release = [s for s in card.get("signoffs", []) if s.get("subject") == "release" and s.get("decision") == "approve"]
    facts = {
        "release id": card.get("release_id") == manifest.get("release_id"),
        "log head": head == manifest.get("log_head"),
        "agreement": card.get("agreement_sha256") == manifest.get("agreement_sha256"),
        "ψ sha256": psi.is_file() and card.get("psi_sha256") == sha256_file(psi),
        "ψ DVC md5": psi.is_file() and (card.get("dataset") or {}).get("measurements_dvc_md5") == md5_file(psi),
        "release sign-off": any(s.get("subject_sha256") == manifest.get("candidate_sha256") for s in release),
        "registry key": _card_key(card, folder),
    }
    wrong = [k for k, ok in facts.items() if not ok]
    f.check(
        not wrong,
        CARD,
        "names this release, its log head, agreement, ψ and the approved candidate",
        f"does not match the release on: {', '.join(wrong)}",
    )


def _card_key(card: dict[str, Any], folder: Path) -> bool:
    """The card states the fingerprint of the registry key that signed the release (the one ``registry.json`` names,
    checked against the trusted key above)."""
    from sdgov.identity.keys import decode_public_key, published_fingerprint

    reg = _json(folder / REGISTRY)
    key = decode_public_key(str(reg.get("public_key", "")), ssh=False) if isinstance(reg, dict) else None
    return key is not None and card.get("registry_key_fingerprint") == published_fingerprint(key)


def _statement(folder: Path, manifest: dict[str, Any], f: _Findings) -> None:
    st = _json(folder / _STATEMENT)
    if not isinstance(st, dict):
        f.check(False, _STATEMENT, "", "unreadable")
        return
    files = {k: v.get("sha256") for k, v in manifest["files"].items() if k != _STATEMENT}
    subjects = {s.get("name"): (s.get("digest") or {}).get("sha256") for s in st.get("subject", [])}
    build = (st.get("predicate") or {}).get("buildDefinition") or {}
    deps = {d.get("name"): (d.get("digest") or {}).get("sha256") for d in build.get("resolvedDependencies", [])}
    facts = {
        "type": st.get("_type") == attestation.STATEMENT_TYPE and st.get("predicateType") == attestation.PREDICATE_TYPE,
        "subjects": subjects == files,
        "release id": (build.get("externalParameters") or {}).get("release_id") == manifest.get("release_id"),
        "log head": (build.get("internalParameters") or {}).get("registry_log_head") == manifest.get("log_head"),
        "agreement": deps.get("agreement (Φ)") == manifest.get("agreement_sha256"),
        "candidate": deps.get("approved candidate") == manifest.get("candidate_sha256"),
    }
    wrong = [k for k, ok in facts.items() if not ok]
    f.check(
        not wrong,
        _STATEMENT,
        f"in-toto statement lists the {len(files)} released files by sha256, the agreement, candidate and log head",
        f"in-toto statement does not match the release on: {', '.join(wrong)}",
    )


def _dvc_files(folder: Path, f: _Findings) -> None:
    """The release repository's DVC bookkeeping: its ``dvc.yaml`` is exactly the generate stage sdgov writes, for this
    release among others (``dvc repro`` runs nothing else), and the md5s that ``dvc pull`` checks the pulled ψ and
    synthetic data against (``dvc.lock``, ψ's ``.dvc`` file) are theirs."""
    project = folder.parent.parent
    stage = project / DVC_YAML
    if not (folder / f"{PSI}.dvc").exists():
        return  # a release folder outside a release repository (e.g. the registry's own)
    listed = (((yaml.safe_load(stage.read_text()) or {}).get("stages") or {}).get(STAGE) or {}).get("foreach", [])
    f.check(
        stage.read_text() == dvc_yaml(listed) and folder.name in listed,
        DVC_YAML,
        f"is the generate stage sdgov writes, this release's among {len(listed)}",
        "differs from the generate stage sdgov writes, or lacks this release: do not run 'dvc repro' on it",
    )
    md5 = {n: md5_file(folder / n) for n in (PSI, SYNTHETIC, AGREEMENT, SCHEMA) if (folder / n).is_file()}
    [psi_out] = yaml.safe_load((folder / f"{PSI}.dvc").read_text())["outs"]
    f.check(
        psi_out["md5"] == md5.get(PSI) and psi_out["path"] == Path(PSI).name,
        f"{PSI}.dvc",
        "the md5 DVC pulls ψ by is ψ's",
        "its md5 is not ψ's (DVC would fetch another file)",
    )
    lock = yaml.safe_load((project / DVC_LOCK).read_text())["stages"][stage_of(folder.name)]
    recorded = {d["path"]: d["md5"] for d in [*lock["deps"], *lock["outs"]]}
    f.check(
        recorded == md5,
        DVC_LOCK,
        "the md5s DVC pulls and reproduces by are those of ψ, the agreement, the schema and the synthetic data",
        "its md5s are not those of the released files",
    )


def _inputs(folder: Path, manifest: dict[str, Any], f: _Findings) -> bool:
    """ψ, the agreement and the schema: each readable and bound to the others by hash."""
    from sdgov.agreement.spec import Agreement
    from sdgov.data.psi import MeasurementSet
    from sdgov.data.schema import Schema

    agreement: Agreement | None
    try:
        agreement = read_agreement(folder / AGREEMENT)
        a_ok = agreement.sha256() == manifest.get("agreement_sha256")
    except (OSError, ValueError, KeyError, TypeError):
        agreement, a_ok = None, False
    f.check(a_ok, AGREEMENT, "its hash is the agreement the release was signed under", "not the signed agreement")
    try:
        schema_ok = agreement is not None and Schema.model_validate(_json(folder / SCHEMA)).sha256() == (
            agreement.schema_sha256
        )
    except ValueError:
        schema_ok = False
    f.check(schema_ok, SCHEMA, "the public schema the agreement names (by hash)", "not the schema the agreement names")
    try:
        mset = MeasurementSet.model_validate(_json(folder / PSI))
        psi_ok = mset.agreement_sha256 == manifest.get("agreement_sha256") and agreement is not None
        psi_ok = psi_ok and mset.schema_sha256 == agreement.schema_sha256  # type: ignore[union-attr]
    except ValueError:
        psi_ok = False
    f.check(psi_ok, PSI, "ψ was measured under this agreement and schema", "ψ is unreadable or names another agreement")
    return a_ok and schema_ok and psi_ok


def _regenerated(folder: Path, files: dict[str, Any], f: _Findings) -> None:
    from sdgov.channel.regenerate import regenerate

    with tempfile.TemporaryDirectory(prefix="sdgov-verify-") as tmp:
        try:
            synthetic, model_info = regenerate(folder, Path(tmp))
        except SdgovError as exc:
            f.check(False, SYNTHETIC, "", f"regeneration from ψ failed: {exc.one_line()}")
            return
        for name, path in ((SYNTHETIC, synthetic), (MODEL_INFO, model_info)):
            sha = sha256_file(path)
            f.check(
                sha == (files.get(name) or {}).get("sha256"),
                name,
                f"regenerated from ψ + schema + generator settings + seed, bit for bit ({sha[:12]}…)",
                f"regenerated from ψ, it differs from the released file ({sha[:12]}…)",
            )
