"""Argument helpers shared by the ``sdgov audit`` commands (``cli_audit``, ``cli_risk``)."""

from __future__ import annotations

import json

from sdgov.audits.generator_protocol import AuditError


def json_object_arg(text: str, flag: str, example: str) -> dict:
    """A command-line option holding a JSON object, or one clear error naming the option."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AuditError(f"{flag} is not JSON ({exc.msg})", flag, f"write e.g. '{example}'") from None
    if not isinstance(value, dict):
        raise AuditError(f"{flag} must be a JSON object", flag)
    return value
