// model_new.py: a KernelBench-compatible ModelNew that runs a built program library via ctypes.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kforge::codegen {

struct Program;
struct ProgramOptions;

std::string model_new_source(const ir::Graph& g, const Program& p, const ProgramOptions& options);

}  // namespace kforge::codegen
