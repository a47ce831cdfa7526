"""The runs the controller's worker holds: one worker per registry, its runs die with it, and a restart ends (and logs)
every run the previous worker left behind.

A paused run keeps its decision's nonce, its agreement and its candidate in the memory of the process that runs it
(:mod:`sdgov.flows.governed`): that process is the only one that can go on with it. When the worker stops — killed,
restarted by systemd, the machine rebooted — its runs' processes go too, but the Prefect server still shows them
paused (or running, once someone resumed them), and a decision sent to one would be "accepted" by the server with
nobody to act on it. So:

* :func:`hold_registry` — ``sdgov worker start`` takes an exclusive lock on ``ROOT/worker.lock`` for its lifetime (the
  kernel drops it when the process dies, ``kill -9`` included): a second worker on the same registry is refused in one
  line, and whoever holds the lock knows that no other worker executes this registry's runs;
* :func:`die_with_worker` — a run executed by the worker watches its parent; when the worker is gone it logs
  ``run_ended`` in the registry, marks itself *Cancelled* on the server and exits;
* :func:`end_orphans` — at start, before serving, the worker ends every run of its deployments that is still pending,
  running, paused or cancelling on the server (its process cannot be alive: it died with the previous worker): each is
  set *Cancelled* on the server and logged as ``run_ended`` (with whether its budget spend stands), unless its own
  process logged that already.

``sdgov approve`` does its part: it reports a decision as taken only once the run's process logged it
(:func:`sdgov.flows.pauses.decision_taken`).
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING

from sdgov.base.errors import SdgovError
from sdgov.governance import decisions, worker
from sdgov.registry.log import Registry

if TYPE_CHECKING:
    from prefect.client.schemas.objects import FlowRun

LOCK = "worker.lock"
HELD = ("PENDING", "RUNNING", "PAUSED", "CANCELLING")  # a state only a live process moves on from
WATCH_S = 1.0  # how often a run looks for its worker

_lock_file: IO[str] | None = None  # kept open for the life of the worker: the lock is the open file


def hold_registry(registry: Registry) -> None:
    """Take the registry's worker lock for this process's life, or one line: another worker serves it."""
    global _lock_file
    path = registry.root / LOCK
    f = open(path, "a+", encoding="utf-8")  # noqa: SIM115 — held open until the process ends
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        other = f.read().strip() or "?"
        f.close()
        raise SdgovError(
            f"another controller's worker (pid {other}) serves this registry",
            str(path),
            "stop it first: one worker per registry",
        ) from None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    _lock_file = f


def end_orphans(registry: Registry, deployment_names: list[str], config_sha256: str) -> list[str]:
    """End every run of these deployments that the server still shows as held (:data:`HELD`): the previous worker
    and its runs' processes are gone (this one holds the registry's lock). Each is set *Cancelled* on the server and
    logged as ``run_ended``; returns their flow-run ids."""
    from prefect import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.exceptions import ObjectNotFound

    ended: list[str] = []
    with get_client(sync_client=True) as c:
        ids = []
        for name in deployment_names:
            try:
                ids.append(c.read_deployment_by_name(name).id)
            except ObjectNotFound:  # never served before
                continue
        if not ids:
            return ended
        held = FlowRunFilter(
            deployment_id=FlowRunFilterDeploymentId(any_=ids),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType(s) for s in HELD])),
        )
        for fr in c.read_flow_runs(flow_run_filter=held):
            what = _state_words(fr)
            end_run(registry, str(fr.id), f"the controller's worker restarted while this run was {what}", config_sha256)
            ended.append(str(fr.id))
    return ended


def _state_words(fr: FlowRun) -> str:
    st = fr.state
    return "paused for a decision" if st is not None and st.is_paused() else (st.type.value.lower() if st else "held")


def end_run(registry: Registry, flow_run_id: str, why: str, config_sha256: str = "") -> None:
    """Log ``run_ended`` for a run nobody can go on with (once per run) and mark it *Cancelled* on the server."""
    from prefect import get_client
    from prefect.states import Cancelled

    decisions.record_run_ended(registry, flow_run_id, why, config_sha256)
    message = f"{why}: ended, nothing released by it (see the registry's run_ended event)"
    try:
        with get_client(sync_client=True) as c:
            c.set_flow_run_state(flow_run_id, Cancelled(message=message), force=True)
    except Exception:  # the server is away: the registry's log says it; the next start ends it on the server
        pass


def die_with_worker(registry_root: str | Path, flow_run_id: str) -> None:
    """In a run the worker executes: end this run (logged, *Cancelled*) and this process when the worker that
    started it is gone. A process that is not the worker's own child (its parent is not the worker that set
    :func:`sdgov.governance.worker.worker_pid`) is not watched."""
    parent = worker.worker_pid()
    if parent is None or os.getppid() != parent:
        return

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(WATCH_S)
        try:
            end_run(Registry(registry_root), flow_run_id, "the controller's worker stopped while it held this run")
        finally:
            os._exit(3)

    threading.Thread(target=watch, name="sdgov-worker-lifeline", daemon=True).start()
