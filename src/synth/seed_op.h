// One operator class of the seed library: a torch nn module or function, how it is written into a
// KernelBench-format file, the inputs it accepts, the output it produces, the ranges its arguments
// are drawn from, and the registry ops (src/ir/ops.def) its import yields.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "synth/rng.h"
#include "synth/task_source.h"
#include "synth/tensor_state.h"

namespace kforge::synth {

enum class Category {
  kLinear,
  kConvolution,
  kActivation,
  kElementwise,
  kNormalization,
  kPooling,
  kReduction,
  kScan,
  kLoss,
  kAttention,
  kLayout,
};
const char* category_name(Category c);

// What placing one operator did: the value it leaves in `x`, and its work per sample (FLOPs, for the
// budget that keeps the scaled-down CPU run of a task short).
struct Placed {
  TensorState out;
  double sample_flops = 0;
};

// Writes the operator into `src` for input `in`, drawing its arguments from `rng`; nullopt when no
// arguments fit `in` (then `src` may hold partial writes: the caller discards it).
using Instantiate = std::function<std::optional<Placed>(const TensorState& in, Rng& rng, TaskSource& src)>;

struct StartShape {
  Layout layout;
  int rank;
};

struct SeedOp {
  std::string name;        // torch's name: "torch.nn.Conv2d", "torch.sum", "torch.nn.functional.normalize"
  std::string short_name;  // for file names and titles: "Conv2d"
  Category category;
  std::vector<std::string> registry_ops;  // ops.def names its import yields (in any order)
  std::vector<StartShape> starts;         // input kinds a task may open with when this comes first
  std::function<bool(const TensorState&)> accepts;
  Instantiate instantiate;
  bool terminal = false;  // its result feeds nothing: last only (integer results)
};

// Library pieces, one per category file.
void add_linear_ops(std::vector<SeedOp>& ops);
void add_convolution_ops(std::vector<SeedOp>& ops);
void add_activation_ops(std::vector<SeedOp>& ops);
void add_elementwise_ops(std::vector<SeedOp>& ops);
void add_normalization_ops(std::vector<SeedOp>& ops);
void add_pooling_ops(std::vector<SeedOp>& ops);
void add_reduction_ops(std::vector<SeedOp>& ops);
void add_loss_ops(std::vector<SeedOp>& ops);
void add_attention_ops(std::vector<SeedOp>& ops);
void add_layout_ops(std::vector<SeedOp>& ops);

// Shared by the category files.
namespace seed {

// Every start kind of a shape-agnostic operator.
std::vector<StartShape> any_start();
bool is_float(const TensorState& t);
// A dim other than the batch, drawn in [1, rank-1]; `from` restricts it to dims >= from.
int draw_dim(const TensorState& t, Rng& rng, int from = 1);
// Python spelling of a non-batch dim: positive (1) or, half the time, negative (-1) counted from the end.
std::string dim_literal(const TensorState& t, int d, Rng& rng);
// "(3, 5)" for several values, "3" for one.
std::string tuple_literal(const std::vector<int64_t>& v);
// A float written as Python would: 0.1, 2.0, 1e-05.
std::string float_literal(double v);
// A layout that drops dim d (1-based, not the batch) from `t`.
TensorState drop_dim(const TensorState& t, int d);
// The constant that spells the size of dim d of `t`: its existing constant or a new one named
// `base`; a constructor argument when `init_arg`.
std::string size_arg(TaskSource& src, const TensorState& t, int d, const std::string& base, bool init_arg = true);
// Writes `self.<member> = <module>` and `x = self.<member>(x)`, or the functional call `x = <call>`.
void module_or_call(TaskSource& src, Rng& rng, const std::string& member_base, const std::string& module,
                    const std::string& call);

}  // namespace seed

}  // namespace kforge::synth
