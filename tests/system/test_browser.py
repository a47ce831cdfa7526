"""Browser test: headless Chromium opens the Prefect UI, logs in (basic auth), resumes a paused run through the form.

Runs the documented deployment for real: ``sdgov server start --auth`` (own server: the session test server does
not serve the UI), ``sdgov propose`` as the analyst in a second process; the controller works in the browser.
At the release he opens the run's Artifacts tab and reads the draft card, sees the full candidate hash in the form
and approves by typing its first 8 characters; the published card must be that draft, byte for byte, plus the
sign-off section.
Skipped where Chromium or Playwright is missing (scripts/setup.sh installs both when it can).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.system.test_governed import cli, setup_registry

CHROMIUM = os.environ.get("SDGOV_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AUTH = "ops:browser-test-secret"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


@pytest.fixture
def ui_server(tmp_path):
    import httpx

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    proc = subprocess.Popen(
        [_bin("sdgov"), "server", "start", "--port", str(port), "--home", str(tmp_path / "home"), "--auth", AUTH],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "server did not start"
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        assert httpx.post(f"{url}/api/flow_runs/filter", json={}).status_code == 401, "basic auth must be on"
        yield (
            url,
            {
                **env,
                "PREFECT_HOME": str(tmp_path / "client-home"),
                "PREFECT_API_URL": f"{url}/api",
                "PREFECT_API_AUTH_STRING": AUTH,
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            },
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server this fixture started, and its children
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _runs(env: dict[str, str], root: Path) -> list[dict]:
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"], PREFECT_API_AUTH_STRING: AUTH}):
        code, out, err = cli("runs", "--json")
    assert code == 0, err
    return [r for r in json.loads(out)["paused"] if r["registry"] == str(root)]


def _wait(env, root, subject, attempt, proc, timeout=240) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        mine = _runs(env, root)
        if mine and mine[0]["subject"] == subject and mine[0]["attempt"] == attempt:
            return mine[0]
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        time.sleep(1)
    raise AssertionError(f"no pause for {subject} attempt {attempt}")


def _sign(env: dict[str, str], run_id: str, name: str, key: Path) -> str:
    """What the controller pastes into the form's Signature field: ``sdgov sign`` for this pause."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"], PREFECT_API_AUTH_STRING: AUTH}):
        code, out, err = cli("sign", run_id, "--as", name, "--key", str(key))
    assert code == 0, err
    return out.strip()


# Is this text in the resume form, inside the window and inside every box that scrolls or clips it (the form's
# description is a short scroll box with no visible scrollbar at 1280×800)?
IN_VIEW = """(needle) => {
  const inView = (node, at) => {
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + needle.length);
    const r = range.getBoundingClientRect();
    if (r.top < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth || r.height === 0) return false;
    for (let el = node.parentElement; el; el = el.parentElement) {
      const style = getComputedStyle(el), box = el.getBoundingClientRect(), clips = /(auto|scroll|hidden|clip)/;
      if (clips.test(style.overflowY) && (r.top < box.top || r.bottom > box.bottom)) return false;
      if (clips.test(style.overflowX) && (r.left < box.left || r.right > box.right)) return false;
    }
    return true;
  };
  const walk = document.createTreeWalker(document.querySelector('.p-modal__card'), NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    const at = node.textContent.indexOf(needle);
    if (at >= 0 && inView(node, at)) return true;
  }
  return false;
}"""


def _groups(sha256: str) -> list[str]:
    return [sha256[i : i + 16] for i in range(0, 64, 16)]


def _login(page, url: str) -> None:
    page.goto(f"{url}/login")
    page.locator("input[type=password]").fill(AUTH)  # the server's basic auth, through the UI's login
    page.get_by_role("button", name="Login").click()
    page.wait_for_function("() => !location.pathname.startsWith('/login')")


def _decide_in_browser(
    url: str,
    run_id: str,
    name: str,
    decision: str,
    comment: str,
    expect: list[str],
    signature: str = "",
    confirm_hash: str | None = None,
    artifact_id: str | None = None,
    artifact_expect: tuple[str, ...] = (),
    above_fold: tuple[str, ...] = (),
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            _login(page, url)
            if artifact_id:  # the approver reads the draft card on the run before deciding
                page.goto(f"{url}/runs/flow-run/{run_id}")
                page.locator("li.p-tab", has_text="Artifacts").click()  # the run page's Artifacts tab
                sync_api.expect(page.get_by_text("draft-card").first).to_be_visible(timeout=30_000)
                page.goto(f"{url}/artifacts/artifact/{artifact_id}")
                for needle in artifact_expect:  # wait for the Markdown to render, then read it
                    sync_api.expect(page.locator("body")).to_contain_text(needle, timeout=30_000)
            page.set_viewport_size({"width": 1280, "height": 800})  # the form, in an ordinary laptop window
            page.goto(f"{url}/runs/flow-run/{run_id}")
            page.get_by_role("button", name="Resume").click()
            form = page.locator(".p-modal__card")
            form.locator(".schema-form-property").first.wait_for()  # the form is built from the run's input schema
            for needle in expect:  # the description renders after the fields: wait for each text, never read early
                sync_api.expect(form).to_contain_text(needle, timeout=30_000)
            for needle in above_fold:  # at 1280×800, without scrolling anything
                assert page.evaluate(IN_VIEW, needle), f"{needle!r} is not in view at 1280×800"
            fields = form.locator(".schema-form-property")
            fields.nth(0).locator("textarea").fill(name)
            fields.nth(1).locator("button.p-select-button__control").click()
            page.keyboard.press("ArrowDown")
            page.get_by_role("option", name=decision, exact=True).click()
            fields.nth(2).locator("textarea").fill(comment)
            fields.nth(3).locator("textarea").fill(signature)
            if confirm_hash is not None:
                assert "Confirm hash" in fields.nth(4).inner_text()
                fields.nth(4).locator("textarea").fill(confirm_hash)
            form.get_by_role("button", name="Submit").click()
            form.wait_for(state="detached")
        finally:
            browser.close()


def _draft_artifact(env: dict[str, str], run_id: str) -> tuple[str, str]:
    """The id and Markdown of the draft-card artifact on this flow run (through the API, as the UI reads it)."""
    from uuid import UUID

    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    with (
        temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"], PREFECT_API_AUTH_STRING: AUTH}),
        get_client(sync_client=True) as c,
    ):
        [art] = c.read_artifacts(
            artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["draft-card"]), flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(run_id)])
            )
        )
    return str(art.id), art.data


def test_controller_resumes_a_paused_run_in_the_prefect_ui(tmp_path, ui_server):
    pytest.importorskip("playwright.sync_api")
    url, env = ui_server
    spec, root, keys = setup_registry(tmp_path, rows=800)
    proc = subprocess.Popen(
        [
            _bin("sdgov"),
            "propose",
            "--spec",
            str(spec),
            "--as",
            "Ada Analyst",
            "--key",
            str(keys["Ada Analyst"]),
            "--root",
            str(root),
            "--poll",
            "1",
            "--timeout",
            "400",
            "--json",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        run = _wait(env, root, "agreement", 1, proc)
        # the proposer tries to approve her own agreement in the UI: refused, the run pauses again and says why
        _decide_in_browser(
            url,
            run["run_id"],
            "Ada Analyst",
            "approve",
            "self-approval",
            ["Approve the Φ agreement", "Privacy budget of this release"]
            + [run["sha256"][i : i + 16] for i in range(0, 64, 16)],
            "sdgov1.e30.AA",  # the signature is required: the form is not sent without one
            above_fold=("ε = ", "δ = ", *_groups(run["sha256"])),  # the agreement's hash and privacy cost
        )
        _wait(env, root, "agreement", 2, proc)
        # typing the controller's name without his signature (the field is required: a made-up one): refused too
        _decide_in_browser(
            url,
            run["run_id"],
            "Carl Controller",
            "approve",
            "unsigned",
            ["was refused", "separation of duties"],
            "sdgov1.e30.AA",
            above_fold=("was refused", *_groups(run["sha256"])),  # why the last attempt was refused, first
        )
        _wait(env, root, "agreement", 3, proc)
        _decide_in_browser(
            url,
            run["run_id"],
            "Carl Controller",
            "approve",
            "agreed in the browser",
            ["was refused", "is unreadable"],
            _sign(env, run["run_id"], "Carl Controller", keys["Carl Controller"]),
        )
        rel = _wait(env, root, "release", 1, proc)
        draft_html = Path(rel["summary"]["draft_card"]).read_bytes()
        draft_md = Path(rel["summary"]["draft_card_md"]).read_bytes()
        card_title = json.loads(Path(rel["summary"]["draft_card"]).with_name("card.json").read_text())["title"]
        art_id, art_md = _draft_artifact(env, run["run_id"])
        assert draft_md.decode() in art_md  # the artifact is the draft card, whole
        sha = rel["sha256"]
        _decide_in_browser(
            url,
            run["run_id"],
            "Carl Controller",
            "approve",
            "released from the browser",
            # the full hash, in four groups that wrap (the form's Markdown shows each as code)
            ["Overall verdict: PASS", "Audit checks the card states", "evidence report", "draft-card"]
            + [sha[i : i + 16] for i in range(0, 64, 16)],
            _sign(env, run["run_id"], "Carl Controller", keys["Carl Controller"]),
            confirm_hash=sha[:8],
            above_fold=("verdict PASS", "ε = ", "δ = ", *_groups(sha)),  # the verdict, privacy cost and full hash
            artifact_id=art_id,
            artifact_expect=("DRAFT generator card, awaiting sign-off", card_title, "What was not preserved"),
        )
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err[-3000:]
    result = json.loads(out)
    assert result["status"] == "released"
    card = json.loads(Path(result["release"]["card_json"]).read_text())
    assert [(s["name"], s["subject"], s["comment"]) for s in card["signoffs"][1:]] == [
        ("Carl Controller", "agreement", "agreed in the browser"),
        ("Carl Controller", "release", "released from the browser"),
    ]
    code, out, _ = cli("trail", "--root", str(root), "--json")
    events = [(e["event"], e["who"]) for e in json.loads(out)["events"]]
    assert ("approval_refused", "Ada Analyst") in events and ("approval_refused", "Carl Controller") in events
    assert events[-1] == ("released", "Carl Controller")
    assert json.loads(out)["verified"] is True
    # what was published is the draft the approver read, byte for byte, plus the sign-off section
    from sdgov.reporting.card import SIGNOFF_MARKER

    marker = SIGNOFF_MARKER.encode()
    for draft, published in (
        (draft_html, Path(result["release"]["card_html"]).read_bytes()),
        (draft_md, Path(result["release"]["card_md"]).read_bytes()),
    ):
        assert published.split(marker)[0] == draft.split(marker)[0]
        assert b"released from the browser" in published.split(marker)[1]
        assert sha.encode() in published.split(marker)[1]
    shutil.rmtree(tmp_path / "home", ignore_errors=True)
