"""What a paused governed run shows outside the flow: the run-input key of its pending decision and its page in the
Prefect UI.

Kept apart from :mod:`sdgov.flows.governed` so that ``sdgov runs``, ``sign`` and ``approve`` read a pause without
importing the flow (and, through it, the stages, OpenDP, pandas and scikit-learn): a command that only signs a
statement should start in well under a second.
"""

from __future__ import annotations

PENDING_PREFIX = "sdgov-"  # flow-run input "sdgov-<pause key>": what the pause awaits (read by `sdgov runs`)


def ui_link(flow_run_id: object) -> str:
    """The run's page in the Prefect UI; with basic auth on, through ``/login?redirect=…`` (Prefect's own "View at"
    link answers 'Authentication failed' in a browser that has not logged in yet)."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_UI_URL

    base = PREFECT_UI_URL.value() or ""
    if not base:
        return ""
    page = f"/runs/flow-run/{flow_run_id}"
    return f"{base}/login?redirect={page}" if PREFECT_API_AUTH_STRING.value() else base + page
