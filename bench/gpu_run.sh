#!/usr/bin/env bash
# One device call over the candidates that bench/prepare_gpu_batch.sh staged in .gpu/ (carry it):
# verify all of them under both protocols, profile the correct cuda-agent ones, print a table last.
#   bench/gpu_run.sh [gpu_suite.py args...]
set -uo pipefail
cd "$(dirname "$0")/.."
[ -d .gpu/cand ] || { echo "gpu_run: no .gpu/cand: run bench/prepare_gpu_batch.sh here and carry .gpu" >&2; exit 2; }
if [ -x /opt/torch/.venv/bin/python ]; then export KFORGE_PYTHON=/opt/torch/.venv/bin/python; fi
export KFORGE_PYTHON=${KFORGE_PYTHON:-python3}
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,clocks.sm --format=csv,noheader
PYTHONUNBUFFERED=1 $KFORGE_PYTHON bench/gpu_suite.py --cands .gpu/cand --suite .gpu/kb --out "$OUT" "$@" 2>&1 | tee "$OUT/suite.log"
