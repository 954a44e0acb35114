// fuse_elementwise: legality and the merge of two elementwise kernels.
#include "skills/fuse_elementwise.h"

#include <algorithm>

#include "kernels/forms.h"

namespace kforge::skills {

namespace {

ir::ValueIndex result_of(const ir::Graph& g, const schedule::Kernel& k) {
  return g.nodes()[static_cast<size_t>(k.root())].output;
}

// Why the producer cannot join the consumer ("" when it can).
std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  const int n = static_cast<int>(s.kernels.size());
  if (producer < 0 || consumer < 0 || producer >= n || consumer >= n || producer >= consumer)
    return "the producer must be a kernel that runs before the consumer";
  const auto& p = s.kernels[static_cast<size_t>(producer)];
  const auto& c = s.kernels[static_cast<size_t>(consumer)];
  // The consumer a pointwise chain (perhaps reading views); the producer also views alone (read in place).
  if (!joins_reader(g, p) || !joins_reader(g, c) || !ir::is_pointwise(g.nodes()[static_cast<size_t>(c.root())]))
    return "both kernels must be generated elementwise chains (the producer may be views of a tensor)";
  if (!joined_reads_through_views(g, p, c, true))
    return "the producer's views do not compose to strides over their source (a reshape torch would copy)";
  if (!kernels::views_read_coalesced(g, p.nodes))
    return "the producer's view moves the innermost dim (a transpose): the tiled permute kernel reads it coalesced";
  const ir::ValueIndex v = result_of(g, p);
  if (g.type(v).shape != g.type(result_of(g, c)).shape)
    return "the producer's result " + ir::shape_str(g.type(v).shape) + " does not have the consumer's shape " +
           ir::shape_str(g.type(result_of(g, c)).shape) + " (it would be recomputed per broadcast element)";
  return kept_for_reader_alone(g, v, c, "the producer's", "the consumer");
}

}  // namespace

std::vector<Site> fuse_elementwise_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return pair_sites(g, s, illegal,
                    [](const std::string& p, const std::string& c) { return "fuse " + p + " into " + c; });
}

StatusOr<schedule::Schedule> fuse_elementwise(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 2) return invalid_argument("fuse_elementwise takes a site of two kernels");
  const int p = site.kernels[0];
  const int c = site.kernels[1];
  if (std::string why = illegal(g, s, p, c); !why.empty()) return invalid_argument("fuse_elementwise: " + why);
  // The producer's nodes go first: they only read values made before the producer ran, and nothing
  // between the two kernels reads the producer's result (legality), so moving them later is safe.
  return join_into_consumer(s, p, c, "fuse_elementwise: " + site.what);
}

}  // namespace kforge::skills
