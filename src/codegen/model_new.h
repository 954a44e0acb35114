// model_new.py: a KernelBench-compatible ModelNew that runs a built program library via ctypes; and
// the Python pieces every ModelNew file kforge writes shares (the export's too).
#pragma once

#include <string>

#include "ir/graph.h"

namespace kforge::codegen {

struct Program;
struct ProgramOptions;

std::string model_new_source(const ir::Graph& g, const Program& p, const ProgramOptions& options);

// The interface tables: _KF_INPUTS, _KF_ARGS, _KF_PARAMS, _KF_OUTPUTS, _KF_SCRATCH_BYTES.
std::string model_new_tables(const ir::Graph& g, const Program& p);

// _kf_check and `class ModelNew(Model)`, whose forward checks its arguments against the tables,
// allocates the outputs (torch.empty), keeps one scratch buffer per device and stream, and then runs
// `call`: Python statements, indented by 8 spaces, that run the program on `inputs`, `params`,
// `params_array`, `outputs`, `scratch` and `stream`. The parameters are checked only when their pointers
// change; `params_array` is `params_arg` evaluated then ("_kf_pointers(params)": a ctypes array).
// `rebuild` says how to rebuild in messages ("rebuild", "export again"). With `copies_views`, an input
// that is a strided view (a slice, a transpose) is replaced by `_kf_dense(t)`, a module-level function
// the caller defines (kforge's kforge_dense_copy kernel, never torch); without, a view is refused.
std::string model_new_class(const ir::Graph& g, const std::string& doc, const std::string& call,
                            const std::string& rebuild, const std::string& params_arg, bool copies_views);

}  // namespace kforge::codegen
