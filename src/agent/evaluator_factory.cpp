// make_evaluator: the device choice of sandbox/device.h, mapped to an evaluator.
#include "agent/evaluator_factory.h"

#include "agent/cost_model_evaluator.h"
#include "sandbox/device.h"

namespace kforge::agent {

StatusOr<std::shared_ptr<Evaluator>> make_evaluator(const std::string& device, const HarnessEvaluatorOptions& gpu) {
  KF_ASSIGN_OR_RETURN(std::string resolved, sandbox::resolve_device(device));
  if (resolved == "cuda") {
    if (gpu.work_dir.empty()) return invalid_argument("the GPU evaluator needs a work directory for its builds");
    return std::shared_ptr<Evaluator>(std::make_shared<HarnessEvaluator>(gpu));
  }
  return std::shared_ptr<Evaluator>(std::make_shared<CostModelEvaluator>());
}

}  // namespace kforge::agent
