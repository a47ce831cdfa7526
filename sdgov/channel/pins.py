"""Which registry key a reader trusts: the key they pinned, never the one a release folder names.

A release folder carries its registry's public key (``registry.json``), but whoever can rewrite the folder can
rewrite that too and re-sign everything with a key of their own. So ``sdgov verify-release`` checks the signature
against a key the reader obtained out of band — the fingerprint the data controller publishes (``sdgov init``
prints it; every card states it), given with ``--public-key`` — or against the key pinned by the first release the
reader verified with one, kept in their own pin file (``~/.config/sdgov/release-keys.json`` by default, never in the
repository), one entry per registry id. A folder naming another key than the pinned one fails; a registry never
pinned and no ``--public-key`` is refused, with the one line that says how to pin.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from sdgov.base.atomic import atomic_write_text
from sdgov.base.clock import utcnow
from sdgov.base.errors import SdgovError
from sdgov.identity.keys import decode_public_key, published_fingerprint

FINGERPRINT = "sha256:"


def default_pin_file() -> Path:
    """The reader's own pin file: ``$XDG_CONFIG_HOME/sdgov/release-keys.json`` (``~/.config`` when unset)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sdgov" / "release-keys.json"


@dataclass(frozen=True)
class Trust:
    """The key a verification checks against: a public key (``ed25519:…``) or its fingerprint (``sha256:…``), and
    where it came from, in words."""

    key: str
    source: str
    pinned_now: bool = False  # given with --public-key for a registry not pinned yet: pinned once it verifies

    def matches(self, public_key: str) -> bool:
        """Whether ``public_key`` (the folder's ``ed25519:…``) is this key, or has this fingerprint."""
        parsed = decode_public_key(public_key, ssh=False)
        if parsed is None:
            return False
        if self.key.startswith(FINGERPRINT):
            return published_fingerprint(parsed) == self.key.lower()
        given = decode_public_key(self.key, ssh=False)
        return given is not None and published_fingerprint(given) == published_fingerprint(parsed)


def _read(pin_file: Path) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(pin_file.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        raise SdgovError(
            "the pin file is unreadable", str(pin_file), "repair it, or pass another with --pin-file"
        ) from None
    return data if isinstance(data, dict) else {}


def trust(registry_id: str, given: str | None, pin_file: Path) -> Trust:
    """The key to verify ``registry_id``'s release against: ``given`` (``--public-key``) — which must agree with a
    pin already held — else the pinned one; a registry never pinned and no key given is one :class:`SdgovError`."""
    pinned = _read(pin_file).get(registry_id)
    if given is not None:
        given = given.strip()
        if not re.fullmatch(r"sha256:[0-9a-f]{64}", given.lower()) and decode_public_key(given, ssh=False) is None:
            raise SdgovError(
                f"--public-key {given[:24]!r} is neither 'sha256:<64 hex>' nor 'ed25519:<base64>'",
                "--public-key",
                "give the registry key's fingerprint as the data controller publishes it (every card states it too)",
            )
        if pinned is not None and not Trust(given, "").matches(pinned["public_key"]):
            raise SdgovError(
                f"the key you gave is not the one you pinned for registry {registry_id} ({pinned['fingerprint']})",
                str(pin_file),
                "find out which is the controller's: a changed key is a new registry, or a forgery",
            )
        return Trust(given, "the key you gave (--public-key)", pinned_now=pinned is None)
    if pinned is None:
        raise SdgovError(
            f"no key is pinned for registry {registry_id or '?'}, and none was given",
            str(pin_file),
            "verify with --public-key sha256:… (the fingerprint the data controller publishes; every card states "
            "it): the first verified release pins it for the next ones",
        )
    return Trust(pinned["public_key"], f"the key pinned in {pin_file} on {pinned['pinned']}")


def pin(pin_file: Path, registry_id: str, public_key: str) -> str:
    """Keep ``public_key`` as ``registry_id``'s in the reader's pin file; the one line that says so."""
    pins = _read(pin_file)
    parsed = decode_public_key(public_key, ssh=False)
    assert parsed is not None  # it verified the release's signature
    pins[registry_id] = {"public_key": public_key, "fingerprint": published_fingerprint(parsed), "pinned": utcnow()}
    pin_file.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(pin_file, json.dumps(pins, indent=2, sort_keys=True) + "\n")
    return (
        f"pinned registry {registry_id}'s key {published_fingerprint(parsed)} in {pin_file}: later verifications use it"
    )
