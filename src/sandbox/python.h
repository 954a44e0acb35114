// The PyTorch boundary as seen from C++: running the importer (python/kforge/importer.py) and the
// problem-source rewriter (python/kforge/problem_source.py).
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

// The problem file's source without docstrings and comments (python3 -m kforge.problem_source:
// ast.parse, then ast.unparse), for an export whose checker rejects words inside them.
StatusOr<std::string> problem_source_without_docstrings(const std::string& problem_path);

}  // namespace kforge::sandbox
