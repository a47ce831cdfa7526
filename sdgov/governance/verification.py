"""``sdgov registry verify``: a registry checked as a release would find it — every hash and signature of its log and
releases, the controller's files as last signed, and (given a checkpoint kept elsewhere) that the log extends it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sdgov.base.errors import SdgovError
from sdgov.registry import checkpoint
from sdgov.registry.log import Registry


@dataclass(frozen=True)
class RegistryVerified:
    """What verifying a registry found: its problems (none: intact), the staging folders a crashed publication left,
    how many releases and log events it holds (only when intact), the checkpoint it was checked against, and
    how many persisted measurements are the controller's, not readable by this user."""

    problems: list[str]
    stale: list[str]
    releases: int
    events: int | None
    anchored_to: checkpoint.Checkpoint | None
    unchecked: int


def verify_registry(reg: Registry, checkpoint_file: str | Path | None = None) -> RegistryVerified:
    """Verify ``reg`` (:meth:`~sdgov.registry.log.Registry.verify`) and what a release refuses to start on
    (:func:`~sdgov.governance.controller.controller_problems`); with ``checkpoint_file``, also that the log extends
    it, vouched for by a compliance officer or controller (a wiped registry: the checkpoint says what was there). An
    unreadable checkpoint is one line."""
    from sdgov.governance.controller import controller_problems

    cp = checkpoint.load_checkpoint(checkpoint_file) if checkpoint_file else None
    anchored = checkpoint.problems(reg, cp, checkpoint_voucher(reg)) if cp is not None else []
    if cp is not None and not reg.is_registry():
        found = anchored  # wiped: the checkpoint says what was there
    else:
        found = anchored + reg.verify()
        found += controller_problems(reg)  # what a release refuses to start on, verify reports too
    stale = reg.stale_staging() if reg.is_registry() else []
    n_events = len(reg.events()) if not found else None
    releases = len(reg.releases()) if not found else 0
    return RegistryVerified(found, stale, releases, n_events, cp, reg.unchecked)


def checkpoint_voucher(reg: Registry) -> Callable[[str, str], str | None]:
    """Who may vouch for a checkpoint with their own key: a compliance officer or controller of the approvers
    registry in force, with the key it lists for them (what is wrong with a voucher, or None)."""

    def check(name: str, public_key: str) -> str | None:
        from sdgov.governance.controller import controller_approvers
        from sdgov.identity.keys import decode_public_key

        try:
            who = controller_approvers(reg).find(name)
        except SdgovError as exc:
            return exc.what
        if who is None or who.role not in ("compliance", "controller"):
            return "not a compliance officer or controller of the approvers registry in force"
        key = decode_public_key(public_key, ssh=False)
        if key is None or key.public_bytes_raw() != who.key().public_bytes_raw():
            return f"not the key the approvers registry lists for {who.name!r}"
        return None

    return check
