// The PyTorch boundary as seen from C++: running the importer (python/kforge/importer.py) and the
// problem-source rewriter (python/kforge/problem_source.py).
#pragma once

#include <filesystem>
#include <string>

#include "base/json.h"
#include "base/status.h"

namespace kforge::sandbox {

struct ImportOptions {
  std::string mode = "eval";  // "eval" (cuda-agent protocol) or "train" (kernelbench protocol)
  double timeout_seconds = 300;
};

// Traces the problem file into graph JSON. A problem the importer rejects comes back as a Status
// carrying the importer's one-line message (it names the construct and its source line). Imports go
// through import servers kept for the process (torch imported once, a forked child per problem; thread
// safe); KFORGE_IMPORT_SERVER=0 runs `python3 -m kforge.importer` once per problem instead.
StatusOr<Json> run_importer(const std::string& problem_path, const ImportOptions& options);

// A content hash of what decides an import's graph: python/kforge/*.py and src/ir/ops.def under kforge's
// home (read once per process). Caches of imported graphs key on it, so a changed importer re-imports.
StatusOr<std::string> importer_fingerprint();
StatusOr<std::string> importer_fingerprint_of(const std::filesystem::path& home);  // the same, of another tree

// The problem file's source without docstrings and comments (python3 -m kforge.problem_source:
// ast.parse, then ast.unparse), for an export whose checker rejects words inside them.
StatusOr<std::string> problem_source_without_docstrings(const std::string& problem_path);

}  // namespace kforge::sandbox
