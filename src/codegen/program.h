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
//   const char* kforge_cuda_graph_stats(void);  // JSON: how calls ran (eager, captured, replayed)
// kforge_forward replays one CUDA graph of every kernel when its pointers repeat (kf_graph_forward).
constexpr int kAbiVersion = 1;

// One scheduled kernel's call in the entry point: the function that computes it (its own, or the first
// kernel's whose source is the same but for the name) on its own operands.
struct KernelCall {
  std::string kernel;                    // the scheduled kernel's name
  std::string function;                  // the KernelSource it runs
  std::vector<ir::ValueIndex> operands;  // bufs[0], bufs[1], ... of that function
};

struct Program {
  std::string name;                    // graph name, a file-name-safe string
  std::vector<KernelSource> kernels;   // the distinct kernel sources, each built once
  std::vector<KernelCall> calls;       // one per non-alias scheduled kernel, in order
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

// The runtime unit with kforge_dense_copy, the kernel that copies a strided input into a dense tensor.
inline constexpr std::string_view kDenseCopySource = "kforge_dense_copy.cu";

// The runtime sources a program links with (kforge_runtime.cu, kDenseCopySource, one per library used).
std::vector<std::string> runtime_sources(const std::vector<std::string>& libraries);

}  // namespace kforge::codegen
