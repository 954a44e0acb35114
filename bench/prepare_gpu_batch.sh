#!/usr/bin/env bash
# Builds every shared KernelBench problem here (the CPU machine has the same nvcc 13.0) under both
# protocols, and stages what a device call needs in .gpu/ (ignored by git, carried with the call):
#   .gpu/kb/level{1,2}/*.py            the problems
#   .gpu/cand/<protocol>/<level>/<stem>/{model_new.py, lib*.so, report.json}
#   .gpu/COMMIT                         the commit the candidates were built from
# Then: device run with carry [".gpu"] and command `bash bench/gpu_run.sh`.
#   bench/prepare_gpu_batch.sh [--only STEM,STEM] [--protocols cuda-agent,kernelbench]
set -euo pipefail
cd "$(dirname "$0")/.."
only=""
protocols="cuda-agent,kernelbench"
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --protocols) protocols="$2"; shift 2 ;;
    *) echo "prepare_gpu_batch: unknown argument $1" >&2; exit 2 ;;
  esac
done
kforge=build/kforge
[ -x "$kforge" ] || { echo "prepare_gpu_batch: build kforge first (bash scripts/setup.sh)" >&2; exit 3; }
kb=../shared/kernelbench
rm -rf .gpu/cand .gpu/kb
mkdir -p .gpu/kb
cp -r "$kb/level1" "$kb/level2" .gpu/kb/
git rev-parse --short HEAD > .gpu/COMMIT
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then echo "$(cat .gpu/COMMIT)+dirty" > .gpu/COMMIT; fi
fail=0
for protocol in ${protocols//,/ }; do
  for p in .gpu/kb/level1/*.py .gpu/kb/level2/*.py; do
    stem=$(basename "$p" .py)
    level=$(basename "$(dirname "$p")")
    if [ -n "$only" ] && [[ ",$only," != *",$stem,"* ]]; then continue; fi
    out=build/gpu-batch/$protocol/$level/$stem
    if "$kforge" build "$p" --protocol "$protocol" --out "$out" --force --json > /dev/null 2> .gpu/last.err; then
      dest=.gpu/cand/$protocol/$level/$stem
      mkdir -p "$dest"
      cp "$out"/model_new.py "$out"/lib*.so "$out"/report.json "$dest"/
    else
      echo "build failed: $protocol $level/$stem: $(tail -c 300 .gpu/last.err)" >&2
      fail=$((fail + 1))
    fi
  done
done
echo "staged $(find .gpu/cand -name model_new.py | wc -l) candidates in .gpu/ ($(du -sh .gpu | cut -f1)), $fail build failures, commit $(cat .gpu/COMMIT)"
