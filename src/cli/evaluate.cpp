// Device choice and GPU evaluation of one built candidate.
#include "cli/evaluate.h"

#include <cstdlib>

namespace kforge::cli {

namespace fs = std::filesystem;

bool gpu_present() {
  // For tests of the GPU paths on machines without one (with a stand-in harness): KFORGE_ASSUME_GPU=1.
  if (const char* a = std::getenv("KFORGE_ASSUME_GPU"); a && std::string(a) == "1") return true;
  std::error_code ec;
  return fs::exists("/dev/nvidia0", ec) || fs::exists("/dev/nvidiactl", ec);
}

StatusOr<std::string> resolve_device(const std::string& requested) {
  if (requested == "cpu") return std::string("cpu");
  if (requested == "auto") return std::string(gpu_present() ? "cuda" : "cpu");
  if (requested == "cuda") {
    if (!gpu_present())
      return invalid_argument(
          "GPU evaluation needs an NVIDIA GPU and this machine has none (/dev/nvidia0 is missing); run on a "
          "machine with a GPU, or use --device cpu (where the command has it) for predicted timings");
    return std::string("cuda");
  }
  return invalid_argument("--device must be auto, cpu or cuda, not '" + requested + "'");
}

StatusOr<sandbox::EvalResult> evaluate_candidate(sandbox::HarnessWorker& worker, const std::string& problem,
                                                 const fs::path& candidate_dir, const Protocol& protocol, bool profile,
                                                 int trials) {
  sandbox::EvalRequest req;
  req.problem = problem;
  req.candidate = candidate_dir / "model_new.py";
  req.protocol = protocol.name;
  req.profile = profile;
  req.trials = trials;
  req.timeout_seconds = profile ? 600 : 300;
  return worker.evaluate(req);
}

}  // namespace kforge::cli
