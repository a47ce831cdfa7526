#!/usr/bin/env bash
# Create .venv and install the exact locked dependency set plus sdgov itself (editable).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -r requirements.lock
.venv/bin/python -m pip install -q --no-deps -e .
# Browser test (tests/system/test_browser.py): Debian's Chromium driven by Playwright (pinned in the lock file). Optional:
# the test is skipped without it; no apt, no root or no network just prints a note and setup carries on.
if [ ! -x /usr/bin/chromium ] && [ "${SDGOV_SKIP_CHROMIUM:-0}" != 1 ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
  { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } \
    >/dev/null 2>&1 || echo "note: could not install Debian's chromium; the browser test will be skipped" >&2
fi
echo "sdgov installed in .venv ($(.venv/bin/python --version))" >&2
