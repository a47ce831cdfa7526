"""The REST client of ``sdgov runs/sign/approve/review`` (:mod:`sdgov.flows.plumbing.prefect_api`) waits out a busy
server as Prefect's own client does, instead of failing a person's decision on a 503."""

from __future__ import annotations

import uuid

import httpx
import pytest

from sdgov.flows.plumbing import prefect_api
from sdgov.flows.plumbing.prefect_api import ApiSettings, PrefectApi

RUN = uuid.uuid4()
BODY = {"id": str(RUN), "name": "r", "state": {"type": "PAUSED", "name": "Paused", "timestamp": None}}


def _api(answers: list[int], seen: list[str]) -> PrefectApi:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        code = answers.pop(0) if answers else 200
        return httpx.Response(code, json=BODY if code == 200 else {"detail": "busy"})

    api = PrefectApi(ApiSettings(url="http://127.0.0.1:9/api"))
    api._http = httpx.Client(base_url="http://127.0.0.1:9/api/", transport=httpx.MockTransport(handler))
    return api


def test_a_busy_server_is_asked_again_until_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(prefect_api.time, "sleep", waits.append)
    seen: list[str] = []
    run = _api([503, 429, 502], seen).flow_run(RUN)
    assert run.id == RUN and run.state is not None and run.state.is_paused()
    assert len(seen) == 4 and waits == [1.0, 2.0, 4.0]  # exponential backoff


def test_a_server_busy_past_the_retries_is_an_error_and_other_errors_are_not_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(prefect_api.time, "sleep", lambda _: None)
    seen: list[str] = []
    with pytest.raises(httpx.HTTPStatusError):
        _api([503] * 10, seen).flow_run(RUN)
    assert len(seen) == prefect_api.MAX_RETRIES + 1
    seen.clear()
    with pytest.raises(httpx.HTTPStatusError):
        _api([500], seen).flow_run(RUN)
    assert len(seen) == 1
