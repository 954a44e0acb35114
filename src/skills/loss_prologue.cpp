// loss_prologue: legality and the merge of a pointwise chain into the loss that reads it.
#include "skills/loss_prologue.h"

namespace kforge::skills {

namespace {

std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  return prologue_illegal(g, s, producer, consumer, is_elementwise_loss_kernel,
                          "a loss kernel of one elementwise loss");
}

}  // namespace

std::vector<Site> loss_prologue_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return pair_sites(g, s, illegal,
                    [](const std::string& p, const std::string& c) { return p + " as the prologue of " + c; });
}

StatusOr<schedule::Schedule> loss_prologue(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 2) return invalid_argument("loss_prologue takes a site of two kernels");
  const int p = site.kernels[0];
  const int c = site.kernels[1];
  if (std::string why = illegal(g, s, p, c); !why.empty()) return invalid_argument("loss_prologue: " + why);
  return join_into_consumer(s, p, c, "loss_prologue: " + site.what);
}

}  // namespace kforge::skills
