"""The audit checks the release's audit stage runs, in this order (report rows and card sections follow it).

Adding a check is one module speaking :class:`sdgov.audits.protocol.AuditCheck` and one line here.
"""

from __future__ import annotations

from sdgov.audits.checks import StructuralChecks
from sdgov.audits.decomposability.audit import DecomposabilityAudit
from sdgov.audits.privacy.audit import PrivacyRiskAudit
from sdgov.audits.protocol import AuditCheck

AUDITS: tuple[AuditCheck, ...] = (
    StructuralChecks(),
    DecomposabilityAudit(),
    PrivacyRiskAudit(),
)
