// Where candidates are evaluated: on the GPU through the harness worker, or by the cost model.
#pragma once

#include <filesystem>
#include <string>

#include "base/status.h"
#include "cli/stages.h"
#include "sandbox/device.h"
#include "sandbox/harness.h"

namespace kforge::cli {

using ::kforge::sandbox::gpu_present;     // sandbox/device.h
using ::kforge::sandbox::resolve_device;  // sandbox/device.h

// Verifies the candidate built in `candidate_dir` against `problem` (and times it, if `profile`).
StatusOr<sandbox::EvalResult> evaluate_candidate(sandbox::HarnessWorker& worker, const std::string& problem,
                                                 const std::filesystem::path& candidate_dir, const Protocol& protocol,
                                                 const sandbox::Timing& timing, bool profile, int trials);

}  // namespace kforge::cli
