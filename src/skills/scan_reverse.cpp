// scan_reverse: legality and the merge of flip, scan, flip into one reverse scan kernel.
#include "skills/scan_reverse.h"

#include <algorithm>

namespace kforge::skills {

namespace {

// The dim a one-node flip kernel flips (normalized), or -1 when it is not one flip over one dim.
int64_t flipped_dim(const ir::Graph& g, const schedule::Kernel& k) {
  if (k.impl != schedule::Impl::kGenerated || k.nodes.size() != 1) return -1;
  const ir::Node& n = g.nodes()[static_cast<size_t>(k.nodes[0])];
  if (n.op != ir::OpId::kFlip) return -1;
  const auto dims = n.attrs.ints("dims");
  if (dims.size() != 1) return -1;
  const int64_t rank = static_cast<int64_t>(g.type(n.output).shape.size());
  const int64_t d = dims[0] < 0 ? dims[0] + rank : dims[0];
  return d >= 0 && d < rank ? d : -1;
}

// For the scan kernel `k`: "" and the site when its input is flipped and its result flipped back.
std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int k, Site* site) {
  const auto& scan_k = s.kernels[static_cast<size_t>(k)];
  if (scan_k.impl != schedule::Impl::kGenerated || scan_k.strategy != schedule::Strategy::kScan ||
      scan_k.nodes.size() != 1)
    return "not a generated scan kernel of one node";
  const int scan = scan_k.nodes[0];
  const ir::Node& sn = g.nodes()[static_cast<size_t>(scan)];
  if (ir::op_info(sn.op).family != ir::OpFamily::kScan) return "not a scan";
  const int64_t rank = static_cast<int64_t>(g.type(sn.output).shape.size());
  int64_t dim = sn.attrs.i("dim");
  if (dim < 0) dim += std::max<int64_t>(rank, 1);
  const ir::Node* made_by = g.producer(sn.inputs[0]);
  if (made_by == nullptr) return "the scan's input is not made by a node";
  const int producer = static_cast<int>(made_by - g.nodes().data());
  const int first = kernel_of(s, producer);
  if (first < 0 || first >= k || flipped_dim(g, s.kernels[static_cast<size_t>(first)]) != dim)
    return "the scan's input is not flipped along its dim by a kernel of its own";
  if (!read_only_by(g, sn.inputs[0], scan)) return "the flipped input is read by others too";
  const auto& users = g.users(sn.output);
  if (users.size() != 1 || !read_only_by(g, sn.output, users[0])) return "the scan's result has other readers";
  const int second = kernel_of(s, users[0]);
  if (second <= k || flipped_dim(g, s.kernels[static_cast<size_t>(second)]) != dim)
    return "the scan's result is not flipped back along its dim by a kernel of its own";
  if (site != nullptr) {
    site->kernels = {first, k, second};
    site->what = s.kernels[static_cast<size_t>(first)].name + ", " + scan_k.name + " and " +
                 s.kernels[static_cast<size_t>(second)].name + " as one reverse scan";
  }
  return "";
}

}  // namespace

std::vector<Site> scan_reverse_sites(const ir::Graph& g, const schedule::Schedule& s) {
  std::vector<Site> out;
  for (int k = 0; k < static_cast<int>(s.kernels.size()); ++k) {
    Site site;
    if (illegal(g, s, k, &site).empty()) out.push_back(std::move(site));
  }
  return out;
}

StatusOr<schedule::Schedule> scan_reverse(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 3 || site.kernels[1] < 0 || site.kernels[1] >= static_cast<int>(s.kernels.size()))
    return invalid_argument("scan_reverse takes a site of three kernels: flip, scan, flip");
  Site found;
  if (std::string why = illegal(g, s, site.kernels[1], &found); !why.empty())
    return invalid_argument("scan_reverse: " + why);
  if (found.kernels != site.kernels)
    return invalid_argument("scan_reverse: the site's kernels are not flip, scan, flip");
  // The merged kernel takes the second flip's place: it reads only x (made before the first flip) and
  // nothing between reads the two flipped tensors (legality).
  schedule::Schedule out = s;
  schedule::Kernel merged = s.kernels[static_cast<size_t>(site.kernels[1])];
  merged.nodes = {s.kernels[static_cast<size_t>(site.kernels[0])].nodes[0], merged.nodes[0],
                  s.kernels[static_cast<size_t>(site.kernels[2])].nodes[0]};
  merged.name = s.kernels[static_cast<size_t>(site.kernels[1])].name;
  out.kernels[static_cast<size_t>(site.kernels[2])] = std::move(merged);
  out.kernels.erase(out.kernels.begin() + site.kernels[1]);
  out.kernels.erase(out.kernels.begin() + site.kernels[0]);
  out.applied.push_back("scan_reverse: " + site.what);
  return out;
}

}  // namespace kforge::skills
