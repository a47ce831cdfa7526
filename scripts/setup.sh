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
# Optional Debian packages for two system tests, skipped without them; no apt, no root or no network just prints a note
# and setup carries on. Browser test (tests/system/test_browser.py): Chromium, driven by Playwright (pinned in the lock
# file). Team test (tests/system/test_team_postgres.py): PostgreSQL's server binaries (initdb, pg_ctl); the test runs
# its own throwaway cluster, so the package's own service is not needed.
WANT=()
if [ ! -x /usr/bin/chromium ] && [ "${SDGOV_SKIP_CHROMIUM:-0}" != 1 ]; then WANT+=(chromium); fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && [ "${SDGOV_SKIP_POSTGRES:-0}" != 1 ]; then WANT+=(postgresql); fi
if [ ${#WANT[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
  $SUDO apt-get update -qq >/dev/null 2>&1 || true
  for pkg in "${WANT[@]}"; do
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null 2>&1 \
      || echo "note: could not install Debian's $pkg; the tests that need it will be skipped" >&2
  done
fi
echo "sdgov installed in .venv ($(.venv/bin/python --version))" >&2
