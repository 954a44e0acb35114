#!/usr/bin/env bash
# Sets up, builds and runs every test: unit, golden, error, python importer, and the build sweep
# over the shared KernelBench problems. GPU tests (label gpu) skip themselves without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --preset default -j "$(nproc)" "$@"
