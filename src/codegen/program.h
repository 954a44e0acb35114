// A whole generated program: kernel sources, the C-ABI entry point, model_new.py and a manifest.
#pragma once

#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "codegen/buffers.h"
#include "codegen/emit.h"

namespace kforge::codegen {

// The C ABI every program library exports (version kAbiVersion):
//   int kforge_forward(void* const* inputs, void* const* params, void* const* outputs,
//                      void* scratch, size_t scratch_bytes, void* stream);  // 0 = ok
//   size_t kforge_scratch_bytes(void);
//   const char* kforge_last_error(void);
//   int kforge_abi_version(void);
constexpr int kAbiVersion = 1;

struct Program {
  std::string name;                    // graph name, a file-name-safe string
  std::vector<KernelSource> kernels;   // one per non-alias scheduled kernel
  KernelSource entry;                  // entry.cu: kforge_forward and friends
  std::vector<std::string> libraries;  // union of the kernels' link needs
  BufferPlan buffers;
  std::string model_new_py;  // KernelBench-compatible ModelNew
  OrderedJson manifest;      // interface: inputs, params, outputs, scratch, kernels
};

struct ProgramOptions {
  std::string library_file = "";  // file name model_new.py loads, next to itself
  std::string reference_source;   // the problem file's text (Model, get_inputs, ...)
};

StatusOr<Program> emit_program(const ir::Graph& g, const schedule::Schedule& s, const ProgramOptions& options);

// The runtime sources a program links with (kforge_runtime.cu plus one per library used).
std::vector<std::string> runtime_sources(const std::vector<std::string>& libraries);

}  // namespace kforge::codegen
