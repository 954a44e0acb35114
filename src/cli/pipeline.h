// The stages of one turn, as the commands use them: import -> plan -> codegen -> build -> predict.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "base/json.h"
#include "base/status.h"
#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "ir/graph.h"
#include "sandbox/build.h"
#include "schedule/schedule.h"

namespace kforge::cli {

// The protocols of DESIGN.md; the protocol fixes the module mode the graph is traced in.
struct Protocol {
  std::string name;  // "cuda-agent" or "kernelbench"
  std::string mode;  // "eval" or "train"
  double atol, rtol;
};
StatusOr<Protocol> protocol_from_name(const std::string& name);

// A graph from a problem .py (through the importer) or a graph .json.
StatusOr<ir::Graph> load_graph_or_problem(const std::string& path, const std::string& mode);

// Refuses to write into a directory that holds files kforge did not make, unless `force`.
Status prepare_out_dir(const std::filesystem::path& dir, bool force);

struct BuiltProgram {
  codegen::Program program;
  sandbox::BuildResult build;
  costmodel::ProgramCost cost;
};

// Codegen + build into out_dir; writes model_new.py, program.json and the library there.
StatusOr<BuiltProgram> build_into(const ir::Graph& g, const schedule::Schedule& s, const std::string& reference_source,
                                  const std::filesystem::path& out_dir, int jobs);

// The report of one optimize/build run (report.json), and its table for people.
OrderedJson report_json(const ir::Graph& g, const schedule::Schedule& s, const BuiltProgram& b, const Protocol& p,
                        const std::string& device, const Json& stages);
std::string report_table(const ir::Graph& g, const schedule::Schedule& s, const BuiltProgram& b, const Protocol& p,
                         const std::string& device, const std::string& command);

std::string library_file_name(const std::string& graph_name);

}  // namespace kforge::cli
