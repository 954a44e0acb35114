#!/usr/bin/env bash
# Stages in .gpu/ (ignored by git, carried with a device call) what bench/gpu_run.sh needs there:
#   .gpu/kforge     this tree's kforge, stripped (it needs only libstdc++: runs on the GPU machine)
#   .gpu/kb/        the shared KernelBench problems (the GPU machine has no ../shared)
#   .gpu/upstream/  upstream KernelBench's evaluator package, where ../shared has it (gpu_run.sh upstream)
#   .gpu/cache.tgz  the build cache, warmed by building every problem here under both protocols
#                   (same nvcc 13.0 there: the device call finds the objects and libraries built)
#   .gpu/COMMIT     the commit (and +dirty) the binary was built from
# Then: device run with carry [".gpu"] and command `bash bench/gpu_run.sh`.
# EXTRA_SUITES="tests/unseen tests/zoo" stages those folders too, as levels named by their last part.
# WARM_PROTOCOLS="cuda-agent" warms the cache for those protocols only (default: cuda-agent kernelbench).
# SKIP_SHARED=1 stages the EXTRA_SUITES alone (not the shared level1 and level2): a smaller cache, for a call that
# benches only those (LEVELS=...), when every problem's cache would pass the carry's 64 MiB.
# NO_WARM=1 skips warming the cache here (the GPU machine then builds on its 16 cores: minutes of
# device time for 150 problems, against tens of minutes on a 2-core CPU machine).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/kforge ] || { echo "prepare_gpu_batch: build kforge first (bash scripts/setup.sh)" >&2; exit 3; }
rm -rf .gpu
mkdir -p .gpu/kb .gpu/cache
# Start from the tests' cache (same nvcc, same flags): only what changed since is compiled again.
if [ -z "${NO_WARM:-}" ] && [ -d build/kforge-cache ]; then cp -r build/kforge-cache/. .gpu/cache/; fi
# Each copied entry's access time set to its modification time, so that only a read by the runs below marks it
# used (prune_cache.py; a copy's own access times kept every entry, 50 MB staged for 44 problems).
python3 bench/prune_cache.py --reset-atimes .gpu/cache
copied=$(date +%s)
sleep 2  # entries the runs below create or read are newer than the copy (see prune_cache.py)
[ -n "${SKIP_SHARED:-}" ] || cp -r ../shared/kernelbench/level1 ../shared/kernelbench/level2 .gpu/kb/
if [ -d ../shared/kernelbench/upstream/kernelbench ]; then cp -r ../shared/kernelbench/upstream .gpu/upstream; fi
for extra in ${EXTRA_SUITES:-}; do
  mkdir -p .gpu/kb/"$(basename "$extra")" && cp "$extra"/*.py .gpu/kb/"$(basename "$extra")"/
done
# The GPU machine has no libtorch-dev: its kforge is the command line without the RL layer (`train` says so
# there), linked from this build's objects (target kforge_portable, which exists where libtorch was found).
bin=build/kforge
if ldd build/kforge | grep -q "libtorch\|libc10"; then
  cmake --build build --target kforge_portable > build/gpu-kforge-build.log 2>&1 ||
    { echo "prepare_gpu_batch: building kforge_portable failed (build/gpu-kforge-build.log)" >&2; exit 3; }
  bin=build/kforge_portable
fi
strip -o .gpu/kforge "$bin"
# libsqlite3 travels with it, used there only if the machine lacks its own (gpu_run.sh).
mkdir -p .gpu/lib && cp -L "$(ldd .gpu/kforge | awk '/libsqlite3/ {print $3}')" .gpu/lib/
if ldd .gpu/kforge | grep -q "not found\|libtorch"; then
  echo "prepare_gpu_batch: .gpu/kforge needs libraries the GPU machine lacks:" >&2; ldd .gpu/kforge >&2; exit 3
fi
# The GPU machine has no bubblewrap; Debian's binary runs there (DEVICE.md), found next to kforge.
if [ -x /usr/bin/bwrap ]; then mkdir -p .gpu/bin && cp /usr/bin/bwrap .gpu/bin/bwrap; fi
commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit+dirty"
echo "$commit" > .gpu/COMMIT
for protocol in $([ -n "${NO_WARM:-}" ] || echo "${WARM_PROTOCOLS:-cuda-agent kernelbench}"); do
  KFORGE_CACHE=$PWD/.gpu/cache ./build/kforge bench --suite .gpu/kb --protocol "$protocol" --device cpu \
    --out build/gpu-batch/"$protocol" --force > build/gpu-batch-"$protocol".log 2>&1 || true
  tail -6 build/gpu-batch-"$protocol".log
done
[ -n "${NO_WARM:-}" ] || python3 bench/prune_cache.py .gpu/cache "$copied"
# Every staged problem's library is linked and cached: the build finds it by the objects' content
# keys without the objects, so they stay here (the compile logs, small, travel for the resource report).
find .gpu/cache -path '*/obj/*.o' -delete
# Host symbol tables are not needed to load them (dlopen uses the dynamic ones): ~10 % smaller.
find .gpu/cache -path '*/lib/*.so' -exec strip --strip-unneeded {} +
# Compressed for the trip (the carry limit is 64 MiB; ~3.5x smaller); gpu_run.sh unpacks it there.
tar czf .gpu/cache.tgz -C .gpu cache && rm -rf .gpu/cache
echo "staged .gpu/ ($(du -sh .gpu | cut -f1)) for commit $commit"
