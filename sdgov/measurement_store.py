"""The draw-once store of noisy marginals: one draw per statistic per dataset, ever.

A measurement is keyed by agreement × data content (:func:`measurement_key`) and persisted under the registry
*before* anything uses it, under the registry lock. A retry, a crash and re-run, a renamed data file or a second
run of the same agreement on the same data reuses it: two noisy copies of one statistic would leak more than
one. No seed is stored: the noise cannot be drawn again, only read back.

The budget ledger (:mod:`sdgov.ledger`) reserves ρ before any noise is drawn; see its docstring for the crash
protocol. :func:`fault_point` lets the crash tests kill a run at each step.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sdgov import ledger
from sdgov.atomic import atomic_write_bytes
from sdgov.contracts import Agreed
from sdgov.errors import RegistryError
from sdgov.hashing import sha256_bytes, sha256_file, sha256_json
from sdgov.measure import MeasurementSet
from sdgov.privacy import PrivacyPlan
from sdgov.registry import Event, Registry


@dataclass(frozen=True)
class Stored:
    """Where the measurement for a key is, and how this call came by it."""

    path: Path
    key: str
    how: Literal["reused", "adopted", "drawn"]  # logged earlier; persisted by an interrupted run; drawn now
    logged_at: str | None = None  # when a reused measurement was logged


def measurement_key(agreement_sha256: str, data_sha256: str) -> str:
    return sha256_json({"agreement": agreement_sha256, "data": data_sha256})


def read_logged_or_draw_once(
    registry: Registry, agreed: Agreed, plan: PrivacyPlan, marginals: int, draw: Callable[[], MeasurementSet]
) -> Stored:
    """The logged measurement for this agreement and data, or — budget reserved first — ``draw()`` called once,
    persisted and logged. ``draw`` is not called when a measurement is there already (logged or adopted)."""
    key = measurement_key(agreed.agreement_sha256, agreed.data.sha256)
    path = registry.measurement_path(key)
    name = str(path.relative_to(registry.root))
    run_id = Path(agreed.run_dir).name
    with registry.lock():
        logged = logged_measurement(registry, key)
        if logged is not None:
            return Stored(path=path, key=key, how="reused", logged_at=logged.time)
        reserved_before = ledger.reservation(registry, key)
        adopted = _adopt_unlogged(path, agreed, reserved_before is not None, plan.noise)
        ledger.spend_locked(
            registry,
            dataset=agreed.data.name,
            dataset_sha256=agreed.data.sha256,
            rho=plan.rho,
            measurement_key=key,
            agreement_sha256=agreed.agreement_sha256,
            run_id=run_id,
        )
        fault_point("after_spend")
        if adopted is not None:  # persisted by a run that died before logging it: never re-draw
            payload, n, note = adopted, marginals, "; adopted: persisted by an interrupted run before it was logged"
        else:
            mset = draw()
            payload = (mset.model_dump_json(indent=None) + "\n").encode()
            fault_point("after_draw")
            atomic_write_bytes(path, payload)  # persisted before anything uses it
            n, note = len(mset.measurements), ""
            fault_point("after_persist")
        registry.append_locked(
            "measured",
            "sdgov",
            "system",
            agreement_sha256=agreed.agreement_sha256,
            run_id=run_id,
            artifacts={name: sha256_bytes(payload)},
            comment=f"{n} marginals, rho={plan.rho}{note}",
        )
    return Stored(path=path, key=key, how="adopted" if adopted is not None else "drawn")


def logged_measurement(registry: Registry, key: str) -> Event | None:
    """The log event of the measurement drawn for ``key`` (agreement × data), after checking the persisted file
    still has the logged hash; None if none was ever drawn."""
    path = registry.measurement_path(key)
    name = str(path.relative_to(registry.root))
    logged = [e for e in registry.verified_events() if e.event == "measured" and name in e.artifacts]
    if not logged:
        return None
    if not path.exists() or sha256_file(path) != logged[0].artifacts[name]:
        raise RegistryError(
            "persisted measurement does not match the one logged when it was drawn",
            str(path),
            "restore it from DVC/backup; never re-draw noise for the same agreement",
        )
    return logged[0]


def _adopt_unlogged(path: Path, agreed: Agreed, reserved_before: bool, noise: str) -> bytes | None:
    """A measurement file this key's run persisted (atomically, under the lock) but did not live to log.

    Adopted only if an earlier run had reserved the budget for this key (so an sdgov run was measuring when it
    died): a file that appeared without a reservation was not drawn under the ledger and is refused. With
    ``noise: none`` the counts are exact and simply measured again.
    """
    if not path.exists() or noise == "none":
        return None
    if not reserved_before:
        raise RegistryError(
            "an unlogged measurement file is there, but no run ever reserved budget for it (it was "
            "not drawn by sdgov under the ledger)",
            str(path),
            "inspect it and move it away deliberately",
        )
    payload = path.read_bytes()
    try:
        mset = MeasurementSet.model_validate_json(payload)
    except ValueError:
        raise RegistryError(
            "an unlogged, unreadable measurement file is in the way",
            str(path),
            "inspect it and move it away deliberately",
        ) from None
    if mset.agreement_sha256 != agreed.agreement_sha256 or mset.dataset_sha256 != agreed.data.sha256:
        raise RegistryError(
            "an unlogged measurement for a different agreement or dataset is in the way",
            str(path),
            "inspect it and move it away deliberately",
        )
    return payload


def fault_point(name: str) -> None:
    """Test hook for crash tests: with ``SDGOV_FAULT=name``, touch ``$SDGOV_FAULT_FILE`` and wait to be killed."""
    if os.environ.get("SDGOV_FAULT") == name:
        Path(os.environ["SDGOV_FAULT_FILE"]).write_text(name)
        time.sleep(float(os.environ.get("SDGOV_FAULT_SLEEP", "120")))
