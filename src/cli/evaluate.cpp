// GPU evaluation of one built candidate (the device choice is sandbox/device.h).
#include "cli/evaluate.h"

#include "sandbox/candidate.h"

namespace kforge::cli {

namespace fs = std::filesystem;

StatusOr<sandbox::EvalResult> evaluate_candidate(sandbox::HarnessWorker& worker, const std::string& problem,
                                                 const fs::path& candidate_dir, const Protocol& protocol, bool profile,
                                                 int trials) {
  return worker.evaluate(sandbox::candidate_request(problem, candidate_dir, protocol.name, profile, trials));
}

}  // namespace kforge::cli
