// Codegen + nvcc build of one candidate, and its harness request.
#include "sandbox/candidate.h"

#include <cctype>

#include "base/files.h"
#include "sandbox/toolchain.h"

namespace kforge::sandbox {

namespace fs = std::filesystem;

std::string library_file_name(const std::string& graph_name) {
  std::string safe;
  for (char c : graph_name) safe += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return "libkforge_" + safe + ".so";
}

StatusOr<BuiltCandidate> build_candidate(const ir::Graph& g, const schedule::Schedule& s,
                                         const std::string& reference_source, const fs::path& out_dir, int jobs) {
  BuiltCandidate b;
  codegen::ProgramOptions po;
  po.library_file = library_file_name(g.name);
  po.reference_source = reference_source;
  KF_ASSIGN_OR_RETURN(b.program, codegen::emit_program(g, s, po));
  KF_RETURN_IF_ERROR(write_file(out_dir / "model_new.py", b.program.model_new_py));
  KF_RETURN_IF_ERROR(write_file(out_dir / "program.json", b.program.manifest.dump(2) + "\n"));
  KF_ASSIGN_OR_RETURN(Toolchain tc, find_toolchain());
  KF_ASSIGN_OR_RETURN(
      b.build, build_program(b.program, tc, {.out_dir = out_dir, .library_name = po.library_file, .jobs = jobs}));
  return b;
}

EvalRequest candidate_request(const fs::path& problem, const fs::path& candidate_dir, const Protocol& protocol,
                              bool profile, int trials) {
  EvalRequest req;
  req.problem = problem;
  req.candidate = candidate_dir / "model_new.py";
  req.protocol = protocol;
  req.profile = profile;
  req.trials = trials;
  req.timeout_seconds = profile ? 600 : 300;
  return req;
}

}  // namespace kforge::sandbox
