// constant_output: legality from the value ranges, and the schedule that fills the output and drops
// the kernels that only fed it.
#include "skills/constant_output.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "ir/value_range.h"

namespace kforge::skills {

namespace {

// What making output #o a fill takes: its kernel, and the kernels that then have no reader.
struct FillPlan {
  int kernel = -1;
  std::vector<int> absorbed;  // ascending
  ir::ValueRange range;
};

std::vector<int> kernel_of_nodes(const ir::Graph& g, const schedule::Schedule& s) {
  std::vector<int> kernel_of(g.nodes().size(), -1);
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    for (int n : s.kernels[k].nodes) {
      if (n >= 0 && static_cast<size_t>(n) < kernel_of.size()) kernel_of[static_cast<size_t>(n)] = static_cast<int>(k);
    }
  }
  return kernel_of;
}

// Every node whose result reaches node `root` (root included).
std::vector<bool> upstream_of(const ir::Graph& g, int root) {
  std::vector<bool> up(g.nodes().size(), false);
  std::vector<int> stack = {root};
  up[static_cast<size_t>(root)] = true;
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    for (auto in : g.nodes()[static_cast<size_t>(n)].inputs) {
      if (in == ir::kNoValue || g.value(in).kind != ir::ValueKind::kNode) continue;
      const int p = g.value(in).owner;
      if (!up[static_cast<size_t>(p)]) {
        up[static_cast<size_t>(p)] = true;
        stack.push_back(p);
      }
    }
  }
  return up;
}

// Why output #o cannot become a fill ("" when it can; then `plan` says how).
std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int64_t o,
                    const std::vector<ir::ValueRange>& ranges, FillPlan& plan) {
  if (o < 0 || o >= static_cast<int64_t>(g.outputs().size())) return "the graph has no output #" + std::to_string(o);
  const ir::ValueIndex v = g.outputs()[static_cast<size_t>(o)];
  const std::string id = "output '" + g.value(v).id + "'";
  if (g.value(v).kind != ir::ValueKind::kNode) return id + " is an input or parameter, not computed";
  plan.range = ranges[static_cast<size_t>(v)];
  if (!plan.range.is_point())
    return "the value ranges do not prove " + id + " constant (its range is " + plan.range.str() + ")";
  const int root = g.value(v).owner;
  const std::vector<int> kernel_of = kernel_of_nodes(g, s);
  plan.kernel = kernel_of[static_cast<size_t>(root)];
  if (plan.kernel < 0) return id + " is made by a node in no kernel";
  const schedule::Kernel& k = s.kernels[static_cast<size_t>(plan.kernel)];
  if (k.root() != root) return id + " is made inside kernel " + k.name + ", not as its result";
  if (k.strategy == schedule::Strategy::kConstantFill) return id + " is a constant fill already";

  // Kernels from last to first: one stays when it is not upstream of the output or a kernel that
  // stays (or another graph output) needs one of its results; a kernel that stays needs its inputs.
  // The output's own kernel reads nothing once it fills.
  const std::vector<bool> up = upstream_of(g, root);
  std::vector<bool> needed(g.nodes().size(), false);
  for (auto w : g.outputs()) {
    if (w != v && g.value(w).kind == ir::ValueKind::kNode) needed[static_cast<size_t>(g.value(w).owner)] = true;
  }
  plan.absorbed.clear();
  for (int ki = static_cast<int>(s.kernels.size()) - 1; ki >= 0; --ki) {
    if (ki == plan.kernel) continue;
    const auto& nodes = s.kernels[static_cast<size_t>(ki)].nodes;
    const bool stays = std::none_of(nodes.begin(), nodes.end(), [&](int n) { return up[static_cast<size_t>(n)]; }) ||
                       std::any_of(nodes.begin(), nodes.end(), [&](int n) { return needed[static_cast<size_t>(n)]; });
    if (!stays) {
      plan.absorbed.insert(plan.absorbed.begin(), ki);
      continue;
    }
    for (int n : nodes) {
      needed[static_cast<size_t>(n)] = true;
      for (auto in : g.nodes()[static_cast<size_t>(n)].inputs) {
        if (in != ir::kNoValue && g.value(in).kind == ir::ValueKind::kNode)
          needed[static_cast<size_t>(g.value(in).owner)] = true;
      }
    }
  }
  for (int n : k.nodes) {
    if (n != root && needed[static_cast<size_t>(n)])
      return "kernel " + k.name + " also makes " + ir::describe(g, g.nodes()[static_cast<size_t>(n)]) +
             ", which a graph output or a kernel that stays needs";
  }
  return "";
}

std::string describe_site(const ir::Graph& g, const schedule::Schedule& s, int64_t o, const FillPlan& plan) {
  char value[40];
  std::snprintf(value, sizeof value, "%g", plan.range.lo);
  std::string what = "fill output '" + g.value(g.outputs()[static_cast<size_t>(o)]).id + "' with " + value;
  if (plan.absorbed.empty()) return what;
  what += "; drops";
  for (size_t i = 0; i < plan.absorbed.size(); ++i)
    what += (i == 0 ? " " : ", ") + s.kernels[static_cast<size_t>(plan.absorbed[i])].name;
  return what;
}

}  // namespace

std::vector<Site> constant_output_sites(const ir::Graph& g, const schedule::Schedule& s) {
  std::vector<Site> out;
  const std::vector<ir::ValueRange> ranges = ir::value_ranges(g);
  for (int64_t o = 0; o < static_cast<int64_t>(g.outputs().size()); ++o) {
    FillPlan plan;
    if (!illegal(g, s, o, ranges, plan).empty()) continue;
    Site site;
    site.kernels = {plan.kernel};
    site.kernels.insert(site.kernels.end(), plan.absorbed.begin(), plan.absorbed.end());
    site.params["output"] = o;
    site.what = describe_site(g, s, o, plan);
    out.push_back(std::move(site));
  }
  return out;
}

StatusOr<schedule::Schedule> constant_output(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  auto it = site.params.find("output");
  if (it == site.params.end()) return invalid_argument("constant_output takes a site with params[\"output\"]");
  FillPlan plan;
  if (std::string why = illegal(g, s, it->second, ir::value_ranges(g), plan); !why.empty())
    return invalid_argument("constant_output: " + why);
  std::vector<int> expected = {plan.kernel};
  expected.insert(expected.end(), plan.absorbed.begin(), plan.absorbed.end());
  if (site.kernels != expected)
    return invalid_argument(
        "constant_output: the site names other kernels than the output's fill needs (a site of "
        "another schedule?)");

  const schedule::Kernel& kept = s.kernels[static_cast<size_t>(plan.kernel)];
  const int root = kept.root();
  schedule::Kernel fill;
  fill.name = "k" + std::to_string(root) + "_constant";
  for (int k : plan.absorbed) {
    const auto& nodes = s.kernels[static_cast<size_t>(k)].nodes;
    fill.nodes.insert(fill.nodes.end(), nodes.begin(), nodes.end());
  }
  for (int n : kept.nodes) {
    if (n != root) fill.nodes.push_back(n);
  }
  std::sort(fill.nodes.begin(), fill.nodes.end());
  fill.nodes.push_back(root);
  fill.impl = schedule::Impl::kGenerated;
  fill.strategy = schedule::Strategy::kConstantFill;
  fill.knobs[schedule::Knob::kBlock] = kept.knob(schedule::Knob::kBlock, 256);

  // Absorbed kernels all run before the output's kernel (they make values it depends on), so the
  // fill takes the output kernel's place and the order stays valid.
  schedule::Schedule out = s;
  out.kernels.clear();
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    if (static_cast<int>(k) == plan.kernel) {
      out.kernels.push_back(fill);
    } else if (!std::binary_search(plan.absorbed.begin(), plan.absorbed.end(), static_cast<int>(k))) {
      out.kernels.push_back(s.kernels[k]);
    }
  }
  out.applied.push_back("constant_output: " + describe_site(g, s, it->second, plan));
  KF_RETURN_IF_ERROR(schedule::check_schedule(g, out).with_context("constant_output"));
  return out;
}

}  // namespace kforge::skills
