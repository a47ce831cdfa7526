#!/usr/bin/env bash
# Create .venv and install the exact locked dependency set plus sdgov itself (editable).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# The people of a team run sdgov as their own OS users (docs/operators.md): the venv's interpreter must be one they can
# run. A venv links to its base interpreter's installation (a pyenv under /root, mode 0700, is not theirs to read):
# when every folder above that installation is not passable by others, take the system's Python instead, if it is a
# supported one (3.11 or 3.12), and rebuild a venv made on an unreachable one. PYTHON=... chooses another.
reachable() {  # is the interpreter's installation readable by every user?
  "$1" -c 'import os, sys
from pathlib import Path
base = Path(sys.base_prefix).resolve()
ok = all(os.stat(p).st_mode & 0o001 for p in [base, *base.parents])
sys.exit(0 if ok else 1)' 2>/dev/null
}
supported() { "$1" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 13) else 1)' 2>/dev/null; }
if ! reachable "$PY" && [ -z "${PYTHON:-}" ] && [ -x /usr/bin/python3 ] && supported /usr/bin/python3 \
  && reachable /usr/bin/python3; then
  echo "note: $("$PY" -c 'import sys; print(sys.base_prefix)') is not readable by other users; the venv uses" \
    "/usr/bin/python3 so that every person of a team can run sdgov" >&2
  PY=/usr/bin/python3
fi
if [ -x .venv/bin/python ] && ! reachable .venv/bin/python && reachable "$PY"; then
  echo "note: rebuilding .venv on $PY (its interpreter was not runnable by other users)" >&2
  rm -rf .venv
fi
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
