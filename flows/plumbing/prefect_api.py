"""The four calls ``sdgov runs``, ``sign``, ``approve`` and ``review`` make to the Prefect server, over its REST API
with httpx, without importing Prefect.

Prefect is transport here: these commands check what they read against the registry's own record of the pause
(:func:`sdgov.flows.pauses.verified_pending`), so they need only the run's id, name, state, pause key and run
inputs — and resume a run with a signed form. Prefect's client package costs more than a second of imports (its
settings alone), which a person typing ``sdgov sign`` pays every time; httpx is the library that client uses
underneath, so the requests on the wire are the same ones (the same paths, JSON bodies and auth header).

Where the server is: ``PREFECT_API_URL`` (and ``PREFECT_API_AUTH_STRING`` or ``PREFECT_API_KEY``) from the
environment, as ``sdgov server start --print-env`` sets them; when the environment does not name a server, Prefect's
own settings are asked (profiles, ``.env``, ``prefect.toml``), which imports Prefect, so a server configured there
is found the same way as before, only more slowly.
"""

from __future__ import annotations

import base64
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import httpx

API_VERSION = "0.8.4"  # prefect.client.constants.SERVER_API_VERSION (the header Prefect's client sends)
TIMEOUT_S = 30.0
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "CRASHED"}
# Prefect's client retries these answers of a busy server (PREFECT_CLIENT_MAX_RETRIES = 5, exponential backoff,
# Retry-After honoured); a person's `sdgov approve` must not fail on a server that is only busy
RETRY_CODES = {429, 502, 503}
MAX_RETRIES = 5


@dataclass(frozen=True)
class ApiSettings:
    """Where the server is and how to log in (``auth`` wins over ``key``, as in Prefect's client)."""

    url: str | None
    auth: str | None = None
    key: str | None = None
    insecure: bool = False
    cert_file: str | None = None


def api_settings() -> ApiSettings:
    """The environment's ``PREFECT_API_*`` when it names a server; otherwise Prefect's settings (imports Prefect)."""
    env = os.environ
    if env.get("PREFECT_API_URL"):
        return ApiSettings(
            url=env["PREFECT_API_URL"],
            auth=env.get("PREFECT_API_AUTH_STRING") or None,
            key=env.get("PREFECT_API_KEY") or None,
            insecure=env.get("PREFECT_API_TLS_INSECURE_SKIP_VERIFY", "").lower() in ("1", "true", "yes"),
            cert_file=env.get("PREFECT_API_SSL_CERT_FILE") or None,
        )
    from prefect.settings import (
        PREFECT_API_AUTH_STRING,
        PREFECT_API_KEY,
        PREFECT_API_SSL_CERT_FILE,
        PREFECT_API_TLS_INSECURE_SKIP_VERIFY,
        PREFECT_API_URL,
    )

    auth, key = PREFECT_API_AUTH_STRING.value(), PREFECT_API_KEY.value()
    return ApiSettings(
        url=PREFECT_API_URL.value() or None,
        auth=auth.get_secret_value() if hasattr(auth, "get_secret_value") else auth,
        key=key.get_secret_value() if hasattr(key, "get_secret_value") else key,
        insecure=bool(PREFECT_API_TLS_INSECURE_SKIP_VERIFY.value()),
        cert_file=PREFECT_API_SSL_CERT_FILE.value() or None,
    )


def require_server() -> ApiSettings:
    """Where the configured server is (:func:`api_settings`): paused runs, deployments and a worker's runs live on
    the server the flows run against; without ``PREFECT_API_URL``, one line."""
    from sdgov.base.errors import SdgovError

    settings = api_settings()
    if not settings.url:
        raise SdgovError(
            "no Prefect server configured: paused runs live on the server the flow runs against",
            "PREFECT_API_URL",
            'eval "$(sdgov server start --print-env)" (add --auth USER:PASS if the server has basic auth)',
        )
    return settings


def ui_link(flow_run_id: object, settings: ApiSettings | None = None) -> str:
    """The run's page in the Prefect UI (the API's URL without ``/api``, as Prefect derives ``PREFECT_UI_URL``); with
    basic auth on, through ``/login?redirect=…`` (Prefect's own "View at" link answers 'Authentication failed' in a
    browser that has not logged in yet)."""
    s = settings or api_settings()
    base = os.environ.get("PREFECT_UI_URL") or (s.url.rstrip("/").removesuffix("/api") if s.url else "")
    if not base:
        return ""
    page = f"/runs/flow-run/{flow_run_id}"
    return f"{base}/login?redirect={page}" if s.auth else base + page


@dataclass(frozen=True)
class RunState:
    """What these commands read of a flow run's state."""

    type: str
    name: str
    timestamp: datetime | None
    message: str | None
    pause_key: str | None

    def is_paused(self) -> bool:
        """Paused: awaiting a decision (or a review) through its resume form."""
        return self.type == "PAUSED"

    def is_final(self) -> bool:
        """Ended, one way or another: nothing will resume it."""
        return self.type in FINAL

    def is_running(self) -> bool:
        """Resumed and going on."""
        return self.type == "RUNNING"


@dataclass(frozen=True)
class FlowRun:
    """A flow run as the server returned it: id, name, state and parameters."""

    id: UUID
    name: str
    state: RunState | None
    parameters: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> FlowRun:
        """From the server's JSON of a flow run (the fields above; the rest is not read)."""
        st = body.get("state")
        state = None
        if st:
            stamp = st.get("timestamp")
            state = RunState(
                type=str(st.get("type", "")),
                name=str(st.get("name", "")),
                timestamp=datetime.fromisoformat(stamp) if stamp else None,
                message=st.get("message"),
                pause_key=(st.get("state_details") or {}).get("pause_key"),
            )
        params = body.get("parameters") or {}
        return cls(id=UUID(body["id"]), name=str(body.get("name", "")), state=state, parameters=params)


class NotFound(Exception):
    """The server holds no such run (or run input)."""


class PrefectApi:
    """An httpx client on the server's API: the calls the commands make, each one request."""

    def __init__(self, settings: ApiSettings | None = None) -> None:
        s = settings or api_settings()
        if not s.url:
            raise ValueError("no PREFECT_API_URL")
        headers = {"X-PREFECT-API-VERSION": API_VERSION}
        if s.auth:
            headers["Authorization"] = "Basic " + base64.b64encode(s.auth.encode("utf-8")).decode("utf-8")
        elif s.key:
            headers["Authorization"] = f"Bearer {s.key}"
        verify: bool | str = False if s.insecure else (s.cert_file or True)
        self.url = s.url
        self._http = httpx.Client(base_url=s.url.rstrip("/") + "/", headers=headers, timeout=TIMEOUT_S, verify=verify)

    def __enter__(self) -> PrefectApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request, sent again (up to :data:`MAX_RETRIES` times) while the server answers busy, as Prefect's
        client does; then checked by :meth:`_ok`."""
        for attempt in range(MAX_RETRIES + 1):
            response = self._http.request(method, path, **kwargs)
            if response.status_code not in RETRY_CODES or attempt == MAX_RETRIES:
                break
            after = response.headers.get("Retry-After", "")
            time.sleep(float(after) if after.replace(".", "", 1).isdigit() else min(2.0**attempt, 10.0))
        return self._ok(response)

    def _ok(self, response: httpx.Response) -> httpx.Response:
        if response.status_code == 404:
            raise NotFound(str(response.request.url))
        if response.status_code == 401:
            from sdgov.base.errors import SdgovError

            raise SdgovError(
                "the Prefect server refused the login (401)",
                "PREFECT_API_AUTH_STRING",
                "set it to the server's USER:PASSWORD, as 'sdgov server start --print-env' prints it",
            )
        response.raise_for_status()
        return response

    def paused_runs(self) -> list[FlowRun]:
        """Every flow run in a PAUSED state (the server's default page size, as Prefect's client asks)."""
        body = {"flow_runs": {"state": {"type": {"any_": ["PAUSED"]}}}}
        return [FlowRun.from_json(r) for r in self._send("POST", "flow_runs/filter", json=body).json()]

    def flow_run(self, run_id: UUID) -> FlowRun:
        """One flow run; :class:`NotFound` when the server has none with this id."""
        return FlowRun.from_json(self._send("GET", f"flow_runs/{run_id}").json())

    def run_input(self, run_id: UUID, key: str) -> str:
        """The text of a run input; :class:`NotFound` when there is none under ``key``."""
        return self._send("GET", f"flow_runs/{run_id}/input/{key}").content.decode()

    def resume(self, run_id: UUID, run_input: dict[str, Any]) -> tuple[str, str]:
        """Resume a paused run with its form's input → the server's status (``ACCEPT`` when resumed) and its reason."""
        out = self._send("POST", f"flow_runs/{run_id}/resume", json={"run_input": run_input}).json()
        details = out.get("details") or {}
        return str(out.get("status", "")).upper(), str(details.get("reason") or details or "")
