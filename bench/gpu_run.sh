#!/usr/bin/env bash
# One device call: build kforge on the GPU machine, build every problem of the carried suite,
# verify each candidate against PyTorch in a restartable harness worker, print a table last.
#   bench/gpu_run.sh [gpu_check.py args...]     (the suite is .kb/, a carried copy of shared/kernelbench)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -x /opt/torch/.venv/bin/python ]; then export KFORGE_PYTHON=/opt/torch/.venv/bin/python; fi
export KFORGE_PYTHON=${KFORGE_PYTHON:-python3}
export KFORGE_CACHE=/tmp/kforge-cache
export KFORGE_COMMIT=$(cat .kb/COMMIT 2>/dev/null || echo unknown)
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKFORGE_BUILD_TESTS=OFF > $OUT/cmake.log 2>&1 \
  && cmake --build build-gpu -j 16 >> $OUT/cmake.log 2>&1 || { tail -40 $OUT/cmake.log; exit 1; }
echo "kforge built on the device machine in $(( $(date +%s) - t0 )) s"
PYTHONUNBUFFERED=1 $KFORGE_PYTHON bench/gpu_check.py --kforge build-gpu/kforge --suite .kb --out /tmp/run "$@" 2>&1 | tee $OUT/check.log
cp /tmp/run/results.json $OUT/results.json 2>/dev/null
