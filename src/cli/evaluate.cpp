// GPU evaluation of one built candidate (the device choice is sandbox/device.h).
#include "cli/evaluate.h"

#include "sandbox/candidate.h"

namespace kforge::cli {

namespace fs = std::filesystem;

StatusOr<sandbox::EvalResult> evaluate_candidate(sandbox::HarnessWorker& worker, const std::string& problem,
                                                 const fs::path& candidate_dir, const Protocol& protocol,
                                                 const sandbox::Timing& timing, bool profile, int trials) {
  sandbox::EvalRequest req = sandbox::candidate_request(problem, candidate_dir, protocol, profile, trials);
  req.timing = timing;
  return worker.evaluate(req);
}

}  // namespace kforge::cli
