// The one place that chooses how the agent's candidates are judged: the cost model on the CPU, or
// the GPU harness (measured) where there is a GPU.
#pragma once

#include <memory>
#include <string>

#include "agent/env.h"
#include "agent/harness_evaluator.h"
#include "base/status.h"

namespace kforge::agent {

// `device`: "cpu" -> CostModelEvaluator; "cuda" -> HarnessEvaluator with `gpu` (a user error on a machine
// without a GPU); "auto" -> cuda when a GPU is present (sandbox::gpu_present), cpu otherwise.
StatusOr<std::shared_ptr<Evaluator>> make_evaluator(const std::string& device, const HarnessEvaluatorOptions& gpu);

}  // namespace kforge::agent
