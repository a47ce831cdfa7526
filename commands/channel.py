"""``sdgov publish``, ``sdgov verify-release`` and ``sdgov regenerate``: the release channel (sdgov/channel/).

``publish`` tracks and pushes releases into the public release repository the controller configured (releases
made before it was configured, or whose push failed); ``verify-release`` is what a third party runs on a clone of
that repository; ``regenerate`` is the command its ``dvc.yaml`` runs."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from sdgov.commands._common import Parents, command, emit, site_of


def cmd_publish(args: argparse.Namespace) -> int:
    """Exit 0 every release named is committed and pushed, 1 one is not (one line each), 2 bad input
    (:func:`sdgov.channel.publish.publish_named`)."""
    from sdgov.channel.publish import publish_named

    reg = site_of(args).registry
    outcomes = publish_named(reg, args.release_ids, args.all, [Path(s) for s in args.schema or []])
    emit(
        args,
        {"ok": not any(o.error for o in outcomes), "releases": [o.__dict__ for o in outcomes]},
        "\n".join(o.line() for o in outcomes) or "no releases to publish",
    )
    return 1 if any(o.error for o in outcomes) else 0


def cmd_verify_release(args: argparse.Namespace) -> int:
    """Exit 0 every finding holds, 1 one does not, 2 not a release folder, or no key given nor pinned (one line;
    :func:`sdgov.channel.verify.verify_with_pins`). The first release verified with ``--public-key`` pins that key
    for its registry (one line says so)."""
    from sdgov.channel.verify import verify_with_pins

    folder = Path(args.folder)
    pin_file = Path(args.pin_file) if args.pin_file else None
    v = verify_with_pins(folder, args.public_key, pin_file, regenerate=not args.no_regenerate)
    findings, failed, trusted, pinned = v.findings, v.failed, v.trusted, v.pinned
    names = ", ".join(sorted({f.file for f in failed}))
    key_line = f"key: {trusted.key} — {trusted.source}"
    summary = (
        f"verified: release {folder.name}, {len(findings)} checks hold"
        if not failed
        else f"NOT verified: {len(failed)} of {len(findings)} checks fail ({names})"
    )
    emit(
        args,
        {
            "ok": not failed,
            "release": folder.name,
            "key": trusted.key,
            "key_source": trusted.source,
            "pinned": pinned,
            "findings": [f.as_dict() for f in findings],
        },
        "\n".join([key_line, *(f.line() for f in findings), *([pinned] if pinned else []), summary]),
    )
    return 1 if failed else 0


def cmd_regenerate(args: argparse.Namespace) -> int:
    """Write the release folder's synthetic data again, from ψ alone, to ``--out``; exit 0."""
    import shutil
    import tempfile

    from sdgov.channel.regenerate import regenerate

    out = Path(args.out)
    with tempfile.TemporaryDirectory(prefix="sdgov-regenerate-") as tmp:
        synthetic, _ = regenerate(Path(args.folder), Path(tmp))
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(synthetic, out)
    emit(args, {"synthetic": str(out)}, f"regenerated {out} from ψ")
    return 0


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``publish``, ``verify-release`` and ``regenerate``."""
    add = functools.partial(command, subparsers, parents)
    p = add(
        "publish",
        cmd_publish,
        "track, commit and push releases into the public release repository that controller.yaml's "
        "release_channel names (every new release is published so already; this retries, or publishes older ones)",
        [parents.root],
    )
    p.add_argument("release_ids", nargs="*", metavar="RELEASE_ID")
    p.add_argument("--all", action="store_true", help="every release of the registry")
    p.add_argument(
        "--schema",
        action="append",
        help="the public schema a release not yet in the repository was made under (repeatable; matched by hash)",
    )

    v = add(
        "verify-release",
        cmd_verify_release,
        "verify a release folder of a clone of the public release repository (after 'dvc pull'): the registry's "
        "signature, every hash, the in-toto statement, and the synthetic data regenerated from ψ bit for bit",
    )
    v.add_argument("folder", metavar="releases/RELEASE_ID")
    v.add_argument(
        "--public-key",
        help="the registry key's fingerprint (sha256:…) as the data controller publishes it, or the key (ed25519:…); "
        "default: the key pinned when you first verified a release of this registry",
    )
    v.add_argument("--pin-file", help="your pinned keys (default: ~/.config/sdgov/release-keys.json)")
    v.add_argument("--no-regenerate", action="store_true", help="skip regenerating the synthetic data")

    r = add(
        "regenerate", cmd_regenerate, "regenerate a release folder's synthetic data from ψ (what its dvc.yaml runs)"
    )
    r.add_argument("folder", metavar="releases/RELEASE_ID")
    r.add_argument("--out", required=True, help="the synthetic Parquet file to write")
