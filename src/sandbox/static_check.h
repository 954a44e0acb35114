// Static checks before anything runs: CUDA/C++ sources (here, in C++) and ModelNew Python files
// (python/kforge/static_check.py, run as a subprocess: it reads Python with Python's own parser).
// Each finding names its rule, where it is and what it saw.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"

namespace kforge::sandbox {

struct Finding {
  std::string rule;  // "side_stream", "host_thread", "torch_compute", ...
  std::string file;
  int line = 0;
  std::string message;
};

std::string describe(const Finding& f);  // "k3.cu:12: creates a CUDA stream (cudaStreamCreate)"

// What a generated or submitted CUDA/C++ unit may not do: torch headers, its own streams, host
// threads, persisting-L2 policies, file / network / environment access. Comments are ignored.
std::vector<Finding> check_cuda_source(const std::string& text, const std::string& file);

// The Python checker on a ModelNew file; `reference` (the problem file) may be empty.
StatusOr<std::vector<Finding>> check_model_new(const std::filesystem::path& candidate,
                                               const std::filesystem::path& reference);

}  // namespace kforge::sandbox
