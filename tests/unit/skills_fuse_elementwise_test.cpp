// fuse_elementwise: where it is legal, what it does to the schedule, the code it leads to, and the
// default planner that applies it.
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "sandbox/build.h"
#include "skills/fuse_elementwise.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

// x (8, 16) -> mul 2 -> add b (16) -> relu -> y; plus a branch when `shared` (t is also returned).
std::string chain_graph(bool shared, bool broadcast_producer) {
  std::string t_shape = broadcast_producer ? "[16]" : "[8, 16]";
  std::string g =
      R"({"format": "kforge.graph/1", "name": "chain",
    "inputs": [{"id": "x", "name": "x", "shape": [8, 16], "dtype": "float32"},
               {"id": "b", "name": "b", "shape": [16], "dtype": "float32"}],
    "params": [],
    "nodes": [
      {"id": "t", "op": "mul", "inputs": [)" +
      std::string(broadcast_producer ? "\"b\"" : "\"x\"") + R"(, null], "attrs": {"scalar": 2.0, "reverse": false},
       "shape": )" +
      t_shape + R"(, "dtype": "float32"},
      {"id": "u", "op": "add", "inputs": ["t", )" +
      std::string(broadcast_producer ? "\"x\"" : "\"b\"") + R"(], "attrs": {"scalar": null, "reverse": false},
       "shape": [8, 16], "dtype": "float32"},
      {"id": "y", "op": "relu", "inputs": ["u"], "attrs": {}, "shape": [8, 16], "dtype": "float32"}],
    "outputs": ["y")" +
      std::string(shared ? ", \"t\"" : "") + "]}";
  return g;
}

TEST(FuseElementwise, SitesAndApplication) {
  ir::Graph g = graph_from_text(chain_graph(false, false));
  auto s = schedule::plan_one_kernel_per_op(g);
  ASSERT_EQ(s.kernels.size(), 3u);
  auto sites = fuse_elementwise_sites(g, s);
  ASSERT_EQ(sites.size(), 2u);  // t into u, u into y
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{0, 1}));
  auto fused = fuse_elementwise(g, s, sites[0]);
  ASSERT_TRUE(fused.is_ok()) << fused.status().message();
  ASSERT_EQ(fused->kernels.size(), 2u);
  EXPECT_EQ(fused->kernels[0].nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(fused->kernels[0].name, s.kernels[1].name);
  ASSERT_EQ(fused->applied.size(), 1u);
  EXPECT_TRUE(schedule::check_schedule(g, fused.value()).is_ok());
  // The original schedule is untouched (skills are pure).
  EXPECT_EQ(s.kernels.size(), 3u);
}

TEST(FuseElementwise, RefusesAStoredOrSharedResult) {
  ir::Graph g = graph_from_text(chain_graph(true, false));
  auto s = schedule::plan_one_kernel_per_op(g);
  for (const auto& site : fuse_elementwise_sites(g, s)) EXPECT_NE(site.kernels[0], 0) << site.what;
  Site bad{{0, 1}, {}, "t into u"};
  auto r = fuse_elementwise(g, s, bad);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("graph output"), std::string::npos) << r.status().message();
}

TEST(FuseElementwise, RefusesABroadcastProducer) {
  // t has shape (16) and is broadcast into u (8, 16): fusing would recompute it per row.
  ir::Graph g = graph_from_text(chain_graph(false, true));
  auto s = schedule::plan_one_kernel_per_op(g);
  auto r = fuse_elementwise(g, s, Site{{0, 1}, {}, ""});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("shape"), std::string::npos) << r.status().message();
  auto sites = fuse_elementwise_sites(g, s);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{1, 2}));
}

TEST(FuseElementwise, RefusesWrongOrderAndNonElementwise) {
  ir::Graph g = graph_from_text(chain_graph(false, false));
  auto s = schedule::plan_one_kernel_per_op(g);
  EXPECT_FALSE(fuse_elementwise(g, s, Site{{1, 0}, {}, ""}).is_ok());
  EXPECT_FALSE(fuse_elementwise(g, s, Site{{0, 7}, {}, ""}).is_ok());
  s.kernels[0].strategy = schedule::Strategy::kReduce;
  EXPECT_FALSE(fuse_elementwise(g, s, Site{{0, 1}, {}, ""}).is_ok());
}

TEST(DefaultPlanner, FusesTheWholeChainAndHonoursDisable) {
  ir::Graph g = graph_from_text(chain_graph(false, false));
  auto s = plan_default(g);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_EQ(s->kernels[0].nodes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(s->applied.size(), 2u);
  auto off = plan_default(g, {.disabled = {"fuse_elementwise"}});
  ASSERT_TRUE(off.is_ok());
  EXPECT_EQ(off->kernels.size(), 3u);
  auto bad = plan_default(g, {.disabled = {"fuse_everything"}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("fuse_elementwise"), std::string::npos);
  // The schedule round-trips through JSON with its history.
  auto back = schedule::schedule_from_json(g, schedule::schedule_to_json(g, s.value()), "test");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->applied, s->applied);
}

TEST(DefaultPlanner, FusedChainKeepsIntermediatesInRegistersAndBuilds) {
  ir::Graph g = graph_from_text(chain_graph(false, false));
  auto s = plan_default(g);
  ASSERT_TRUE(s.is_ok());
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->kernels.size(), 1u);
  const std::string& code = p->kernels[0].code;
  // One load of x, one of b (broadcast over rows), one store; t and u stay in registers.
  EXPECT_NE(code.find("in0[i]"), std::string::npos) << code;
  EXPECT_NE(code.find("in1[((unsigned)(i) % 16u)]"), std::string::npos) << code;
  EXPECT_NE(code.find("const T a = T(r2); const T b = T(in1"), std::string::npos) << code;
  EXPECT_EQ(p->buffers.slots[static_cast<size_t>(g.find("t"))].storage, codegen::Storage::kRegister);
  EXPECT_EQ(p->buffers.slots[static_cast<size_t>(g.find("u"))].storage, codegen::Storage::kRegister);
  EXPECT_EQ(p->buffers.scratch_bytes, 0u);
  EXPECT_NE(p->entry.code.find("= nullptr;"), std::string::npos);
  // The cost model counts the fused kernel's compulsory traffic only: x, b and y.
  auto cost = costmodel::program_cost(g, s.value());
  EXPECT_DOUBLE_EQ(cost.kernels[0].bytes, (8 * 16 + 16 + 8 * 16) * 4.0);
  kforge::testing::expect_builds_with_nvcc(p.value(), "fused-build");
}

TEST(DefaultPlanner, NeverFusesIntoALibraryKernel) {
  // linear -> relu: fuse_elementwise leaves the library kernel alone (linear_epilogue's job).
  ir::Graph g = graph_from_text(R"({"format": "kforge.graph/1", "name": "lin",
    "inputs": [{"id": "x", "name": "x", "shape": [4, 8], "dtype": "float32"}],
    "params": [{"id": "w", "path": "fc.weight", "kind": "parameter", "shape": [16, 8], "dtype": "float32"}],
    "nodes": [{"id": "h", "op": "linear", "inputs": ["x", "w", null], "attrs": {}, "shape": [4, 16], "dtype": "float32"},
              {"id": "y", "op": "relu", "inputs": ["h"], "attrs": {}, "shape": [4, 16], "dtype": "float32"}],
    "outputs": ["y"]})");
  auto s = plan_default(g, {.disabled = {"linear_epilogue"}});
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->kernels.size(), 2u);
  auto with_epilogue = plan_default(g);
  ASSERT_TRUE(with_epilogue.is_ok());
  EXPECT_EQ(with_epilogue->kernels.size(), 1u);
}

}  // namespace
}  // namespace kforge::skills
