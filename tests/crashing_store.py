"""The crash tests' fault hook for the draw-once store (:data:`sdgov.measurement.store.fault_point`).

Run as a child process's main: ``python -m tests.crashing_store POINT MARKER SPEC ROOT`` installs a hook that, at the
step ``POINT`` of :func:`sdgov.measurement.store.measure_once`, writes ``MARKER`` and waits to be killed, then agrees
``SPEC`` and measures it under the registry ``ROOT`` with the real stages — as a release run would.
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

from sdgov.governance.site import Site
from sdgov.measurement import store


def stop_at(point: str, marker: Path, sleep: float = 120.0) -> None:
    """Install the hook: at ``point``, touch ``marker`` and sleep (the test kills the process meanwhile)."""

    def hook(name: str) -> None:
        if name == point:
            marker.write_text(name)
            time.sleep(sleep)

    store.fault_point = hook


def main(argv: list[str]) -> None:
    point, marker, spec, root = argv
    stop_at(point, Path(marker))
    from sdgov.intake.inputs import check_release_inputs
    from sdgov.tasks.agree_phi import agree_phi
    from sdgov.tasks.measure import measure

    site = Site.resolve(root)
    agreed = agree_phi.fn(check_release_inputs(site, spec), site, uuid.uuid4().hex)
    measure.fn(agreed, site)


if __name__ == "__main__":
    main(sys.argv[1:])
