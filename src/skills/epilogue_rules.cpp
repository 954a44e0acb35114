// The epilogue skills' shared legality, sites and merge.
#include "skills/epilogue_rules.h"

#include <algorithm>

namespace kforge::skills {

namespace {

ir::ValueIndex result_of(const ir::Graph& g, const schedule::Kernel& k) {
  return g.nodes()[static_cast<size_t>(k.root())].output;
}

bool all_pointwise(const ir::Graph& g, std::vector<int>::const_iterator begin, std::vector<int>::const_iterator end) {
  return std::all_of(begin, end, [&](int n) { return ir::is_pointwise(g.nodes()[static_cast<size_t>(n)]); });
}

}  // namespace

std::string epilogue_illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer,
                             bool (*producer_ok)(const ir::Graph&, const schedule::Kernel&),
                             const char* producer_kind) {
  const int n = static_cast<int>(s.kernels.size());
  if (producer < 0 || consumer < 0 || producer >= n || consumer >= n || producer >= consumer)
    return "the library kernel must run before the chain's";
  const auto& p = s.kernels[static_cast<size_t>(producer)];
  const auto& c = s.kernels[static_cast<size_t>(consumer)];
  if (!producer_ok(g, p)) return std::string("the producer must be ") + producer_kind;
  if (!is_pointwise_chain(g, c)) return "the consumer must be a generated elementwise chain";
  const ir::ValueIndex v = result_of(g, p);
  const ir::TensorType& lib_type = g.type(v);
  const ir::TensorType& chain_type = g.type(result_of(g, c));
  if (lib_type.shape != chain_type.shape || lib_type.dtype != chain_type.dtype)
    return "the chain's result (" + ir::shape_str(chain_type.shape) + ", " +
           std::string(ir::dtype_name(chain_type.dtype)) + ") is not the library kernel's (" +
           ir::shape_str(lib_type.shape) + ", " + std::string(ir::dtype_name(lib_type.dtype)) +
           "): the library writes into it";
  return kept_for_reader_alone(g, v, c, "the library kernel's", "the chain");
}

std::vector<Site> epilogue_sites(const ir::Graph& g, const schedule::Schedule& s,
                                 std::string (*illegal)(const ir::Graph&, const schedule::Schedule&, int, int)) {
  return pair_sites(g, s, illegal,
                    [](const std::string& p, const std::string& c) { return c + " as the epilogue of " + p; });
}

schedule::Schedule merge_epilogue(const schedule::Schedule& s, const Site& site, const std::string& skill) {
  const int p = site.kernels[0];
  const int c = site.kernels[1];
  schedule::Schedule out = s;
  // The merged kernel is the library kernel at the chain's place: the library call reads only values
  // made before its old place, and nothing in between reads its result (legality), so running it
  // later is safe; the chain's other operands are ready there.
  schedule::Kernel merged = s.kernels[static_cast<size_t>(p)];
  const auto& chain = s.kernels[static_cast<size_t>(c)];
  merged.nodes.insert(merged.nodes.end(), chain.nodes.begin(), chain.nodes.end());
  if (chain.knobs.count(schedule::Knob::kBlock))
    merged.knobs[schedule::Knob::kBlock] = chain.knobs.at(schedule::Knob::kBlock);
  out.kernels[static_cast<size_t>(c)] = std::move(merged);
  out.kernels.erase(out.kernels.begin() + p);
  out.applied.push_back(skill + ": " + site.what);
  return out;
}

}  // namespace kforge::skills
