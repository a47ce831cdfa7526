"""Browser test: headless Chromium opens the Prefect UI, logs in (basic auth), resumes a paused run through the form.

Runs the documented deployment for real: ``sdgov server start --auth`` (own server: the session test server does
not serve the UI), ``sdgov propose`` as the analyst in a second process; the controller works in the browser.
At the release he opens the run's Artifacts tab and reads the draft card and the release-candidate summary (every
table fits the window), finds in the form what he signs — Φ, the rows released, the verdict and each audit row,
ε/δ, the deadline, the full hash, and after a refused attempt its reason — at 1280×800 and at 1366×768 (issue 39:
Prefect collapses the text above the fields, so they are in the fields' titles and help), and approves by typing
the hash's first 8 characters; the published card must be that draft, byte for byte, plus the sign-off section.
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
import yaml

from tests.fixtures.cli import cli
from tests.fixtures.governed import setup_registry

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


# Can this text in the resume form be brought into view by scrolling inside the form, and is it then inside the
# window and inside every box that scrolls or clips it? (Prefect's description box is 0 px high at 1280×800: text in
# it can be neither seen nor scrolled to.)
REACHABLE = """(needle) => {
  const visible = (node, at) => {
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + needle.length);
    const r = range.getBoundingClientRect();
    if (r.top < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth || r.height === 0) return false;
    for (let el = node.parentElement; el; el = el.parentElement) {
      const style = getComputedStyle(el), box = el.getBoundingClientRect(), clips = /(auto|scroll|hidden|clip)/;
      if (clips.test(style.overflowY) && (r.top < box.top - 1 || r.bottom > box.bottom + 1)) return false;
      if (clips.test(style.overflowX) && (r.left < box.left - 1 || r.right > box.right + 1)) return false;
    }
    return true;
  };
  const walk = document.createTreeWalker(document.querySelector('.p-modal__card'), NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    const at = node.textContent.indexOf(needle);
    if (at < 0) continue;
    node.parentElement.scrollIntoView({block: 'center', inline: 'nearest'});
    if (visible(node, at)) return true;
  }
  return false;
}"""

# Does every table of the page fit: inside the window, and no wider than the box around it (nothing cut off on
# the right, nothing to scroll sideways to)? Returns the tables that do not, as their first cell's text.
TABLES_FIT = """() => [...document.querySelectorAll('table')].filter(t => {
  const r = t.getBoundingClientRect();
  if (r.width === 0) return false;
  if (r.right > window.innerWidth + 1) return true;
  let wrapper = true;  // the nearest box that scrolls the table sideways must not need to
  for (let el = t.parentElement; el; el = el.parentElement) {
    const style = getComputedStyle(el), box = el.getBoundingClientRect();
    if (!/(auto|scroll|hidden|clip)/.test(style.overflowX)) continue;
    if (r.right > box.right + 1) return true;
    if (wrapper && el.scrollWidth > el.clientWidth + 1) return true;
    wrapper = false;
  }
  return false;
}).map(t => (t.innerText || '').slice(0, 60))"""

SIZES = ((1280, 800), (1366, 768))
"""The ordinary laptop windows the approver must see everything in."""


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
    artifact_ids: tuple[str, ...] = (),
    artifact_expect: tuple[str, ...] = (),
    reachable: tuple[str, ...] = (),
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            _login(page, url)
            if artifact_ids:  # the approver reads the draft card and the summary on the run before deciding
                page.goto(f"{url}/runs/flow-run/{run_id}")
                page.locator("li.p-tab", has_text="Artifacts").click()  # the run page's Artifacts tab
                sync_api.expect(page.get_by_text("draft-card").first).to_be_visible(timeout=30_000)
                for artifact_id in artifact_ids:
                    page.goto(f"{url}/artifacts/artifact/{artifact_id}")
                    for needle in artifact_expect:  # wait for the Markdown to render, then read it
                        if artifact_id == artifact_ids[0]:
                            sync_api.expect(page.locator("body")).to_contain_text(needle, timeout=30_000)
                    page.wait_for_timeout(500)
                    for width, height in SIZES:
                        page.set_viewport_size({"width": width, "height": height})
                        _shot(page, f"artifact-{artifact_id[:8]}-{width}")
                        cut = page.evaluate(TABLES_FIT)
                        assert cut == [], f"tables cut off at {width}×{height}: {cut}"
            page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
            page.goto(f"{url}/runs/flow-run/{run_id}")
            page.get_by_role("button", name="Resume").click()
            form = page.locator(".p-modal__card")
            form.locator(".schema-form-property").first.wait_for()  # the form is built from the run's input schema
            for needle in expect:  # the description renders after the fields: wait for each text, never read early
                sync_api.expect(form).to_contain_text(needle, timeout=30_000)
            for width, height in SIZES:  # what is signed, reached by scrolling inside the form, at each size
                page.set_viewport_size({"width": width, "height": height})
                page.wait_for_timeout(300)
                _shot(page, f"form-{run_id[:8]}-{width}")
                missing = [n for n in reachable if not page.evaluate(REACHABLE, n)]
                assert missing == [], f"not reachable in the form at {width}×{height}: {missing}"
            fields = form.locator(".schema-form-property")
            fields.nth(0).locator("textarea").fill(name)
            fields.nth(1).locator("button.p-select-button__control").click()
            page.keyboard.press("ArrowDown")
            page.get_by_role("option", name=decision, exact=True).click()
            fields.nth(2).locator("textarea").fill(comment)
            fields.nth(3).locator("textarea").fill(signature)
            if confirm_hash is not None:
                label = fields.nth(4).inner_text()
                assert "Confirm hash" in label and "(Optional)" in label  # rejecting needs no hash
                fields.nth(4).locator("textarea").fill(confirm_hash)
            form.get_by_role("button", name="Submit").click()
            form.wait_for(state="detached")
        finally:
            browser.close()


def _shot(page, name: str) -> None:
    """A screenshot where ``SDGOV_BROWSER_SHOTS`` names a folder (to look at the layout by eye), else nothing."""
    folder = os.environ.get("SDGOV_BROWSER_SHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=False)


def _artifact(env: dict[str, str], run_id: str, key: str) -> tuple[str, str]:
    """The id and Markdown of an artifact on this flow run (through the API, as the UI reads it)."""
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
                key=ArtifactFilterKey(any_=[key]), flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(run_id)])
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
        )
        again = _wait(env, root, "agreement", 2, proc)
        # typing the controller's name without his signature (the field is required: a made-up one): refused too;
        # the form shows why the last attempt was refused, Φ, the rows, ε/δ, the deadline and the full hash
        spec_rows = yaml.safe_load(spec.read_text())["rows"]
        _decide_in_browser(
            url,
            run["run_id"],
            "Carl Controller",
            "approve",
            "unsigned",
            ["was refused", "separation of duties"],
            "sdgov1.e30.AA",
            reachable=(
                "was refused",
                "separation of duties",
                again["summary"]["phi"][-1],
                f"{spec_rows:,} synthetic records",
                "ε = ",
                "δ = ",
                again["deadline"],
                *_groups(run["sha256"]),
            ),
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
        draft = json.loads(Path(rel["summary"]["draft_card"]).with_name("card.json").read_text())
        art_id, art_md = _artifact(env, run["run_id"], "draft-card")
        assert draft_md.decode() in art_md  # the artifact is the draft card, whole
        summary_id, _ = _artifact(env, run["run_id"], "release-candidate")
        sha = rel["sha256"]
        rows = [f"{c['result']} — {c['name']}" for c in draft["audit"]["checks"]]  # each audit's verdict row
        _decide_in_browser(
            url,
            run["run_id"],
            "Carl Controller",
            "approve",
            "released from the browser",
            # the full hash, in four groups that wrap (the form's Markdown shows each as code)
            ["Overall verdict", "Audit rows", "evidence report", "draft-card"]
            + [sha[i : i + 16] for i in range(0, 64, 16)],
            _sign(env, run["run_id"], "Carl Controller", keys["Carl Controller"]),
            confirm_hash=sha[:8],
            reachable=(  # what is signed: Φ, the rows released, the verdict and each audit row, ε/δ, deadline, hash
                "PASS",
                *rows,
                " × ".join(draft["phi"][-1]["attributes"]),
                f"{draft['synthetic']['rows']:,} synthetic records",
                "ε = ",
                "δ = ",
                rel["deadline"],
                *_groups(sha),
            ),
            artifact_ids=(art_id, summary_id),
            artifact_expect=("DRAFT generator card, awaiting sign-off", draft["title"], "What was not preserved"),
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
