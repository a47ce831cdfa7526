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
echo "sdgov installed in .venv ($(.venv/bin/python --version))" >&2
