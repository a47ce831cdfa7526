#!/bin/bash
# OpenDP AIM at its defaults on census / Adult codes, many runs in parallel; results tarred to $OUT (issue 27 item 3)
#
# Made for a lent accelerator machine (issue 27 item 3, 2026-11-26), where nothing can be installed from the
# network: OpenDP 0.16 and the versions its `mbi` extra pins (mbi 1.1.0, polars 1.36.1, polars-runtime-32 1.36.1)
# plus `deprecated` travel as one packed site folder, `.whl/site.tar.xz`, with the two large shared libraries
# stripped (`strip --strip-unneeded`) and xz-compressed beside it (`.whl/o.so.xz`: opendp/lib/opendp.abi3.so,
# `.whl/p.so.xz`: _polars_runtime_32/_polars_runtime.abi3.so), to fit the 64 MiB a call may carry. The data are
# sdgov's integer codes of each dataset and its domain sizes (`.devdata/{census,adult}_codes.csv` / `_domain.json`,
# written as bench_aim.py writes them for its OpenDP arms; confidential: ignored by git, never committed).
# Every run is benchmarks/peers/opendp_mbi.py ... aim (OpenDP's AIM with every default) under `timeout $T`.
#   T=420 bash benchmarks/peers/opendp_aim_parallel.sh                            # 18 runs at once
#   T=320 RUNS="census:1 adult:1" REPS="0 1" bash benchmarks/peers/opendp_aim_parallel.sh   # 4 runs at once
set -u
T=${T:-420}; SITE=${SITE:-/tmp/site}; PY=${PY:-python3}; RES=${RES:-/tmp/res}
mkdir -p $SITE $RES
tar -xJf .whl/site.tar.xz -C $SITE
xz -dc .whl/o.so.xz > $SITE/opendp/lib/opendp.abi3.so
xz -dc .whl/p.so.xz > $SITE/_polars_runtime_32/_polars_runtime.abi3.so
chmod +x $SITE/opendp/lib/opendp.abi3.so $SITE/_polars_runtime_32/_polars_runtime.abi3.so
export PYTHONPATH=$SITE XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
$PY -c "import jax; print(jax.__version__, jax.devices()); import opendp.prelude, polars, mbi; print('imports ok')" 2>&1 | tail -3
nproc; nvidia-smi --query-gpu=name,memory.used --format=csv 2>/dev/null
for spec in ${RUNS:-census:1 adult:1 census:0.5 adult:0.5 census:4 adult:4}; do
  data=${spec%%:*}; eps=${spec##*:}
  rows=$(($(wc -l < .devdata/${data}_codes.csv) - 1))
  for rep in ${REPS:-0 1 2}; do
    name=$data-$eps-$rep
    ( s=$(date +%s); timeout $T $PY benchmarks/peers/opendp_mbi.py .devdata/${data}_codes.csv .devdata/${data}_domain.json $eps 1e-5 $rows $RES/$name.csv aim > $RES/$name.json 2> $RES/$name.err; echo "$name rc=$? wall=$(( $(date +%s) - s ))s" >> $RES/status.txt ) &
  done
done
( while sleep 60; do echo "$(date +%T) running: $(jobs -r | wc -l) load: $(cut -d' ' -f1-3 /proc/loadavg) $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader 2>/dev/null)"; done ) &
mon=$!
wait $(jobs -p | grep -v "^$mon$") 2>/dev/null
kill $mon 2>/dev/null
cat $RES/status.txt
tail -n 3 $RES/*.err | tail -40
gzip -f $RES/*.csv 2>/dev/null
tar -cf ${OUT:-/tmp}/aim.tar -C $RES .
ls -la ${OUT:-/tmp}
