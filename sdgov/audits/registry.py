"""The audit checks the release's audit stage runs, in this order (report rows and card sections follow it).

Adding a check is one module speaking :class:`sdgov.audits.protocol.AuditCheck` and one line here; a check that a
spec pre-registers also has its section (its settings model) in :data:`sdgov.agreement.sections.SECTIONS`, where
the agreement finds it without importing audit machinery. :func:`check_sections` holds the two lists together when
this module is imported: a check cannot be half-registered.
"""

from __future__ import annotations

from sdgov.agreement.sections import SECTIONS
from sdgov.audits.checks import StructuralChecks
from sdgov.audits.decomposability.audit import DecomposabilityAudit
from sdgov.audits.privacy.audit import PrivacyRiskAudit
from sdgov.audits.protocol import AuditCheck
from sdgov.base.errors import InternalError

AUDITS: tuple[AuditCheck, ...] = (
    StructuralChecks(),
    DecomposabilityAudit(),
    PrivacyRiskAudit(),
)


def check_sections(audits: tuple[AuditCheck, ...]) -> None:
    """Every check's section is a registered spec section with the check's settings model, and every registered
    section is run by exactly one check — else a spec could pre-register an audit that never runs (or one it
    cannot write). Names are evidence file names: unique."""
    names = [a.name for a in audits]
    if len(set(names)) != len(names):
        raise InternalError(f"audit check names are not unique: {names}")
    by_section: dict[str, AuditCheck] = {}
    for check in audits:
        if check.section is None:
            continue
        if check.section in by_section:
            raise InternalError(f"spec section {check.section!r} is run by two checks")
        if SECTIONS.get(check.section) is not check.settings_model:
            raise InternalError(
                f"audit check {check.name!r} is pre-registered by spec section {check.section!r}, but that section "
                f"is not registered with its settings model in sdgov.agreement.sections.SECTIONS"
            )
        by_section[check.section] = check
    unrun = [name for name in SECTIONS if name not in by_section]
    if unrun:
        raise InternalError(f"spec section(s) {unrun} are registered but no audit check in AUDITS runs them")


check_sections(AUDITS)
