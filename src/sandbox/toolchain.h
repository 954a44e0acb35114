// Where kforge finds its tools and shipped files: nvcc and CUDA, python3, the runtime sources.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/status.h"

namespace kforge::sandbox {

struct Toolchain {
  std::string nvcc;                        // path of nvcc
  std::string nvcc_version;                // its `--version` last line (part of cache keys)
  std::filesystem::path cuda_home;         // /usr/local/cuda
  std::string arch = "sm_90a";             // the one target: H100/H200
  std::vector<std::string> compile_flags;  // for every .cu
};

// nvcc from $KFORGE_NVCC, $CUDA_HOME/bin, PATH or /usr/local/cuda/bin; a clear error if none.
StatusOr<Toolchain> find_toolchain();

using ::kforge::kforge_home;  // base/files.h

// python3 to run the importer and harness: $KFORGE_PYTHON, else python3 on PATH.
std::string python_executable();

}  // namespace kforge::sandbox
