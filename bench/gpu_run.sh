#!/usr/bin/env bash
# One device call (after bench/prepare_gpu_batch.sh here; carry .gpu): the GPU tests, then kforge
# bench over the shared KernelBench problems: cuda-agent verified and timed, kernelbench verified.
# Logs and JSON go to $OUT (8 files); the tables come last. A whole run takes about 10 minutes.
#   bench/gpu_run.sh [seconds for the cuda-agent bench] [seconds for the kernelbench bench]
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x .gpu/kforge ] || { echo "gpu_run: no .gpu/kforge: run bench/prepare_gpu_batch.sh here and carry .gpu" >&2; exit 2; }
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ -x /opt/torch/.venv/bin/python ]; then export KFORGE_PYTHON=/opt/torch/.venv/bin/python; fi
export KFORGE_PYTHON=${KFORGE_PYTHON:-python3}
export KFORGE_CACHE=$PWD/.gpu/cache KFORGE_COMMIT=$(cat .gpu/COMMIT) KFORGE_BIN=$PWD/.gpu/kforge
export KFORGE_KERNELBENCH=$PWD/.gpu/kb PYTHONPATH=$PWD/python
# Linking -lcudnn needs an unversioned libcudnn.so; the GPU machine may only have torch's libcudnn.so.9.
if ! ls /usr/local/cuda/lib64/libcudnn.so /usr/lib/x86_64-linux-gnu/libcudnn.so >/dev/null 2>&1; then
  so=$($KFORGE_PYTHON -c "import glob, os, nvidia.cudnn as c; print(sorted(glob.glob(os.path.join(list(c.__path__)[0], 'lib', 'libcudnn.so.*')))[0])" 2>/dev/null)
  if [ -n "$so" ]; then mkdir -p /tmp/kf-cudnn && ln -sf "$so" /tmp/kf-cudnn/libcudnn.so && export LIBRARY_PATH=/tmp/kf-cudnn:${LIBRARY_PATH:-}; fi
fi
{ nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader; $KFORGE_PYTHON -c "import torch; print('torch', torch.__version__)"; echo "commit $KFORGE_COMMIT"; } | tee "$OUT/env.txt"
t_agent=${1:-300}
t_kb=${2:-150}
# 1. GPU tests first, alone, one line per test (a run cut short still says which passed).
timeout 240 $KFORGE_PYTHON -m pytest -v -p no:cacheprovider -rs tests/gpu > "$OUT/gpu-tests.txt" 2>&1
echo "gpu tests: exit $?"; grep -E "PASSED|FAILED|ERROR|SKIPPED" "$OUT/gpu-tests.txt" | cut -c1-150
pkill -9 -f kforge.harness
# 2. cuda-agent: verify (parallel workers, which also warm torch.compile's cache; out-of-memory ones
#    again alone), then time alone on the GPU. --time-limit stops starting new work; the outer
#    timeout is only a safety net.
timeout $((t_agent + 90)) .gpu/kforge bench --suite .gpu/kb --protocol cuda-agent --trials 10 --workers 4 \
  --time-limit "$t_agent" --json "$OUT/bench-cuda-agent.json" --out /tmp/bench-cuda-agent --force \
  > "$OUT/bench-cuda-agent.txt" 2> "$OUT/bench-cuda-agent.log"
echo "cuda-agent bench: exit $?"
pkill -9 -f kforge.harness
# 3. kernelbench: verification only.
timeout $((t_kb + 60)) .gpu/kforge bench --suite .gpu/kb --protocol kernelbench --no-profile --workers 4 \
  --time-limit "$t_kb" --json "$OUT/bench-kernelbench.json" --out /tmp/bench-kernelbench --force \
  > "$OUT/bench-kernelbench.txt" 2> "$OUT/bench-kernelbench.log"
echo "kernelbench bench: exit $?"
pkill -9 -f kforge.harness
grep -h "^  level" "$OUT"/bench-*.txt | cut -c1-150 | head -30
cat "$OUT/bench-cuda-agent.txt" "$OUT/bench-kernelbench.txt" | grep -v "^  level"
