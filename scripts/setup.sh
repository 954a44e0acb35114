#!/usr/bin/env bash
# Installs what kforge needs on a fresh Debian 12 machine (root or sudo) and builds it.
# The CUDA toolkit (nvcc 13.0) must already be installed; kforge finds it on PATH or in /usr/local/cuda.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

need=()
for pkg in cmake ninja-build g++ clang-format nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev python3 python3-venv python3-torch bubblewrap libtorch-dev libsqlite3-dev; do
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

# The Python environment: .venv with every python/requirements/*.txt (torch from PyPI, the GPU machine's version).
# KFORGE_PYTHON overrides it; kforge and the tests use .venv/bin/python when it exists.
if [ ! -x .venv/bin/python ]; then
  echo "kforge setup: creating .venv (python/requirements/*.txt)"
  python3_sys=/usr/bin/python3
  [ -x "$python3_sys" ] || python3_sys=$(command -v python3)
  "$python3_sys" -m venv .venv
fi
req_stamp=.venv/kforge-requirements.sha256
req_hash=$(cat python/requirements/*.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$req_stamp" 2>/dev/null)" != "$req_hash" ]; then
  echo "kforge setup: installing python/requirements/*.txt into .venv"
  req_args=()
  for f in python/requirements/*.txt; do req_args+=(-r "$f"); done
  .venv/bin/python -m pip install -q --disable-pip-version-check "${req_args[@]}"
  echo "$req_hash" > "$req_stamp"
fi

cmake --preset default >/dev/null
cmake --build --preset default
