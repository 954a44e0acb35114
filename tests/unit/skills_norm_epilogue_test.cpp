// norm_epilogue: where it is legal (a float32 norm kernel of the norm alone, a pointwise chain reading
// its result alone), the merged kernel, the apply passes it leads to (the chain on each normalized value
// before the store, 16-byte tiles kept), and nvcc builds. Also layer norm's rows-in-registers kernel for
// short rows, with and without an epilogue. The numerics are checked against torch on the GPU machine
// (tests/gpu/test_kernels_vs_torch.py and the level-2 problems the bench verifies).
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "skills/norm_epilogue.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

// x [4, 32, 20, 20] -> `norm` (attrs; w, b of `affine` elements when affine > 0) -> n -> mul by s
// [32, 1, 1] -> m -> div 2 -> y; `stored` makes n a graph output too.
std::string graph(const std::string& norm, const std::string& attrs, int affine, bool stored = false) {
  const std::string shape = "[4, 32, 20, 20]";
  const std::string wb = affine > 0 ? R"(, {"id": "w", "path": "n.weight", "kind": "parameter", "shape": [)" +
                                          std::to_string(affine) +
                                          R"(], "dtype": "float32"},
               {"id": "b", "path": "n.bias", "kind": "parameter", "shape": [)" +
                                          std::to_string(affine) + R"(], "dtype": "float32"})"
                                    : "";
  const std::string norm_inputs = affine > 0 ? R"(["x", "w", "b"])" : R"(["x", null, null])";
  return R"({"format": "kforge.graph/1", "name": "ne",
    "inputs": [{"id": "x", "name": "x", "shape": )" +
         shape + R"(, "dtype": "float32"}],
    "params": [{"id": "s", "path": "scale", "kind": "parameter", "shape": [32, 1, 1], "dtype": "float32"})" +
         wb +
         R"(],
    "nodes": [
      {"id": "n", "op": ")" +
         norm + R"(", "inputs": )" + norm_inputs + R"(, "attrs": )" + attrs + R"(, "shape": )" + shape +
         R"(, "dtype": "float32"},
      {"id": "m", "op": "mul", "inputs": ["n", "s"], "attrs": {"reverse": false, "scalar": null}, "shape": )" +
         shape + R"(, "dtype": "float32"},
      {"id": "y", "op": "div", "inputs": ["m", null], "attrs": {"reverse": false, "scalar": 2.0}, "shape": )" +
         shape + R"(, "dtype": "float32"}],
    "outputs": ["y")" +
         (stored ? R"(, "n")" : "") + R"(]})";
}

schedule::Schedule planned(const ir::Graph& g) {
  DefaultPlanOptions o;
  o.base.tolerance = 1e-4;
  auto s = plan_default(g, o);
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.value();
}

TEST(NormEpilogue, TheChainAfterAGroupNormRunsInItsApplyPass) {
  ir::Graph g = graph_from_text(graph("group_norm", R"({"num_groups": 8, "eps": 1e-5})", 32));
  schedule::Schedule s = planned(g);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(is_norm_epilogue(g, s.kernels[0]));
  ASSERT_FALSE(s.applied.empty());
  EXPECT_EQ(s.applied.back().rfind("norm_epilogue:", 0), 0u) << s.applied.back();
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  // The statistics as before; the 16-byte apply pass writes each lane through the chain (scale, / 2).
  EXPECT_TRUE(has(code, "_st_")) << code;
  EXPECT_TRUE(has(code, "r.w = k0_group_norm_post(i + 3, ((((xv.w - mean) - mean_lo) * rstd) * w) + bb, in")) << code;
  EXPECT_TRUE(has(code, "y[i] = k0_group_norm_post(i, v, in")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "norm-epilogue-group-build");
}

TEST(NormEpilogue, InstanceNormAndBatchNormTakeItTooButNotAStoredResult) {
  ir::Graph in = graph_from_text(graph("instance_norm", R"({"use_input_stats": true, "eps": 1e-5})", 0));
  schedule::Schedule s = planned(in);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(is_norm_epilogue(in, s.kernels[0]));
  ir::Graph bn = graph_from_text(graph("batch_norm", R"({"training": true, "eps": 1e-5})", 32));
  EXPECT_EQ(planned(bn).kernels.size(), 1u);
  // The norm's result is a graph output: it must be stored, so the chain keeps its own kernel.
  ir::Graph stored = graph_from_text(graph("group_norm", R"({"num_groups": 8, "eps": 1e-5})", 32, true));
  schedule::Schedule ss = planned(stored);
  EXPECT_EQ(ss.kernels.size(), 2u);
  EXPECT_TRUE(norm_epilogue_sites(stored, ss).empty());
  auto bad = norm_epilogue(stored, ss, Site{{0, 1}, {}, ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(has(bad.status().message(), "graph output")) << bad.status().message();
}

TEST(NormEpilogue, LayerNormOfShortRowsKeepsEachRowInRegisters) {
  // Rows of 20 (the last dim): 5 vectors, 8 lanes per row (one vector each, 3 idle), one pass.
  const std::string text = R"({"format": "kforge.graph/1", "name": "ln",
    "inputs": [{"id": "x", "name": "x", "shape": [4, 32, 20, 20], "dtype": "float32"}],
    "params": [{"id": "w", "path": "n.weight", "kind": "parameter", "shape": [20], "dtype": "float32"},
               {"id": "b", "path": "n.bias", "kind": "parameter", "shape": [20], "dtype": "float32"}],
    "nodes": [
      {"id": "n", "op": "layer_norm", "inputs": ["x", "w", "b"], "attrs": {"normalized_shape": [20], "eps": 1e-5},
       "shape": [4, 32, 20, 20], "dtype": "float32"},
      {"id": "y", "op": "gelu", "inputs": ["n"], "attrs": {"approximate": "none"}, "shape": [4, 32, 20, 20],
       "dtype": "float32"}],
    "outputs": ["y"]})";
  ir::Graph g = graph_from_text(text);
  schedule::Schedule s = planned(g);
  ASSERT_EQ(s.kernels.size(), 1u);
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_FALSE(has(code, "_st_")) << code;
  EXPECT_TRUE(has(code, "constexpr int L = 8, V = 1, D4 = 5;")) << code;
  EXPECT_TRUE(has(code, "s += __shfl_xor_sync(0xffffffffu, s, o, L);")) << code;
  EXPECT_TRUE(has(code,
                  "r.z = k0_layer_norm_post(row * 20LL + c + 2, (((v[k].z - mean) * rstd) * p1[c + 2]) + "
                  "p2[c + 2]);"))
      << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "layer-norm-rows-build");
}

}  // namespace
}  // namespace kforge::skills

namespace kforge::skills {
namespace {

TEST(NormEpilogue, GroupNormOfShortContiguousGroupsKeepsEachGroupInRegisters) {
  // level2/37's shape, smaller: [64, 256] in 4 groups of 64 contiguous channels (no spatial dims); the
  // weight and bias indexed by the element's channel.
  const std::string text = R"({"format": "kforge.graph/1", "name": "gn",
    "inputs": [{"id": "x", "name": "x", "shape": [64, 256], "dtype": "float32"}],
    "params": [{"id": "w", "path": "n.weight", "kind": "parameter", "shape": [256], "dtype": "float32"},
               {"id": "b", "path": "n.bias", "kind": "parameter", "shape": [256], "dtype": "float32"}],
    "nodes": [
      {"id": "y", "op": "group_norm", "inputs": ["x", "w", "b"], "attrs": {"num_groups": 4, "eps": 1e-5},
       "shape": [64, 256], "dtype": "float32"}],
    "outputs": ["y"]})";
  ir::Graph g = graph_from_text(text);
  schedule::Schedule s = planned(g);
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_FALSE(has(code, "_st_")) << code;
  EXPECT_TRUE(has(code, "constexpr long long ROWS = 256LL, D = 64LL;")) << code;
  EXPECT_TRUE(has(code, "constexpr int L = 16, V = 1, D4 = 16;")) << code;
  EXPECT_TRUE(has(code,
                  "r.w = (((v[k].w - mean) * rstd) * p1[((row * 64LL + c + 3) / 1LL) % 256LL]) + "
                  "p2[((row * 64LL + c + 3) / 1LL) % 256LL];"))
      << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "group-norm-rows-build");
  // Groups of 4 x 400 positions (1600 elements) are longer than a row in registers: two passes.
  const std::string big = R"({"format": "kforge.graph/1", "name": "gn2",
    "inputs": [{"id": "x", "name": "x", "shape": [2, 16, 20, 20], "dtype": "float32"}],
    "params": [],
    "nodes": [
      {"id": "y", "op": "group_norm", "inputs": ["x", null, null], "attrs": {"num_groups": 4, "eps": 1e-5},
       "shape": [2, 16, 20, 20], "dtype": "float32"}],
    "outputs": ["y"]})";
  ir::Graph g2 = graph_from_text(big);
  auto p2 = codegen::emit_program(g2, planned(g2), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p2.is_ok()) << p2.status().message();
  EXPECT_TRUE(has(p2->kernels[0].code, "_st_")) << p2->kernels[0].code;
}

}  // namespace
}  // namespace kforge::skills
