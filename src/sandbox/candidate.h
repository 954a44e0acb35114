// A candidate as the harness takes it: a graph and a schedule generated and built with nvcc into a
// directory (model_new.py, program.json, kernels/, the library), and the request that verifies and
// times it. Shared by `kforge optimize` / `bench` and the agent's GPU evaluator.
#pragma once

#include <filesystem>
#include <string>

#include "base/status.h"
#include "codegen/program.h"
#include "ir/graph.h"
#include "sandbox/build.h"
#include "sandbox/harness.h"
#include "schedule/schedule.h"

namespace kforge::sandbox {

struct BuiltCandidate {
  codegen::Program program;
  BuildResult build;  // ok = false (compile_error or forbidden) is a result, not a Status error
};

// "libkforge_<graph name, non-alphanumerics as _>.so"
std::string library_file_name(const std::string& graph_name);

// Codegen + build into `out_dir`: writes model_new.py and program.json there, the kernels under
// kernels/ and the library beside them. nvcc's objects and libraries are cached by the build layer.
StatusOr<BuiltCandidate> build_candidate(const ir::Graph& g, const schedule::Schedule& s,
                                         const std::string& reference_source, const std::filesystem::path& out_dir,
                                         int jobs);

// The request that verifies the candidate built in `candidate_dir` against `problem` and, when
// `profile`, times it against eager and torch.compile (`trials` interleaved trials each).
EvalRequest candidate_request(const std::filesystem::path& problem, const std::filesystem::path& candidate_dir,
                              const Protocol& protocol, bool profile, int trials);

}  // namespace kforge::sandbox
