"""What a paused governed run shows outside the flow: the run-input key of its pending decision (its page in the
Prefect UI is :func:`sdgov.flows.plumbing.prefect_api.ui_link`).

Kept apart from :mod:`sdgov.flows.governed` so that ``sdgov runs``, ``sign`` and ``approve`` read a pause without
importing the flow (and, through it, the stages, OpenDP, pandas and scikit-learn): a command that only signs a
statement should start in well under a second.
"""

from __future__ import annotations

PENDING_PREFIX = "sdgov-"  # flow-run input "sdgov-<pause key>": what the pause awaits (read by `sdgov runs`)
