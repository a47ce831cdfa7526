"""Run a Python module for as long as the process that started it lives — even after ``kill -9`` of that parent.

``python -m sdgov.base.lifeline FD MODULE ARGS...``: FD is the read end of a pipe whose write end only the parent
holds. When the parent dies, however it dies, the kernel closes its descriptors, the read returns end-of-file,
and this process terminates itself (SIGTERM for a graceful stop, then a hard exit). A parent-death signal
(``prctl(PR_SET_PDEATHSIG)``) would fire when the *thread* that forked exits, which is wrong for a server started
from a helper thread; a pipe is per process. Used for Prefect's temporary API server
(sdgov/flows/plumbing/temporary_server.py).
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading

GRACE_S = 10.0


def _watch(fd: int) -> None:
    while os.read(fd, 1):  # the parent never writes: only end-of-file comes back
        pass
    os.kill(os.getpid(), signal.SIGTERM)
    threading.Timer(GRACE_S, os._exit, args=(0,)).start()


def run_tethered(argv: list[str]) -> None:
    """Run ``argv = [FD, MODULE, *ARGS]``: MODULE as ``__main__`` with ARGS, terminated when the pipe FD reaches
    end-of-file (its parent died)."""
    fd, module, args = int(argv[0]), argv[1], argv[2:]
    threading.Thread(target=_watch, args=(fd,), name="lifeline", daemon=True).start()
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    run_tethered(sys.argv[1:])
