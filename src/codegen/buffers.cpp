// Buffer planning: caller pointers for the interface values, aligned scratch for the rest.
#include "codegen/buffers.h"

#include <algorithm>

namespace kforge::codegen {

namespace {

size_t align_up(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

// True when every reader of v is a node of k: then v never needs memory.
bool lives_in_kernel(const ir::Graph& g, const schedule::Kernel& k, ir::ValueIndex v) {
  for (int user : g.users(v)) {
    if (std::find(k.nodes.begin(), k.nodes.end(), user) == k.nodes.end()) return false;
  }
  return true;
}

}  // namespace

BufferPlan plan_buffers(const ir::Graph& g, const schedule::Schedule& s) {
  BufferPlan plan;
  plan.slots.resize(g.values().size());
  for (size_t i = 0; i < g.inputs().size(); ++i)
    plan.slots[static_cast<size_t>(g.inputs()[i].value)] = {Storage::kInput, static_cast<int>(i), 0};
  for (size_t i = 0; i < g.params().size(); ++i)
    plan.slots[static_cast<size_t>(g.params()[i].value)] = {Storage::kParam, static_cast<int>(i), 0};
  std::vector<bool> is_output(g.values().size(), false);
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    auto v = static_cast<size_t>(g.outputs()[i]);
    // A value returned twice, or an input returned as is, is copied by its own kernel; see program.cpp.
    if (g.value(g.outputs()[i]).kind == ir::ValueKind::kNode && !is_output[v]) {
      plan.slots[v] = {Storage::kOutput, static_cast<int>(i), 0};
      is_output[v] = true;
    }
  }
  size_t offset = 0;
  for (const auto& k : s.kernels) {
    for (int n : k.nodes) {
      auto v = static_cast<size_t>(g.nodes()[static_cast<size_t>(n)].output);
      if (is_output[v]) continue;
      if (n != k.root() && lives_in_kernel(g, k, static_cast<ir::ValueIndex>(v))) {
        plan.slots[v] = {Storage::kRegister, 0, 0};
        continue;
      }
      if (k.impl == schedule::Impl::kAlias) {
        plan.slots[v] = {Storage::kAlias, g.nodes()[static_cast<size_t>(n)].inputs[0], 0};
        continue;
      }
      plan.slots[v] = {Storage::kScratch, 0, offset};
      offset += align_up(std::max<size_t>(g.type(static_cast<ir::ValueIndex>(v)).bytes(), 1), 256);
    }
  }
  plan.scratch_bytes = offset;
  plan.workspace_offset = offset;
  return plan;
}

}  // namespace kforge::codegen
