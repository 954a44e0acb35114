#!/usr/bin/env bash
# Device calls (after bench/prepare_gpu_batch.sh here; carry .gpu), in parts so that each call stays
# inside the 10-minute limit:
#   bench/gpu_run.sh tests cuda-agent     GPU tests alone (~2 min), then all 150 problems verified and
#                                         timed under cuda-agent (--time-limit 300 s)
#   bench/gpu_run.sh kernelbench probe    all 150 verified and timed under kernelbench (--time-limit 240 s), then
#                                         the cuDNN engine probe of failing convs (conv_engine_probe.py)
#   bench/gpu_run.sh threats              every threat fixture through the GPU harness (selftest --gpu)
#   bench/gpu_run.sh exports              every level-1 problem exported (kernelbench format) and verified
#                                         in that form by kforge's harness (bench/export_check.py)
#   bench/gpu_run.sh upstream             upstream KernelBench's eval_kernel_against_ref (and strict checker) beside
#                                         kforge's harness on every export of UPSTREAM_LEVEL (default level1;
#                                         UPSTREAM_SHARD=K/N or UPSTREAM_ONLY=a,b to fit a call):
#                                         tests/gpu/test_upstream_evaluator.py; needs .gpu/upstream
#   bench/gpu_run.sh explore              every schedule the skills reach, measured and recorded (explore.jsonl)
#                                         for `kforge train --replay` here (issue #5's GPU criterion); with
#                                         EXPLORE_REUSE=bench/results/<old>.jsonl only the problems whose reachable
#                                         programs changed since that log are measured, the others copied
#                                         (issue #29; `kforge explore ... --reuse OLD --dry-run` lists them here;
#                                         give EXPLORE_MAX_STATES=4096: the old log holds problems of 1430 states)
#   bench/gpu_run.sh cuda-agent kernels   with PROFILE="level2/1_Conv2D_ReLU_BiasAdd ..." (and BENCH_EXTRA
#                                         "--only ..." to build just those): per-kernel device times of
#                                         candidate, eager and compile (bench/kernel_profile.py)
#   bench/gpu_run.sh knob-kernels         the same for PROFILE's problems built with KNOB (channels_last=1)
#                                         on the kernels of KNOB_STRATEGY (cudnn_conv): build_with_knob.py
#   bench/gpu_run.sh optimize             `kforge optimize --device cuda` live on OPTIMIZE_PROBLEMS, with and
#                                         without --planned (the agent's GPU evaluations, the result)
#   bench/gpu_run.sh torchvision          every torchvision classification model (bench/torchvision_suite.py)
#                                         built and verified (TV_FAMILIES, TV_PROTOCOL, TV_LIMIT, TV_ONLY, TV_MAX_PARAMS,
#                                         TV_TIMED)
#   bench/gpu_run.sh buildtime            each problem of BUILDTIME_LEVEL (default zoo) built alone and cold beside
#                                         torch.compile's cold first call (bench/build_time.py; BUILDTIME_ONLY=a,b)
# EXPORT_NAME names the export check's JSON and log (default export-check; EXPORT_EXTRA "--shard 2/2").
# GPU_TESTS names the test files or node ids to run (default tests/gpu); their output, with the tables the tests
# print (pytest -s), goes to gpu-tests.txt.
# TESTS_TIMEOUT, KERNELBENCH_LIMIT and CUDA_AGENT_LIMIT (seconds) shorten those parts to fit a call;
# TIMING (events, do_bench or wall) and BASELINES ("eager,compile,compile_tf32,compile_max_autotune,...")
# pass --timing and --baselines to both bench parts.
# LEVELS="level2" benches only the levels named (default: all of .gpu/kb); BENCH_EXTRA adds bench
# options (e.g. "--only 1_Conv2D_ReLU_BiasAdd --disable-skill cudnn_fastest_engine").
# JSON, logs and tables go to $OUT (at most 8 files come back: past 8, the logs are packed into
# logs.tgz); the tables come last.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x .gpu/kforge ] || { echo "gpu_run: no .gpu/kforge: run bench/prepare_gpu_batch.sh here and carry .gpu" >&2; exit 2; }
# The cache travels compressed (the carry limit is 64 MiB); unpacked once per machine.
if [ -f .gpu/cache.tgz ] && [ ! -d .gpu/cache ]; then tar xzf .gpu/cache.tgz -C .gpu; fi
[ $# -gt 0 ] || { echo "gpu_run: name the parts to run: tests, cuda-agent, kernelbench, threats, probe" >&2; exit 2; }
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ -x /opt/torch/.venv/bin/python ]; then export KFORGE_PYTHON=/opt/torch/.venv/bin/python; fi
export KFORGE_PYTHON=${KFORGE_PYTHON:-python3}
if ldd .gpu/kforge | grep -q "not found"; then export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; fi
export KFORGE_CACHE=$PWD/.gpu/cache KFORGE_COMMIT=$(cat .gpu/COMMIT) KFORGE_BIN=$PWD/.gpu/kforge
export KFORGE_KERNELBENCH=$PWD/.gpu/kb PYTHONPATH=$PWD/python
# Linking -lcudnn needs an unversioned libcudnn.so; the GPU machine may only have torch's libcudnn.so.9.
if ! ls /usr/local/cuda/lib64/libcudnn.so /usr/lib/x86_64-linux-gnu/libcudnn.so >/dev/null 2>&1; then
  so=$($KFORGE_PYTHON -c "import glob, os, nvidia.cudnn as c; print(sorted(glob.glob(os.path.join(list(c.__path__)[0], 'lib', 'libcudnn.so.*')))[0])" 2>/dev/null)
  if [ -n "$so" ]; then mkdir -p /tmp/kf-cudnn && ln -sf "$so" /tmp/kf-cudnn/libcudnn.so && export LIBRARY_PATH=/tmp/kf-cudnn:${LIBRARY_PATH:-}; fi
fi
{ nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader; $KFORGE_PYTHON -c "import torch; print('torch', torch.__version__)"; echo "commit $KFORGE_COMMIT; parts $*"; } | tee "$OUT/env.txt"

SUITE=.gpu/kb
if [ -n "${LEVELS:-}" ]; then
  SUITE=/tmp/kf-suite; rm -rf "$SUITE"; mkdir -p "$SUITE"
  for l in $LEVELS; do ln -s "$PWD/.gpu/kb/$l" "$SUITE/$l"; done
fi

bench() {  # bench PROTOCOL TIME_LIMIT EXTRA_ARGS...: --time-limit stops new work; timeout is a safety net
  local protocol=$1 limit=$2
  shift 2
  timeout $((limit + 90)) .gpu/kforge bench --suite "$SUITE" --protocol "$protocol" --workers 4 --time-limit "$limit" \
    --json "$OUT/bench-$protocol.json" --out /tmp/bench-"$protocol" --force "$@" ${BENCH_EXTRA:-} \
    --timing "${TIMING:-events}" ${BASELINES:+--baselines "$BASELINES"} \
    > /tmp/bench-"$protocol".txt 2> "$OUT/bench-$protocol.log"
  echo "$protocol bench: exit $?"
  pkill -9 -f 'kforge[.](harness|candidate_worker)'
  cat /tmp/bench-"$protocol".txt >> "$OUT/bench-tables.txt"
}

for part in "$@"; do
  case "$part" in
    tests)
      timeout "${TESTS_TIMEOUT:-420}" $KFORGE_PYTHON -m pytest -v -s -p no:cacheprovider -rs ${GPU_TESTS:-tests/gpu} > "$OUT/gpu-tests.txt" 2>&1
      echo "gpu tests: exit $?"; grep -E "PASSED|FAILED|ERROR|SKIPPED" "$OUT/gpu-tests.txt" | cut -c1-150
      pkill -9 -f 'kforge[.](harness|candidate_worker)' ;;
    cuda-agent) bench cuda-agent "${CUDA_AGENT_LIMIT:-300}" --trials 10 ;;
    kernelbench) bench kernelbench "${KERNELBENCH_LIMIT:-240}" --trials 10 ;;
    threats)
      timeout 420 .gpu/kforge selftest threats --gpu --fixtures tests/threats --json "$OUT/threats.json" > "$OUT/threats.txt" 2>&1
      echo "threats: exit $?"; tail -30 "$OUT/threats.txt"
      pkill -9 -f 'kforge[.](harness|candidate_worker)' ;;
    probe)
      timeout 150 $KFORGE_PYTHON bench/conv_engine_probe.py --cands /tmp/bench-kernelbench .gpu/kb/level1/50_*.py \
        .gpu/kb/level1/57_*.py .gpu/kb/level1/76_*.py .gpu/kb/level1/81_*.py > "$OUT/conv-probe.txt" 2>&1
      echo "conv probe: exit $?"; tail -30 "$OUT/conv-probe.txt" ;;
    kernels)
      # Per-kernel device times (candidate, eager, compile) of the problems in PROFILE (e.g.
      # "level2/1_Conv2D_ReLU_BiasAdd"), from the candidates the cuda-agent part built in this call.
      timeout "${PROFILE_LIMIT:-200}" $KFORGE_PYTHON bench/kernel_profile.py --cands /tmp/bench-cuda-agent \
        $(for p in ${PROFILE:-}; do echo ".gpu/kb/$p.py"; done) > "$OUT/kernel-profile.txt" 2>&1
      echo "kernel profile: exit $?"; tail -60 "$OUT/kernel-profile.txt" ;;
    knob-kernels)
      # The same profile for the problems in PROFILE built with KNOB (e.g. channels_last=1) set by hand
      # on the kernels of KNOB_STRATEGY (default cudnn_conv): bench/build_with_knob.py.
      rm -rf /tmp/knob-cands
      files=(); for p in ${PROFILE:-}; do files+=(".gpu/kb/$p.py"); done
      { timeout 120 $KFORGE_PYTHON bench/build_with_knob.py --out /tmp/knob-cands --strategy "${KNOB_STRATEGY:-cudnn_conv}" \
          --knob "${KNOB:-channels_last=1}" "${files[@]}" &&
        timeout "${PROFILE_LIMIT:-200}" $KFORGE_PYTHON bench/kernel_profile.py --cands /tmp/knob-cands "${files[@]}"; } \
        > "$OUT/knob-kernel-profile.txt" 2>&1
      echo "knob kernel profile: exit $?"; tail -40 "$OUT/knob-kernel-profile.txt" ;;
    exports)
      # Every problem of EXPORT_LEVEL (default level1) exported as one KernelBench file and verified in
      # that form (bench/export_check.py; EXPORT_JOBS evaluations at once).
      timeout "${EXPORT_LIMIT:-540}" $KFORGE_PYTHON bench/export_check.py --suite ".gpu/kb/${EXPORT_LEVEL:-level1}" \
        --out /tmp/exports --json "$OUT/${EXPORT_NAME:-export-check}.json" -j "${EXPORT_JOBS:-12}" ${EXPORT_EXTRA:-} > "$OUT/${EXPORT_NAME:-export-check}.txt" 2>&1
      echo "export check: exit $?"; grep -v "^\[" "$OUT/${EXPORT_NAME:-export-check}.txt" | tail -40
      pkill -9 -f 'kforge[.](harness|candidate_worker)' ;;
    torchvision)
      # Every torchvision model of TV_FAMILIES (default classification; or "all": with segmentation and video) from
      # bench/torchvision_suite.py (TV_ONLY=a,b, TV_MAX_PARAMS millions)
      # built and verified under TV_PROTOCOL (default cuda-agent), not timed unless TV_TIMED=1; TV_LIMIT seconds.
      rm -rf /tmp/tv-suite
      $KFORGE_PYTHON bench/torchvision_suite.py --out /tmp/tv-suite --families "${TV_FAMILIES:-classification}" \
        ${TV_ONLY:+--only "$TV_ONLY"} \
        ${TV_MAX_PARAMS:+--max-params "$TV_MAX_PARAMS"} 2>&1 | tail -1
      tv_protocol=${TV_PROTOCOL:-cuda-agent}
      timing=(--no-profile); [ "${TV_TIMED:-0}" = 1 ] && timing=(--trials 10)
      SUITE=/tmp/tv-suite bench "$tv_protocol" "${TV_LIMIT:-420}" "${timing[@]}"
      mv "$OUT/bench-$tv_protocol.json" "$OUT/bench-torchvision-$tv_protocol.json"
      mv "$OUT/bench-$tv_protocol.log" "$OUT/bench-torchvision-$tv_protocol.log" ;;
    buildtime)
      # Each problem of BUILDTIME_LEVEL (default zoo) built alone, cold (runtime units seeded once), beside
      # torch.compile's cold first call in a fresh process (bench/build_time.py; BUILDTIME_ONLY=a,b).
      timeout "${BUILDTIME_LIMIT:-480}" $KFORGE_PYTHON bench/build_time.py --suite ".gpu/kb/${BUILDTIME_LEVEL:-zoo}" \
        --json "$OUT/build-time.json" --time-limit "$(( ${BUILDTIME_LIMIT:-480} - 90 ))" \
        ${BUILDTIME_ONLY:+--only "$BUILDTIME_ONLY"} > "$OUT/build-time.txt" 2>&1
      echo "build time: exit $?"; tail -45 "$OUT/build-time.txt" ;;
    upstream)
      # Upstream's evaluator on kforge's exports, one process per file (#27 item 4); records after each
      # problem in $OUT/upstream-<level>.json, disagreements listed at the end of upstream.txt.
      KFORGE_KERNELBENCH_UPSTREAM=$PWD/.gpu/upstream KFORGE_UPSTREAM_EVAL=${UPSTREAM_LEVEL:-level1} \
        KFORGE_UPSTREAM_SHARD=${UPSTREAM_SHARD:-} KFORGE_UPSTREAM_ONLY=${UPSTREAM_ONLY:-} \
        KFORGE_UPSTREAM_JSON="$OUT/upstream-{level}.json" timeout "${UPSTREAM_LIMIT:-540}" \
        $KFORGE_PYTHON -m pytest -v -s -p no:cacheprovider -rs tests/gpu/test_upstream_evaluator.py > "$OUT/upstream.txt" 2>&1
      echo "upstream evaluator: exit $?"; tail -40 "$OUT/upstream.txt"
      pkill -9 -f 'kforge[.](harness|candidate_worker)' ;;
    explore)
      # Every schedule the skills reach from each problem (exhaustive search), built, verified and timed
      # (candidate and eager), recorded for `kforge train --eval-tasks ... --replay` (issue #5's criterion).
      # EXPLORE_LEVELS (default "level2 level1"), EXPLORE_MAX_STATES (20), EXPLORE_LIMIT (400 s), EXPLORE_EXTRA;
      # EXPLORE_FROM: a log of an earlier call of this catalogue (a killed or time-limited run) to continue (--resume).
      # EXPLORE_REUSE: logs of another catalogue or commit (space-separated): a problem they finished whose every
      # program reachable today they hold is copied from them (--reuse), the others are measured whole.
      dirs=(); for l in ${EXPLORE_LEVELS:-level2 level1}; do dirs+=(".gpu/kb/$l"); done
      earlier=()
      if [ -n "${EXPLORE_FROM:-}" ]; then cp "$EXPLORE_FROM" "$OUT/explore.jsonl" && earlier=(--resume); fi
      for log in ${EXPLORE_REUSE:-}; do earlier+=(--reuse "$log"); done
      timeout $((${EXPLORE_LIMIT:-400} + 120)) .gpu/kforge explore "${dirs[@]}" --device cuda --no-compile --eager-once \
        --max-states "${EXPLORE_MAX_STATES:-20}" --trials 10 --time-limit "${EXPLORE_LIMIT:-400}" \
        --out /tmp/explore-candidates --record "$OUT/explore.jsonl" --db "$OUT/measurements.sqlite" --json "$OUT/explore.json" "${earlier[@]}" ${EXPLORE_EXTRA:-} \
        > "$OUT/explore.txt" 2> "$OUT/explore.log"
      echo "explore: exit $?"; tail -4 "$OUT/explore.txt"; grep -c '"task_done"' "$OUT/explore.jsonl"
      grep "problems reused from" "$OUT/explore.log" | cut -c1-300
      .gpu/kforge catalogue --check "$OUT/explore.jsonl" 2>&1 | tail -2
      pkill -9 -f 'kforge[.](harness|candidate_worker)' ;;
    optimize)
      # `kforge optimize --device cuda` live on OPTIMIZE_PROBLEMS (default: level2/99_Matmul_GELU_Softmax),
      # once per mode in OPTIMIZE_MODES (default "planned every-turn": --planned, then without it), with
      # OPTIMIZE_EXTRA; each report to $OUT/optimize-<problem>-<mode>.json, a summary line each.
      for p in ${OPTIMIZE_PROBLEMS:-level2/99_Matmul_GELU_Softmax}; do
        for mode in ${OPTIMIZE_MODES:-planned every-turn}; do
          flag=(); [ "$mode" = planned ] && flag=(--planned)
          name=$(basename "$p")
          timeout "${OPTIMIZE_LIMIT:-240}" .gpu/kforge optimize ".gpu/kb/$p.py" --device cuda "${flag[@]}" --trials 5 \
            --out "/tmp/optimize-$name-$mode" --force --json ${OPTIMIZE_EXTRA:-} > "$OUT/optimize-$name-$mode.json" 2> "/tmp/optimize-$name-$mode.log"
          echo "optimize $name $mode: exit $?"
          $KFORGE_PYTHON -c "import json,sys; r=json.load(open(sys.argv[1])); a=r['agent']; m=r.get('result',{}); print('  policy', a['policy'], '| evaluations', a['evaluations'], '| built', a.get('candidates_built'), '| actions', a['actions'], '| t_candidate', m.get('t_candidate'), 't_compile', m.get('t_compile'))" "$OUT/optimize-$name-$mode.json" 2>&1 | cut -c1-400
        done
      done
      pkill -9 -f 'kforge[.](harness|candidate_worker)' ;;
    *) echo "gpu_run: unknown part '$part' (tests, cuda-agent, kernelbench, threats, probe, kernels, knob-kernels, exports, explore, optimize, torchvision, buildtime)" >&2 ;;
  esac
done
# At most 8 files come back from a device call: past that, the logs travel packed in one archive
# (the tables, JSON and profiles stay plain files).
if [ "$(find "$OUT" -maxdepth 1 -type f | wc -l)" -gt 8 ] && ls "$OUT"/*.log >/dev/null 2>&1; then
  (cd "$OUT" && tar czf logs.tgz ./*.log && rm -f ./*.log)
fi
if [ -f "$OUT/bench-tables.txt" ]; then
  grep -h "^  level" "$OUT/bench-tables.txt" | cut -c1-150 | head -30
  grep -v "^  level" "$OUT/bench-tables.txt"
fi
