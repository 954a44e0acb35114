// make_evaluator: the device choice of sandbox/device.h, mapped to an evaluator.
#include "agent/evaluator_factory.h"

#include "agent/cost_model_evaluator.h"
#include "sandbox/device.h"

namespace kforge::agent {

StatusOr<std::shared_ptr<Evaluator>> make_evaluator(const std::string& device, const HarnessEvaluatorOptions& gpu,
                                                    const std::string& correction) {
  KF_ASSIGN_OR_RETURN(std::string resolved, sandbox::resolve_device(device));
  if (resolved == "cuda") {
    if (!correction.empty()) {
      return invalid_argument(
          "--correction adjusts the cost model's predictions, and on the GPU every time is "
          "measured: leave it out, or use --device cpu");
    }
    if (gpu.work_dir.empty()) return invalid_argument("the GPU evaluator needs a work directory for its builds");
    return std::shared_ptr<Evaluator>(std::make_shared<HarnessEvaluator>(gpu));
  }
  if (correction.empty()) return std::shared_ptr<Evaluator>(std::make_shared<CostModelEvaluator>());
  KF_ASSIGN_OR_RETURN(costmodel::Correction c, costmodel::read_correction(correction));
  return std::shared_ptr<Evaluator>(std::make_shared<CostModelEvaluator>(std::move(c)));
}

}  // namespace kforge::agent
