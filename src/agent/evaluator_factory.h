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
// `correction`: a file of `kforge costmodel fit --out` for the cost model (empty: the roofline alone);
// with a GPU evaluator it is a user error (measured times need no correction).
StatusOr<std::shared_ptr<Evaluator>> make_evaluator(const std::string& device, const HarnessEvaluatorOptions& gpu,
                                                    const std::string& correction = "");

}  // namespace kforge::agent
