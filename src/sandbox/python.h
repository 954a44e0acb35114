// The PyTorch boundary as seen from C++: running the importer (python/kforge/importer.py).
#pragma once

#include <string>

#include "base/json.h"
#include "base/status.h"

namespace kforge::sandbox {

struct ImportOptions {
  std::string mode = "eval";  // "eval" (cuda-agent protocol) or "train" (kernelbench protocol)
  double timeout_seconds = 300;
};

// Traces the problem file into graph JSON. A problem the importer rejects comes back as a Status
// carrying the importer's one-line message (it names the construct and its source line).
StatusOr<Json> run_importer(const std::string& problem_path, const ImportOptions& options);

}  // namespace kforge::sandbox
