// The code generator's contract: each op family has an emitter that turns one scheduled kernel into
// a CUDA source file defining `extern "C" int <kernel name>(KfContext* ctx, void* const* bufs)`, where
// bufs holds the kernel's own operands (KernelSource::operands), so kernels that compute the same thing
// on other tensors have the same source and are built once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "codegen/buffers.h"
#include "ir/graph.h"
#include "schedule/schedule.h"

namespace kforge::codegen {

struct KernelSource {
  std::string name;                      // the kernel's function name (the schedule kernel's name)
  std::string file_name;                 // "k3_conv.cu"
  std::string code;                      // the whole .cu text; includes "kforge_runtime.cuh" only
  std::vector<std::string> libraries;    // link needs: "cublas", "cudnn"
  size_t workspace_bytes = 0;            // library scratch it may use at run time (ctx->workspace)
  int64_t launches = 0;                  // kernel launches or library calls per forward (cost model)
  std::vector<ir::ValueIndex> operands;  // the values behind bufs[0], bufs[1], ... (the entry passes them)
};

class EmitContext {
 public:
  EmitContext(const ir::Graph& g, const schedule::Schedule& s, const schedule::Kernel& k, const BufferPlan& b)
      : graph(g), sched(s), kernel(k), buffers(b), operands_(std::make_shared<std::vector<ir::ValueIndex>>()) {}
  // A part of the same kernel (a fused kernel's library call in a function of its own): its pointers are
  // slots of the whole kernel's operands.
  EmitContext(const EmitContext& whole, const schedule::Kernel& part)
      : graph(whole.graph), sched(whole.sched), kernel(part), buffers(whole.buffers), operands_(whole.operands_) {}

  const ir::Graph& graph;
  const schedule::Schedule& sched;
  const schedule::Kernel& kernel;
  const BufferPlan& buffers;

  // Where the root's result goes when not to its own value's storage: a library call that feeds an
  // epilogue in the same kernel writes into the epilogue's output (conv_epilogue), kNoValue otherwise.
  ir::ValueIndex out_value = ir::kNoValue;

  const ir::Node& node() const { return graph.nodes()[static_cast<size_t>(kernel.root())]; }
  const ir::TensorType& in_type(size_t i) const { return graph.type(node().inputs.at(i)); }
  const ir::TensorType& out_type() const { return graph.type(node().output); }
  bool has_input(size_t i) const { return i < node().inputs.size() && node().inputs[i] != ir::kNoValue; }

  // C expression for a value's device pointer, typed: "((const float*)bufs[0])" (inputs) or
  // "((float*)bufs[1])" (the output); the slot is the value's place among the kernel's operands.
  std::string in_ptr(size_t i) const;
  std::string out_ptr() const;
  std::string ptr(ir::ValueIndex v, bool writable) const;

  // `extern "C" int <name>(KfContext* ctx, void* const* bufs)`, the signature every kernel defines.
  std::string signature() const;

  // The values the code's bufs slots stand for, in slot order (first use).
  const std::vector<ir::ValueIndex>& operands() const { return *operands_; }

 private:
  std::shared_ptr<std::vector<ir::ValueIndex>> operands_;  // shared with the kernel's parts
};

// A float as a CUDA literal that round-trips exactly ("0.0500000007f", "INFINITY", "(-INFINITY)").
std::string float_literal(double v);
std::string double_literal(double v);
// A C identifier for a tensor element type (the dtype's C type).
std::string ctype(ir::DType t);

// The emitter of each op family (src/ir/op_families.def); one definition per family, in the
// emit_<family>.cpp files. A missing one fails to link.
#define KF_FAMILY(name) StatusOr<KernelSource> emit_##name(const EmitContext& ctx);
#include "ir/op_families.def"
#undef KF_FAMILY

// A kernel of strategy "constant_fill" (the constant_output skill): writes its root's output with the
// constant the value ranges prove, whatever its other (absorbed) nodes are. emit_constant.cpp.
StatusOr<KernelSource> emit_constant_fill(const EmitContext& ctx);

// A convolution (or transposed one) with the elementwise chain after it (the conv_epilogue skill):
// the library call writes into the chain's output, and one generated pass adds the bias and
// computes the chain in place. emit_conv.cpp.
StatusOr<KernelSource> emit_conv_epilogue(const EmitContext& ctx);

// A channels-last convolution with a softmax or reduction over its channels and the pointwise nodes
// around it (the conv_reduce_epilogue skill): the pass over cuDNN's channels-last result computes them
// and writes the kernel's output. emit_conv.cpp, emit_conv_reduce.cpp.
StatusOr<KernelSource> emit_conv_reduce_epilogue(const EmitContext& ctx);

// A normalization with the elementwise chain after it (the norm_epilogue skill): the apply pass computes
// the chain on each normalized value before its store. emit_norm.cpp.
StatusOr<KernelSource> emit_norm_epilogue(const EmitContext& ctx);

// A cuBLAS linear with the elementwise chain after it (the linear_epilogue skill): the GEMM writes
// x W^T into the chain's output (beta = 0), one generated pass adds the bias and computes the chain
// in place. emit_matmul.cpp.
StatusOr<KernelSource> emit_linear_epilogue(const EmitContext& ctx);

// A grid-stride kernel `<name>` computing the elementwise `nodes` (in order) at every index of the
// output of the last one, written to `out`; with a seed, the value `seed.value` is not loaded but
// computed by `seed.expr` (which may read `out[i]`, the output itself, and the seed's extra
// parameters). Returns the kernel's definition; `launch` gets the statements that launch it.
struct ChainSeed {
  ir::ValueIndex value = ir::kNoValue;
  std::string expr;
  std::vector<std::pair<std::string, std::string>> params;  // {declaration, argument}
};
// The kernel of strategy "elementwise": a chain of pointwise nodes. emit_elementwise.cpp.
StatusOr<KernelSource> emit_elementwise_chain(const EmitContext& ctx);

StatusOr<std::string> elementwise_chain_kernel(const EmitContext& ctx, const std::vector<int>& nodes,
                                               const std::string& name, const ChainSeed& seed, std::string& launch);

// Completes the source of a library kernel with an epilogue (conv_epilogue, linear_epilogue): `src`
// defines the library call as `library_fn(ctx, bufs)`, writing into the kernel's result; this appends
// the in-place pass over ctx.kernel's nodes after the first (seeded by `seed`, described by the
// comment `what`) and the kernel's own function, which runs both.
Status append_library_epilogue(const EmitContext& ctx, const std::string& library_fn, const ChainSeed& seed,
                               const std::string& what, KernelSource& src);

// A device function `<name>(long long i, <params>)` returning the value of the pointwise `nodes`'
// last output at its linear index i (a prologue: the reduce kernels read it in place of a load).
// With `seed_value`, that value is not loaded but passed: `<name>(long long i, T seed, <params>)`
// (an epilogue computed where its producer's value is at hand).
struct PointwiseFunction {
  std::string code;       // the __device__ __forceinline__ definition
  std::string params;     // its operand parameters ("const float* __restrict__ in3, ..."), also the kernel's
  std::string call_args;  // the names of those parameters ("in3, ...")
  std::string host_args;  // their host expressions, same order
  // > 0: the function takes a last, optional `long long i_row`, the first index of i's row of this many
  // elements; operands broadcast over the row are read there (pass it where several elements of one
  // row are computed, so that their loads are one).
  int64_t row_extent = 0;
};
StatusOr<PointwiseFunction> pointwise_function(const EmitContext& ctx, const std::vector<int>& nodes,
                                               const std::string& name, ir::ValueIndex seed_value = ir::kNoValue,
                                               int64_t row_extent = 0);

// The same chain as a function of the values of its operands at one element, for 16-byte loads by the
// caller: only when every operand is a full-shape float tensor (read at the element's own offset), there
// are one or two of them, the result is a float, and nothing else depends on the index. The function
// takes the operands' values in `lane_values` order: `float NAME(float a<v>, ...)`.
// With `indexed`, operands that are not full-shape (broadcast ones: a per-column target, a bias) are
// allowed too: they are read at their broadcast offset of the element's linear index, which the function
// then takes first, and their pointers follow the lanes: `float NAME(long long i, float a<v>, ...,
// const T* __restrict__ in<p>, ...)`.
struct LaneFunction {
  std::string code;
  std::vector<ir::ValueIndex> lane_values;
  bool takes_index = false;              // the first parameter is `long long i`
  std::vector<ir::ValueIndex> pointers;  // operands read by index (in<p>), after the lanes
};
std::optional<LaneFunction> pointwise_lane_function(const EmitContext& ctx, const std::vector<int>& nodes,
                                                    const std::string& name, bool indexed = false);

StatusOr<KernelSource> emit_kernel(const EmitContext& ctx);

// A fresh KernelSource with name, file name and the standard prologue (includes) filled in.
KernelSource begin_source(const EmitContext& ctx, const std::string& headers = "");

}  // namespace kforge::codegen
