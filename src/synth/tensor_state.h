// The value a synthesized task passes from operator to operator: its per-sample shape, what its
// dimensions mean, and what values it can hold. Every task keeps the batch dimension first and
// never reduces over it, so a task is sized for the GPU by its batch alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kforge::synth {

enum class Layout {
  kFlat,      // (batch,)
  kFeatures,  // (batch, features)
  kSequence,  // (batch, seq, features)
  kChannels,  // (batch, channels, spatial...): 1 to 3 spatial dimensions
  kHeads,     // (batch, heads, seq, head_dim)
  kGeneric,   // anything else: only shape-agnostic operators follow
};

enum class Domain {
  kReal,
  kNonNegative,  // relu, abs, x**2, torch.rand inputs, ...
  kPositive,     // exp, sigmoid, softplus, softmax, ...
};

const char* layout_name(Layout l);

struct TensorState {
  std::vector<int64_t> dims;       // per-sample sizes: the tensor is (batch_size, *dims)
  std::vector<std::string> names;  // per dim, the module constant that spells it ("" if none)
  Layout layout = Layout::kFeatures;
  Domain domain = Domain::kNonNegative;
  bool floating = true;  // false: an integer result (argmax); nothing may follow it

  int rank() const { return static_cast<int>(dims.size()) + 1; }
  int64_t sample_numel() const;
  int spatial_rank() const { return layout == Layout::kChannels ? rank() - 2 : 0; }
  // The size of dim d (d >= 1; 0 is the batch) spelled as Python: its constant's name or the number.
  std::string size_expr(int d) const;
  // "batch_size, in_channels, 30, 30": the full shape as get_inputs() writes it.
  std::string shape_args(const std::string& batch = "batch_size") const;
};

// A state with dims and no names.
TensorState unnamed(std::vector<int64_t> dims, Layout layout, Domain domain);

}  // namespace kforge::synth
