// The PyTorch boundary as seen from C++: running the importer (python/kforge/importer.py) and the
// problem-source rewriter (python/kforge/problem_source.py).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace kforge::sandbox {

struct ImportOptions {
  std::string mode = "eval";  // "eval" (cuda-agent protocol) or "train" (kernelbench protocol)
  double timeout_seconds = 300;
};

// The environment (NAME=value) of a Python child that runs no candidate code (the importer and its servers, the
// static checks, the report): PYTHONPATH, no bytecode written beside any source (PYTHONDONTWRITEBYTECODE),
// and KFORGE_PYCACHE (the user's, or kforge's cache folder + "/pycache"): where torch ships no bytecode of its
// own (an install made with PYTHONDONTWRITEBYTECODE, as on the GPU machine), kforge/__init__.py caches the
// compiled modules there, so that each import does not compile torch's ~1,900 modules again (8.7 s -> 2.8 s
// for torch and dynamo on the GPU machine). KFORGE_PYCACHE=off turns it off.
std::vector<std::string> trusted_python_env(const std::string& pythonpath);
// "KFORGE_PYCACHE=<folder>" as trusted_python_env sets it. The harness worker gets it only inside bubblewrap,
// where the folder is read-only (it reads what trusted processes compiled, writes nothing); otherwise "off".
std::string pycache_env();

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
