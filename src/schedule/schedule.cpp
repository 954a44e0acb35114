// Schedule invariants: a partition of the graph's nodes into dependency-ordered kernels.
#include "schedule/schedule.h"

#include <set>

namespace kforge::schedule {

const char* impl_name(Impl i) {
  switch (i) {
    case Impl::kGenerated: return "generated";
    case Impl::kLibrary: return "library";
    case Impl::kAlias: return "alias";
  }
  return "?";
}

Status check_schedule(const ir::Graph& g, const Schedule& s) {
  std::vector<int> kernel_of(g.nodes().size(), -1);
  std::set<std::string> names;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const Kernel& kernel = s.kernels[k];
    if (kernel.nodes.empty()) return invalid_argument("kernel " + kernel.name + " has no nodes");
    if (!names.insert(kernel.name).second) return invalid_argument("two kernels are named " + kernel.name);
    for (int n : kernel.nodes) {
      if (n < 0 || static_cast<size_t>(n) >= g.nodes().size())
        return invalid_argument("kernel " + kernel.name + " names node #" + std::to_string(n) +
                                ", which does not exist");
      if (kernel_of[static_cast<size_t>(n)] != -1)
        return invalid_argument("node " + ir::describe(g, g.nodes()[static_cast<size_t>(n)]) + " is in two kernels");
      kernel_of[static_cast<size_t>(n)] = static_cast<int>(k);
    }
  }
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    if (kernel_of[n] == -1) return invalid_argument("node " + ir::describe(g, g.nodes()[n]) + " is in no kernel");
  }
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    for (auto in : g.nodes()[n].inputs) {
      if (in == ir::kNoValue || g.value(in).kind != ir::ValueKind::kNode) continue;
      int producer = kernel_of[static_cast<size_t>(g.value(in).owner)];
      if (producer > kernel_of[n]) {
        return invalid_argument("kernel " + s.kernels[static_cast<size_t>(kernel_of[n])].name + " runs before kernel " +
                                s.kernels[static_cast<size_t>(producer)].name + ", which makes its input");
      }
    }
  }
  if (!(s.tolerance > 0)) return invalid_argument("tolerance must be positive");
  if (s.precision != "fp32" && s.precision != "tf32" && s.precision != "3xtf32") {
    return invalid_argument("precision must be fp32, tf32 or 3xtf32, not '" + s.precision + "'");
  }
  return Status::ok();
}

}  // namespace kforge::schedule
