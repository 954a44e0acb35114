#!/usr/bin/env bash
# Installs what kforge needs on a fresh Debian 12 machine (root or sudo) and builds it.
# The CUDA toolkit (nvcc 13.0) must already be installed; kforge finds it on PATH or in /usr/local/cuda.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

need=()
for pkg in cmake ninja-build g++ clang-format nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev python3 python3-torch python3-numpy python3-pytest bubblewrap libtorch-dev libsqlite3-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "kforge setup: installing ${need[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ] && [ -z "${KFORGE_NVCC:-}" ]; then
  echo "kforge setup: nvcc not found. Install the CUDA toolkit 13.0 (or set KFORGE_NVCC)." >&2
  exit 3
fi

cmake --preset default >/dev/null
cmake --build --preset default
