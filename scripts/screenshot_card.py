#!/usr/bin/env python
"""Screenshots of a release's public card and of the controller's evidence report, for docs/images/.

    python scripts/screenshot_card.py REGISTRY [--out docs/images] [--chromium /usr/bin/chromium]

Takes the newest release under ``REGISTRY/releases`` and its run's ``evidence/evidence.html``; writes
``card.png`` and ``evidence.png`` (the top of each page as a reader first sees it, 1280 px wide) with Playwright
driving the system Chromium, as the browser test does.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("registry", type=Path)
    p.add_argument("--out", type=Path, default=Path("docs/images"))
    p.add_argument("--chromium", default="/usr/bin/chromium")
    p.add_argument("--height", type=int, default=2200, help="pixels of each page to keep")
    args = p.parse_args()
    release = max((args.registry / "releases").iterdir(), key=lambda d: d.stat().st_mtime)
    run_prefix = release.name.rsplit("-", 1)[-1]
    run_dir = next(d for d in (args.registry / "runs").iterdir() if d.name.startswith(run_prefix))
    pages = {"card.png": release / "card.html", "evidence.png": run_dir / "evidence" / "evidence.html"}
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": args.height})
        for name, html in pages.items():
            page.goto(html.resolve().as_uri())
            page.screenshot(path=str(args.out / name), clip={"x": 0, "y": 0, "width": 1280, "height": args.height})
            print(args.out / name)
        browser.close()


if __name__ == "__main__":
    main()
