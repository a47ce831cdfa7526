"""The parts of the privacy-risk audit, in the order they run and their rows appear in the verdict.

Adding a part is one module speaking :class:`sdgov.audits.privacy.part.PrivacyPart` and one line here, plus its
name in :data:`sdgov.agreement.sections.privacy_risk.PARTS` (and ``DEFAULT_PARTS`` if a release runs it unasked),
where the command line reads the names without loading the audit: :func:`check_parts` refuses, when this module is
imported, a part registered on one side only.
"""

from __future__ import annotations

from collections.abc import Iterable

from sdgov.agreement.sections.privacy_risk import DEFAULT_PARTS, PARTS
from sdgov.audits.privacy.beyond_phi import BeyondPhi
from sdgov.audits.privacy.canary import Canary
from sdgov.audits.privacy.disclosure import Disclosure
from sdgov.audits.privacy.memorisation import Memorisation
from sdgov.audits.privacy.mia import Membership
from sdgov.audits.privacy.one_run import OneRun
from sdgov.audits.privacy.part import PrivacyPart
from sdgov.base.errors import InternalError

PRIVACY_PARTS: tuple[PrivacyPart, ...] = (
    Membership(),
    Canary(),
    OneRun(),
    BeyondPhi(),
    Memorisation(),
    Disclosure(),
)


def parts_named(names: Iterable[str]) -> list[PrivacyPart]:
    """The registered parts among ``names``, in the registry's order."""
    wanted = set(names)
    return [p for p in PRIVACY_PARTS if p.name in wanted]


def check_parts(parts: tuple[PrivacyPart, ...]) -> None:
    """Every part has a unique name, registered in ``PARTS`` too, and every name of ``PARTS`` has its part — else the
    command line could offer a part that never runs, or a part could never be asked for."""
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        raise InternalError(f"privacy-audit part names are not unique: {names}")
    if set(names) != set(PARTS) or not set(DEFAULT_PARTS) <= set(PARTS):
        raise InternalError(
            f"the privacy-audit parts registered ({sorted(names)}) are not those named in "
            f"sdgov.agreement.sections.privacy_risk.PARTS ({sorted(PARTS)}; defaults {sorted(DEFAULT_PARTS)})"
        )


check_parts(PRIVACY_PARTS)
