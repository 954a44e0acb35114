// Export of a program as one self-contained KernelBench ModelNew file: the problem's source, the
// CUDA sources inline, built at import time with torch.utils.cpp_extension.load_inline, so that the
// upstream KernelBench harness (and its static checker) accepts the file as it is.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "codegen/program.h"
#include "ir/graph.h"

namespace kforge::codegen {

struct KernelbenchExportOptions {
  // What the caller removed from the problem's source so that upstream's checker accepts it (for the
  // file's banner); empty when the source is the problem file as it is.
  std::string source_change;
  // Export a program with no __global__ kernel of its own (it only calls cuBLAS/cuDNN) all the same:
  // kforge's harness runs it, upstream's strict checker rejects it, and the banner says so.
  bool allow_library_only = false;
};

// `program` is what emit_program made for `g`; `reference_source` is the problem's source.
// Fails (unsupported) when the upstream static checker would reject the file whatever kforge emits:
// the problem source itself breaks a strict rule, or the program has no __global__ kernel of its own
// (pure cuBLAS/cuDNN programs) and `allow_library_only` is off.
StatusOr<std::string> export_kernelbench(const ir::Graph& g, const Program& program,
                                         const std::string& reference_source,
                                         const KernelbenchExportOptions& options = {});

// The rules of upstream's checker that concern any Python text (try/except, `pass`, threads, ...),
// without the CUDA-backend ones: one message per broken rule, naming the line.
std::vector<std::string> kernelbench_strict_rule_violations(const std::string& text);

// The program's CUDA units as the one translation unit load_inline compiles (its cuda_sources,
// without the torch includes load_inline prepends): library includes hoisted, the runtime header
// once, then each unit (kernels, entry, runtime sources) in a namespace of its own with the macros
// it defines undefined after it. Without `with_dense_copy` the runtime's kDenseCopySource is left out.
StatusOr<std::string> kernelbench_cuda_source(const Program& program, const std::filesystem::path& runtime_dir,
                                              bool with_dense_copy = true);

// The C++ binding load_inline compiles (its cpp_sources, after torch/extension.h): `kforge_run`,
// which takes the input, parameter and output tensors and a scratch byte tensor and calls
// kforge_forward on the current CUDA stream; with `with_dense_copy`, also `kforge_dense`, which copies a
// strided input into a dense tensor with the runtime's kforge_dense_copy kernel.
std::string kernelbench_binding_source(bool with_dense_copy = true);

// The rules of upstream KernelBench's static checker in strict mode (kernel_static_checker.py,
// backend "cuda"), applied to `text` as it does: per line, after cutting `#` and `//` comments.
// One message per broken rule, empty when the text passes.
std::vector<std::string> kernelbench_static_violations(const std::string& text);

}  // namespace kforge::codegen
