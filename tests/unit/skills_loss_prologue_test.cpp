// loss_prologue: where it is legal, the schedule it makes, the code (the prediction's chain computed
// where the loss reads it, 16-byte loads kept), and an nvcc build. Numerics: the GPU bench verifies
// the KernelBench problem it applies to (level1/98, kl_div(log(p), q)).
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "skills/loss_prologue.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

// p [8, 4096] -> log (times s when `scaled`: a second full-shape operand) -> kl_div(., q, batchmean);
// `returned` also returns the log.
std::string kl_of_log(bool scaled, bool returned) {
  std::string nodes =
      R"({"id": "lp", "op": "log", "inputs": ["p"], "attrs": {}, "shape": [8, 4096], "dtype": "float32"},)";
  std::string pred = "lp";
  if (scaled) {
    nodes += R"({"id": "ls", "op": "mul", "inputs": ["lp", "s"], "attrs": {"scalar": null, "reverse": false},
                 "shape": [8, 4096], "dtype": "float32"},)";
    pred = "ls";
  }
  return R"({"format": "kforge.graph/1", "name": "kl",
    "inputs": [{"id": "p", "name": "p", "shape": [8, 4096], "dtype": "float32"},
               {"id": "q", "name": "q", "shape": [8, 4096], "dtype": "float32"},
               {"id": "s", "name": "s", "shape": [8, 4096], "dtype": "float32"}],
    "params": [],
    "nodes": [)" +
         nodes + R"({"id": "y", "op": "kl_div", "inputs": [")" + pred +
         R"(", "q"], "attrs": {"reduction": "batchmean", "log_target": false}, "shape": [], "dtype": "float32"}],
    "outputs": ["y")" +
         (returned ? ", \"lp\"" : "") + "]}";
}

// The chain feeds the target (input 1), not the prediction.
const char* kTargetChain = R"({"format": "kforge.graph/1", "name": "kl_t",
    "inputs": [{"id": "p", "name": "p", "shape": [8, 4096], "dtype": "float32"},
               {"id": "q", "name": "q", "shape": [8, 4096], "dtype": "float32"}],
    "params": [],
    "nodes": [{"id": "eq", "op": "exp", "inputs": ["q"], "attrs": {}, "shape": [8, 4096], "dtype": "float32"},
              {"id": "y", "op": "mse_loss", "inputs": ["p", "eq"], "attrs": {"reduction": "mean"}, "shape": [],
               "dtype": "float32"}],
    "outputs": ["y"]})";

TEST(LossPrologue, SitesAndLegality) {
  ir::Graph g = graph_from_text(kl_of_log(false, false));
  auto first = schedule::plan_one_kernel_per_op(g, {});
  auto sites = loss_prologue_sites(g, first);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{0, 1}));
  auto s = loss_prologue(g, first, sites[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_EQ(s->kernels[0].strategy, schedule::Strategy::kLoss);
  EXPECT_TRUE(is_loss_prologue(g, s->kernels[0]));
  EXPECT_FALSE(is_loss_prologue(g, first.kernels[1]));  // one node: not made by this skill
  // A stored chain result (returned too) stays its own kernel.
  ir::Graph returned = graph_from_text(kl_of_log(false, true));
  auto first2 = schedule::plan_one_kernel_per_op(returned, {});
  EXPECT_TRUE(loss_prologue_sites(returned, first2).empty());
  auto bad = loss_prologue(returned, first2, Site{{0, 1}, {}, ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("graph output"), std::string::npos) << bad.status().message();
  // A chain that makes the target is not this skill's.
  ir::Graph target = graph_from_text(kTargetChain);
  EXPECT_TRUE(loss_prologue_sites(target, schedule::plan_one_kernel_per_op(target, {})).empty());
}

TEST(LossPrologue, ThePredictionIsComputedWhereTheLossReadsItAndItBuilds) {
  ir::Graph g = graph_from_text(kl_of_log(false, false));
  auto s = plan_default(g);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "#\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_TRUE(
      has(code, "__device__ __forceinline__ float k1_kl_div_prologue(long long i, const float* __restrict__ in0)"))
      << code;
  // The offset form reads the prediction through the chain and the target as in_b.
  EXPECT_TRUE(has(code, "k1_kl_div_elem((float)k1_kl_div_prologue((off), in0), (float)in_b[(off)])")) << code;
  // The vector form: 16-byte loads of p and q, the chain on p's lanes.
  EXPECT_TRUE(has(code, "k1_kl_div_elem(k1_kl_div_prologue_lanes(V0), V1)")) << code;
  EXPECT_TRUE(has(code, "_rows<true><<<")) << code;
  // The log's result never touches memory; traffic is p and q read once.
  EXPECT_EQ(p->buffers.slots[static_cast<size_t>(g.find("lp"))].storage, codegen::Storage::kRegister);
  auto cost = costmodel::program_cost(g, s.value());
  EXPECT_GE(cost.kernels[0].bytes, 2 * 8 * 4096 * 4.0);
  EXPECT_LT(cost.kernels[0].bytes, 3 * 8 * 4096 * 4.0);
  kforge::testing::expect_builds_with_nvcc(p.value(), "loss-prologue-build");

  // Two full-shape operands in the chain (log(p) * s): no lanes, the offset form only, and it builds.
  ir::Graph two = graph_from_text(kl_of_log(true, false));
  auto s2 = plan_default(two);
  ASSERT_TRUE(s2.is_ok()) << s2.status().message();
  ASSERT_EQ(s2->kernels.size(), 1u);
  auto p2 = codegen::emit_program(two, s2.value(), {.library_file = "lib.so", .reference_source = "#\n"});
  ASSERT_TRUE(p2.is_ok()) << p2.status().message();
  EXPECT_FALSE(has(p2->kernels[0].code, "_lanes")) << p2->kernels[0].code;
  EXPECT_FALSE(has(p2->kernels[0].code, "_rows<true>")) << p2->kernels[0].code;
  kforge::testing::expect_builds_with_nvcc(p2.value(), "loss-prologue-two-build");
}

}  // namespace
}  // namespace kforge::skills
