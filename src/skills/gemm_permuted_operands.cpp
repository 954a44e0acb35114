// gemm_permuted_operands: legality and the join of a permute kernel into the matmul kernel that reads it.
#include "skills/gemm_permuted_operands.h"

#include "kernels/gemm_operands.h"
#include "skills/precision.h"

namespace kforge::skills {

namespace {

const ir::Node& node_at(const ir::Graph& g, int n) {
  return g.nodes()[static_cast<size_t>(n)];
}

// The consumer with the producer's nodes in front: the kernel the join would make.
schedule::Kernel joined(const schedule::Kernel& producer, const schedule::Kernel& consumer) {
  schedule::Kernel k = consumer;
  k.nodes.insert(k.nodes.begin(), producer.nodes.begin(), producer.nodes.end());
  return k;
}

std::string illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer) {
  const schedule::Kernel& p = s.kernels[static_cast<size_t>(producer)];
  const schedule::Kernel& c = s.kernels[static_cast<size_t>(consumer)];
  if (p.impl != schedule::Impl::kGenerated || p.nodes.size() != 1 || node_at(g, p.root()).op != ir::OpId::kPermute)
    return "the producer is not a generated kernel of one permute";
  if (c.impl != schedule::Impl::kLibrary || c.strategy != schedule::Strategy::kCublasGemm ||
      node_at(g, c.root()).op != ir::OpId::kMatmul)
    return "the consumer is not a cuBLAS matmul kernel";
  if (c.nodes.size() > 1 && !kernels::is_gemm_permuted_operands(g, c))
    return "the consumer is a cuBLAS kernel of another form";
  if (std::string why = kept_for_reader_alone(g, node_at(g, p.root()).output, c, "the permute's", "the matmul kernel");
      !why.empty())
    return why;
  const schedule::Kernel both = joined(p, c);
  if (!kernels::is_gemm_permuted_operands(g, both))
    return "the GEMM cannot read the permuted operand in place (neither of its matrix dims is contiguous in the "
           "stored tensor)";
  // Under a tolerance TF32 cannot meet the GEMM may run in 3xTF32 (split_tf32_contractions), which runs per-batch
  // pointers in exact fp32: a fold that turns a strided batch into pointers is left to the copy there.
  using Kind = kernels::GemmBatchPlan::Kind;
  if (s.tolerance < kTf32MinTolerance && kernels::gemm_batch_plan(g, both).kind == Kind::kPointers &&
      kernels::gemm_batch_plan(g, c).kind != Kind::kPointers)
    return "read in place, the batch would need per-batch pointers, which 3xTF32 (this tolerance's fast precision) "
           "runs in exact fp32";
  return "";
}

std::string what(const std::string& producer, const std::string& consumer) {
  return "read " + producer + "'s permute in place in " + consumer;
}

}  // namespace

std::vector<Site> gemm_permuted_operands_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return pair_sites(g, s, illegal, what);
}

StatusOr<schedule::Schedule> gemm_permuted_operands(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  if (site.kernels.size() != 2) return invalid_argument("gemm_permuted_operands takes a site of two kernels");
  if (std::string why = illegal(g, s, site.kernels[0], site.kernels[1]); !why.empty())
    return invalid_argument("gemm_permuted_operands: " + why);
  return join_into_consumer(s, site.kernels[0], site.kernels[1], "gemm_permuted_operands: " + site.what);
}

}  // namespace kforge::skills
