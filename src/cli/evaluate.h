// Where candidates are evaluated: on the GPU through the harness worker, or by the cost model.
#pragma once

#include <filesystem>
#include <string>

#include "base/status.h"
#include "cli/pipeline.h"
#include "sandbox/harness.h"

namespace kforge::cli {

// True when this machine has an NVIDIA GPU device node.
bool gpu_present();

// "auto" becomes "cuda" with a GPU and "cpu" without; "cuda" without a GPU is a user error.
StatusOr<std::string> resolve_device(const std::string& requested);

// Verifies the candidate built in `candidate_dir` against `problem` (and times it, if `profile`).
StatusOr<sandbox::EvalResult> evaluate_candidate(sandbox::HarnessWorker& worker, const std::string& problem,
                                                 const std::filesystem::path& candidate_dir, const Protocol& protocol,
                                                 bool profile, int trials);

}  // namespace kforge::cli
