"""Regenerate docs/images/{pause_form,card,evidence_report}.png: what an approver sees, from a real demo run.

    .venv/bin/python scripts/screenshots.py [--out docs/images] [--chromium /usr/bin/chromium]

One command, nothing to set up: in a temporary directory it writes the demo inputs and a registry whose approvers
(Ada analyst, Carl controller) have fresh keys, starts ``sdgov server start --auth`` on a free port, runs
``sdgov propose`` as Ada, approves Φ as Carl (``sdgov approve``), and when the run pauses for the release sign-off
takes the screenshots with headless Chromium (Playwright): the Prefect UI's resume form, the draft generator card
and the controller-only evidence report. Carl then approves the release (typing the hash prefix with ``--hash``),
and the script checks that the published card is the draft plus the sign-off section. Everything it started is
stopped and the temporary directory removed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
AUTH = "ops:screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]
PEOPLE = [("Ada Analyst", "analyst"), ("Carl Controller", "controller")]


def sdgov(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).with_name("sdgov")), *argv], env=env, capture_output=True, text=True
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo_inputs(tmp: Path) -> Path:
    """The demo spec (with its pre-registered audits), schema and made-up data; returns the spec's path."""
    from sdgov.data.schema import load_schema
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data

    dest = tmp / "inputs"
    dest.mkdir(parents=True)
    for name in ("schema.yaml", "approvals.yaml"):
        shutil.copy(inputs() / name, dest / name)
    write_demo_data(load_schema(dest / "schema.yaml"), dest / "data.csv")
    spec = yaml.safe_load((inputs() / "spec.yaml").read_text())
    spec["dataset"]["path"] = "data.csv"
    (dest / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    return dest / "spec.yaml"


def registry(tmp: Path) -> tuple[Path, dict[str, Path]]:
    """A registry whose approvers registry and policy Carl adopted by a signed commit; the private keys."""
    from sdgov.governance.controller import commit
    from sdgov.governance.policy import init_policy
    from sdgov.identity.keys import keygen
    from sdgov.registry.log import Registry

    root, keys = tmp / "registry", tmp / "keys"
    init_policy(root, controller="Carl Controller")
    keys.mkdir()
    paths = {name: keys / f"{name.split()[0].lower()}.pem" for name, _ in PEOPLE}
    entries = [{"name": n, "role": r, "public_key": keygen(paths[n])} for n, r in PEOPLE]
    (root / "approvers.yaml").write_text(yaml.safe_dump({"approvers": entries}, sort_keys=False))
    commit(Registry(root), "Carl Controller", paths["Carl Controller"])
    return root, paths


def wait_paused(env: dict[str, str], root: Path, subject: str, proc: subprocess.Popen) -> dict:
    for _ in range(1200):
        r = sdgov("runs", "--json", env=env)
        mine = [p for p in json.loads(r.stdout or '{"paused": []}')["paused"] if p["registry"] == str(root)]
        if mine and mine[0]["subject"] == subject:
            return mine[0]
        if proc.poll() is not None:
            raise SystemExit(f"the run ended before pausing for the {subject}: {proc.stderr.read()[-2000:]}")
        time.sleep(1)
    raise SystemExit(f"no pause for the {subject}")


def shoot(url: str, run_id: str, rel: dict, out: Path, chromium: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1500}, device_scale_factor=1)
            page.goto(f"{url}/login")
            page.locator("input[type=password]").fill(AUTH)
            page.get_by_role("button", name="Login").click()
            page.wait_for_function("() => !location.pathname.startsWith('/login')")
            page.goto(f"{url}/runs/flow-run/{run_id}")
            page.get_by_role("button", name="Resume").click()
            form = page.locator(".p-modal__card")
            expect(form).to_contain_text(rel["sha256"][:16], timeout=60_000)  # the description has rendered
            expect(form).to_contain_text("Confirm hash", timeout=60_000)
            form.screenshot(path=str(out / "pause_form.png"))
            for name, path in (
                ("card", rel["summary"]["draft_card"]),
                ("evidence_report", rel["summary"]["evidence_report"]),
            ):
                if not path:
                    continue
                page.goto(Path(path).as_uri())
                page.wait_for_load_state("load")
                page.screenshot(
                    path=str(out / f"{name}.png"), clip={"x": 0, "y": 0, "width": 1280, "height": 2200}, full_page=True
                )
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(REPO / "docs" / "images"))
    ap.add_argument("--chromium", default=os.environ.get("SDGOV_CHROMIUM", "/usr/bin/chromium"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="sdgov-screenshots-"))
    procs: list[subprocess.Popen] = []
    try:
        spec = demo_inputs(tmp)
        root, keys = registry(tmp)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        base = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("sdgov")), "server", "start", "--port", str(port),
             "--home", str(tmp / "prefect"), "--auth", AUTH],
            env=base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        procs.append(server)
        env = {
            **base,
            "PREFECT_HOME": str(tmp / "client"),
            "PREFECT_API_URL": f"{url}/api",
            "PREFECT_API_AUTH_STRING": AUTH,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
        import httpx

        for _ in range(240):
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        propose = subprocess.Popen(
            [str(Path(sys.executable).with_name("sdgov")), "propose", "--spec", str(spec), "--as", "Ada Analyst",
             "--key", str(keys["Ada Analyst"]),
             "--root", str(root), "--poll", "1", "--json"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        procs.append(propose)
        carl = ("--as", "Carl Controller", "--key", str(keys["Carl Controller"]))
        ag = wait_paused(env, root, "agreement", propose)
        r = sdgov("approve", ag["run_id"], *carl, "--yes", "--hash", ag["sha256"][:8], env=env)
        if r.returncode:
            raise SystemExit(r.stderr)
        rel = wait_paused(env, root, "release", propose)
        draft = {n: Path(rel["summary"][k]).read_bytes() for n, k in (("html", "draft_card"), ("md", "draft_card_md"))}
        shoot(url, rel["run_id"], rel, out, args.chromium)
        r = sdgov("approve", rel["run_id"], *carl, "--yes", "--hash", rel["sha256"][:8], "--comment", "demo", env=env)
        if r.returncode:
            raise SystemExit(r.stderr)
        result = json.loads(propose.communicate(timeout=300)[0])
        from sdgov.reporting.card import SIGNOFF_MARKER

        marker = SIGNOFF_MARKER.encode()
        for n, key in (("html", "card_html"), ("md", "card_md")):
            published = Path(result["release"][key]).read_bytes()
            assert published.split(marker)[0] == draft[n].split(marker)[0], f"published card.{n} is not the draft"
        print("\n".join(str(out / f"{n}.png") for n in ("pause_form", "card", "evidence_report")))
        return 0
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
