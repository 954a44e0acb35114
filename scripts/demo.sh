#!/usr/bin/env bash
# Sets up, builds and runs `kforge optimize` on the shipped example.
# Without a GPU the timings are predicted by the cost model, and the output says so.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/kforge optimize examples/linear_gelu_residual.py --out out/linear_gelu_residual --device auto "$@"
