// scan_exclusive: legality and the merge of slice, full, scan and cat into one exclusive scan kernel.
#include "skills/scan_exclusive.h"

#include <algorithm>

namespace kforge::skills {

namespace {

bool alone_in_kernel(const schedule::Schedule& s, int node) {
  const int k = kernel_of(s, node);
  return k >= 0 && s.kernels[static_cast<size_t>(k)].nodes.size() == 1;
}

int index_of(const ir::Graph& g, const ir::Node* n) {
  return n == nullptr ? -1 : static_cast<int>(n - g.nodes().data());
}

int64_t norm_dim(int64_t d, size_t rank) {
  return d < 0 ? d + static_cast<int64_t>(rank) : d;
}

// For the scan kernel `k`: "" and the site when it is the exclusive-scan pattern.
std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int k, Site* site) {
  const auto& scan_k = s.kernels[static_cast<size_t>(k)];
  if (scan_k.impl != schedule::Impl::kGenerated || scan_k.strategy != schedule::Strategy::kScan ||
      scan_k.nodes.size() != 1)
    return "not a generated scan kernel of one node";
  const int scan = scan_k.nodes[0];
  const ir::Node& sn = g.nodes()[static_cast<size_t>(scan)];
  if (sn.op != ir::OpId::kCumsum && sn.op != ir::OpId::kCumprod) return "not a cumsum or cumprod";
  const ir::TensorType& st = g.type(sn.output);
  const int64_t d = norm_dim(sn.attrs.i("dim"), st.shape.size());
  if (d < 0 || d >= static_cast<int64_t>(st.shape.size())) return "bad scan dim";
  // The slice of x: along d, from 0 to x's size - 1, step 1.
  const int slice = index_of(g, g.producer(sn.inputs[0]));
  if (slice < 0) return "the scan's input is not made by a node";
  const ir::Node& sl = g.nodes()[static_cast<size_t>(slice)];
  if (sl.op != ir::OpId::kSlice || !alone_in_kernel(s, slice) || !read_only_by(g, sl.output, scan))
    return "the scan's input is not a slice of its own read by the scan alone";
  const ir::TensorType& xt = g.type(sl.inputs[0]);
  if (norm_dim(sl.attrs.i("dim"), xt.shape.size()) != d || sl.attrs.i("start") != 0 || sl.attrs.i("step") != 1 ||
      xt.shape[static_cast<size_t>(d)] < 2 || st.shape[static_cast<size_t>(d)] != xt.shape[static_cast<size_t>(d)] - 1)
    return "the slice is not x's positions 0 .. L - 2 along the scan's dim";
  if (xt.dtype != st.dtype) return "the scan changes the dtype";
  // The cat: [full(identity, size 1 along d), scan result] along d.
  const auto& users = g.users(sn.output);
  if (users.size() != 1 || !read_only_by(g, sn.output, users[0])) return "the scan's result has other readers";
  const int cat = users[0];
  const ir::Node& cn = g.nodes()[static_cast<size_t>(cat)];
  if (cn.op != ir::OpId::kCat || cn.inputs.size() != 2 || cn.inputs[1] != sn.output || !alone_in_kernel(s, cat) ||
      norm_dim(cn.attrs.i("dim"), g.type(cn.output).shape.size()) != d)
    return "the scan's result is not the second of two tensors concatenated along its dim";
  const int full = index_of(g, g.producer(cn.inputs[0]));
  if (full < 0) return "the first concatenated tensor is not made by a node";
  const ir::Node& fn = g.nodes()[static_cast<size_t>(full)];
  const double identity = sn.op == ir::OpId::kCumprod ? 1.0 : 0.0;
  const ir::TensorType& ft = g.type(fn.output);
  if (fn.op != ir::OpId::kFull || !alone_in_kernel(s, full) || !read_only_by(g, fn.output, cat) ||
      fn.attrs.is_null("value") || fn.attrs.f("value") != identity || ft.dtype != st.dtype ||
      ft.shape.size() != st.shape.size() || ft.shape[static_cast<size_t>(d)] != 1)
    return "the first concatenated tensor is not the scan's identity of size 1 along its dim";
  if (site != nullptr) {
    site->kernels = {kernel_of(s, slice), kernel_of(s, full), k, kernel_of(s, cat)};
    std::sort(site->kernels.begin(), site->kernels.end());
    site->what = "slice, " + scan_k.name + ", full and cat as one exclusive scan";
  }
  return "";
}

}  // namespace

std::vector<Site> scan_exclusive_sites(const ir::Graph& g, const schedule::Schedule& s) {
  std::vector<Site> out;
  for (int k = 0; k < static_cast<int>(s.kernels.size()); ++k) {
    Site site;
    if (illegal(g, s, k, &site).empty()) out.push_back(std::move(site));
  }
  return out;
}

StatusOr<schedule::Schedule> scan_exclusive(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  int scan_kernel = -1;
  for (int k : site.kernels) {
    if (k >= 0 && k < static_cast<int>(s.kernels.size()) &&
        s.kernels[static_cast<size_t>(k)].strategy == schedule::Strategy::kScan)
      scan_kernel = k;
  }
  if (site.kernels.size() != 4 || scan_kernel < 0)
    return invalid_argument("scan_exclusive takes a site of four kernels: slice, full, scan, cat");
  Site found;
  if (std::string why = illegal(g, s, scan_kernel, &found); !why.empty())
    return invalid_argument("scan_exclusive: " + why);
  if (found.kernels != site.kernels)
    return invalid_argument("scan_exclusive: the site's kernels are not the pattern's");
  // One kernel at the cat's place (the last), nodes in graph order: it reads only x, and nothing
  // between reads the intermediates (legality).
  schedule::Schedule out = s;
  schedule::Kernel merged = s.kernels[static_cast<size_t>(scan_kernel)];
  merged.nodes.clear();
  for (int k : site.kernels) merged.nodes.push_back(s.kernels[static_cast<size_t>(k)].nodes[0]);
  std::sort(merged.nodes.begin(), merged.nodes.end());
  const int cat_kernel = site.kernels.back();
  out.kernels[static_cast<size_t>(cat_kernel)] = std::move(merged);
  for (auto it = site.kernels.rbegin() + 1; it != site.kernels.rend(); ++it)
    out.kernels.erase(out.kernels.begin() + *it);
  out.applied.push_back("scan_exclusive: " + site.what);
  return out;
}

}  // namespace kforge::skills
