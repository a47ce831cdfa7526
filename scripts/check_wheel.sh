#!/usr/bin/env bash
# Build the wheel, install it into a fresh venv outside the checkout, and run the demo and `registry verify`
# from an empty directory: proves the installed package carries everything (no clone paths, no missing
# subpackage, templates and demo inputs as package data). Used by .ci/run; prints one line per step.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sdgov-wheel-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
.venv/bin/python -m pip wheel -q --no-deps --no-build-isolation -w "$WORK/dist" "$REPO" >/dev/null 2>&1 \
  || .venv/bin/python -m pip wheel -q --no-deps -w "$WORK/dist" "$REPO" >/dev/null
WHEEL=$(ls "$WORK"/dist/sdgov-*.whl)
echo "wheel: $(basename "$WHEEL")"
# Nothing generic at the top of site-packages: every module lives under sdgov/.
"$PY" - "$WHEEL" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
assert tops == {"sdgov"}, f"wheel installs top-level names other than sdgov: {sorted(tops)}"
for need in ("sdgov/commands/__init__.py", "sdgov/tasks/measure.py", "sdgov/cards/card.html.j2", "sdgov/demo/spec.yaml"):
    assert need in names, f"wheel lacks {need}"
print(f"wheel contents ok: {len(names)} files, one top-level package")
PY
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
"$WORK/venv/bin/python" -m pip install -q -r "$REPO/requirements.lock" "$WHEEL" > "$WORK/pip.log" 2>&1 \
  || { tail -20 "$WORK/pip.log"; echo "installing the wheel and the lock into a fresh venv failed"; exit 1; }
echo "installed into a fresh venv (${SECONDS} s so far)"
mkdir "$WORK/empty" && cd "$WORK/empty"
export PREFECT_HOME="$WORK/prefect" PREFECT_SERVER_ANALYTICS_ENABLED=false DVC_NO_ANALYTICS=1
"$WORK/venv/bin/sdgov" demo --json > "$WORK/demo.json"
"$WORK/venv/bin/python" -c "import json,sys; r=json.load(open(sys.argv[1])); print('demo released', r['release_id'])" "$WORK/demo.json"
"$WORK/venv/bin/sdgov" registry verify
test -z "$(ls -A "$WORK/empty" | grep -v '^registry$\|^build$')" || { echo "demo wrote outside registry/ and build/: $(ls "$WORK/empty")"; exit 1; }
echo "wheel install ok (fresh venv outside the checkout, run from an empty directory; ${SECONDS} s)"
