// constant_output: the value-range rules, where the skill is legal (level2/83's pattern and its near
// misses), what it does to the schedule, and the fill kernel it leads to.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "ir/value_range.h"
#include "sandbox/build.h"
#include "skills/constant_output.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using ir::value_ranges;
using ir::ValueRange;
using kforge::testing::graph_from_text;

constexpr double kInf = std::numeric_limits<double>::infinity();

// x (4, 8) float32, h (4, 8) float16, then `nodes` (JSON objects, comma-separated), returning y.
ir::Graph elementwise_graph(const std::string& nodes) {
  return graph_from_text(R"({"format": "kforge.graph/1", "name": "ranges",
    "inputs": [{"id": "x", "name": "x", "shape": [4, 8], "dtype": "float32"},
               {"id": "h", "name": "h", "shape": [4, 8], "dtype": "float16"}],
    "params": [], "nodes": [)" +
                         nodes + R"(], "outputs": ["y"]})");
}

std::string node(const std::string& id, const std::string& op, const std::string& inputs, const std::string& attrs,
                 const std::string& dtype = "float32", const std::string& shape = "[4, 8]") {
  return R"({"id": ")" + id + R"(", "op": ")" + op + R"(", "inputs": [)" + inputs + R"(], "attrs": )" + attrs +
         R"(, "shape": )" + shape + R"(, "dtype": ")" + dtype + R"("})";
}

ValueRange range_of(const ir::Graph& g, const std::string& id) {
  return value_ranges(g)[static_cast<size_t>(g.find(id))];
}

const char* kScalar2 = R"({"scalar": 2.0, "reverse": false})";

TEST(ValueRange, InputsAndUncoveredOpsAreAny) {
  ir::Graph g = elementwise_graph(node("e", "exp", R"("x")", "{}") + "," +
                                  node("y", "add", R"("x", "e")", R"({"scalar": null, "reverse": false})"));
  EXPECT_TRUE(range_of(g, "x").is_any());
  EXPECT_TRUE(range_of(g, "e").is_any()) << range_of(g, "e").str();  // exp is not covered
  EXPECT_TRUE(range_of(g, "y").is_any()) << "no operand is constant";
  EXPECT_EQ(range_of(g, "y").str(), "any");
}

TEST(ValueRange, FullMinimumMaximumAndClampAreExact) {
  ir::Graph g =
      elementwise_graph(node("z", "full", "", R"({"shape": [], "value": 0.1, "dtype": "float32"})", "float32", "[]") +
                        "," + node("m", "minimum", R"("x", "z")", R"({"scalar": null, "reverse": false})") + "," +
                        node("n", "maximum", R"("x", null)", R"({"scalar": -2.0, "reverse": false})") + "," +
                        node("c", "clamp", R"("m")", R"({"min": 0.0, "max": 1.0})") + "," +
                        node("o", "clamp", R"("n")", R"({"min": null, "max": 3.0})") + "," +
                        node("y", "hardtanh", R"("x")", R"({"min_val": -1.0, "max_val": 1.0})"));
  const double tenth = static_cast<float>(0.1);  // rounded to the node's dtype, as torch does
  EXPECT_EQ(range_of(g, "z"), ValueRange::point(tenth));
  EXPECT_EQ(range_of(g, "m"), ValueRange::between(-kInf, tenth));
  EXPECT_EQ(range_of(g, "n"), ValueRange::between(-2.0, kInf));
  EXPECT_EQ(range_of(g, "c"), ValueRange::between(0.0, tenth));
  EXPECT_EQ(range_of(g, "o"), ValueRange::between(-2.0, 3.0));
  EXPECT_EQ(range_of(g, "y"), ValueRange::between(-1.0, 1.0));
}

TEST(ValueRange, ActivationsStayInTheirImage) {
  ir::Graph g = elementwise_graph(node("r", "relu", R"("x")", "{}") + "," + node("s", "sigmoid", R"("x")", "{}") + "," +
                                  node("t", "tanh", R"("x")", "{}") + "," + node("y", "neg", R"("r")", "{}"));
  EXPECT_EQ(range_of(g, "r"), ValueRange::between(0.0, kInf));
  EXPECT_EQ(range_of(g, "s"), ValueRange::between(0.0, 1.0));
  EXPECT_EQ(range_of(g, "t"), ValueRange::between(-1.0, 1.0));
  EXPECT_EQ(range_of(g, "y"), ValueRange::between(-kInf, 0.0));
}

TEST(ValueRange, SaturatedTranscendentalsAreNeverPoints) {
  // sigmoid(clamp(x, 50, 50)) is 1 in float, but exp is rounded differently by each library.
  ir::Graph g = elementwise_graph(node("c", "clamp", R"("x")", R"({"min": 50.0, "max": 50.0})") + "," +
                                  node("y", "sigmoid", R"("c")", "{}"));
  EXPECT_TRUE(range_of(g, "c").is_point());
  EXPECT_FALSE(range_of(g, "y").is_point()) << range_of(g, "y").str();
  EXPECT_LE(range_of(g, "y").hi, 1.0);
}

TEST(ValueRange, ArithmeticWithAConstantRoundsOutward) {
  ir::Graph g = elementwise_graph(node("c", "clamp", R"("x")", R"({"min": 0.0, "max": 1.0})") + "," +
                                  node("m", "mul", R"("c", null)", kScalar2) + "," +
                                  node("s", "sub", R"("c", null)", R"({"scalar": 1.0, "reverse": true})") + "," +
                                  node("z", "mul", R"("x", null)", R"({"scalar": 0.0, "reverse": false})") + "," +
                                  node("p", "clamp", R"("x")", R"({"min": 0.1, "max": 0.1})") + "," +
                                  node("q", "add", R"("p", null)", R"({"scalar": 0.2, "reverse": false})") + "," +
                                  node("y", "div", R"("c", null)", R"({"scalar": 4.0, "reverse": false})"));
  const ValueRange m = range_of(g, "m");
  EXPECT_FALSE(m.is_point());
  EXPECT_EQ(m.lo, 0.0) << "0 * 2 is exact";
  EXPECT_GE(m.hi, 2.0);
  EXPECT_LT(m.hi, 2.0 + 1e-5);
  const ValueRange s = range_of(g, "s");  // 1 - c
  EXPECT_LE(s.lo, 0.0);
  EXPECT_GE(s.hi, 1.0);
  EXPECT_EQ(range_of(g, "z"), ValueRange::point(0.0)) << "every non-NaN x * 0 is 0";
  // A point stays a point, computed as float32 does: 0.1f + 0.2f, not 0.3.
  EXPECT_EQ(range_of(g, "q"), ValueRange::point(static_cast<double>(0.1f + 0.2f)));
  EXPECT_GE(range_of(g, "y").hi, 0.25);
}

TEST(ValueRange, DropoutJoinsZeroAndScales) {
  ir::Graph g = elementwise_graph(node("c", "clamp", R"("x")", R"({"min": 0.5, "max": 1.0})") + "," +
                                  node("d", "dropout", R"("c")", R"({"p": 0.2, "training": true})") + "," +
                                  node("e", "dropout", R"("c")", R"({"p": 0.2, "training": false})") + "," +
                                  node("z", "clamp", R"("x")", R"({"min": 0.0, "max": 0.0})") + "," +
                                  node("y", "dropout", R"("z")", R"({"p": 0.2, "training": true})"));
  const ValueRange d = range_of(g, "d");
  EXPECT_EQ(d.lo, 0.0) << "the mask writes 0";
  EXPECT_GE(d.hi, 1.25);
  EXPECT_LT(d.hi, 1.25 + 1e-5);
  EXPECT_EQ(range_of(g, "e"), ValueRange::between(0.5, 1.0)) << "eval mode is the identity";
  EXPECT_EQ(range_of(g, "y"), ValueRange::point(0.0)) << "dropout of {0} is {0}";
}

TEST(ValueRange, OnlyFloat32AndFloat64AreTracked) {
  ir::Graph g = elementwise_graph(node("y", "clamp", R"("h")", R"({"min": 0.0, "max": 0.0})", "float16"));
  EXPECT_TRUE(range_of(g, "y").is_any());
}

// level2/83 as the importer writes it under the kernelbench protocol (training mode), small:
// conv3d -> group_norm -> min(x, tensor(0)) -> clamp(lo, hi) -> dropout; `also_return_norm` adds the
// group norm's result as a second output.
ir::Graph conv_norm_min_clamp(double lo, double hi, bool also_return_norm = false) {
  char clamp[96];
  std::snprintf(clamp, sizeof clamp, R"({"min": %.1f, "max": %.1f})", lo, hi);
  const std::string shape = "[2, 4, 4, 4, 4]";
  return graph_from_text(
      R"({"format": "kforge.graph/1", "name": "83_small", "mode": "train",
    "inputs": [{"id": "x", "name": "x", "shape": [2, 3, 6, 6, 6], "dtype": "float32"}],
    "params": [{"id": "p0", "path": "conv.weight", "kind": "parameter", "shape": [4, 3, 3, 3, 3], "dtype": "float32"},
               {"id": "p1", "path": "conv.bias", "kind": "parameter", "shape": [4], "dtype": "float32"},
               {"id": "p2", "path": "norm.weight", "kind": "parameter", "shape": [4], "dtype": "float32"},
               {"id": "p3", "path": "norm.bias", "kind": "parameter", "shape": [4], "dtype": "float32"}],
    "nodes": [)" +
      node("v0", "conv", R"("x", "p0", "p1")",
           R"({"stride": [1, 1, 1], "padding": [0, 0, 0], "dilation": [1, 1, 1], "groups": 1})", "float32", shape) +
      "," + node("v1", "group_norm", R"("v0", "p2", "p3")", R"({"num_groups": 2, "eps": 1e-5})", "float32", shape) +
      "," + node("v2", "full", "", R"({"shape": [], "value": 0.0, "dtype": "float32"})", "float32", "[]") + "," +
      node("v3", "minimum", R"("v1", "v2")", R"({"scalar": null, "reverse": false})", "float32", shape) + "," +
      node("v4", "clamp", R"("v3")", clamp, "float32", shape) + "," +
      node("v5", "dropout", R"("v4")", R"({"p": 0.2, "training": true})", "float32", shape) + R"(],
    "outputs": ["v5")" +
      (also_return_norm ? R"(, "v1")" : "") + "]}");
}

TEST(ConstantOutput, TheMinClampDropoutChainIsASite) {
  ir::Graph g = conv_norm_min_clamp(0.0, 1.0);
  EXPECT_EQ(range_of(g, "v3"), ValueRange::between(-kInf, 0.0));
  EXPECT_EQ(range_of(g, "v4"), ValueRange::point(0.0));
  EXPECT_EQ(range_of(g, "v5"), ValueRange::point(0.0));
  auto s = schedule::plan_one_kernel_per_op(g);
  auto sites = constant_output_sites(g, s);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{5, 0, 1, 2, 3, 4}));
  EXPECT_EQ(sites[0].params.at("output"), 0);
  EXPECT_NE(sites[0].what.find("with 0; drops k0_conv, k1_group_norm"), std::string::npos) << sites[0].what;

  auto r = constant_output(g, s, sites[0]);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->kernels.size(), 1u) << "the conv and the norm no longer run";
  const schedule::Kernel& fill = r->kernels[0];
  EXPECT_EQ(fill.strategy, schedule::Strategy::kConstantFill);
  EXPECT_EQ(fill.impl, schedule::Impl::kGenerated);
  EXPECT_EQ(fill.nodes, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(fill.root(), 5);
  ASSERT_EQ(r->applied.size(), 1u);
  EXPECT_EQ(r->applied[0].rfind("constant_output: ", 0), 0u);
  EXPECT_TRUE(schedule::check_schedule(g, r.value()).is_ok());
  EXPECT_TRUE(constant_output_sites(g, r.value()).empty()) << "a fill is not filled again";
  EXPECT_EQ(s.kernels.size(), 6u) << "skills are pure";
  // The schedule round-trips through JSON.
  auto back = schedule::schedule_from_json(g, schedule::schedule_to_json(g, r.value()), "test");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->kernels[0].strategy, schedule::Strategy::kConstantFill);
}

TEST(ConstantOutput, NearMissesAreNotSites) {
  // clamp to [-1, 1] after min with 0 leaves [-1, 0]: not one value.
  ir::Graph g = conv_norm_min_clamp(-1.0, 1.0);
  EXPECT_EQ(range_of(g, "v4"), ValueRange::between(-1.0, 0.0));
  auto s = schedule::plan_one_kernel_per_op(g);
  EXPECT_TRUE(constant_output_sites(g, s).empty());
  Site forged{{5, 0, 1, 2, 3, 4}, {{"output", 0}}, ""};
  auto r = constant_output(g, s, forged);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("do not prove output 'v5' constant"), std::string::npos) << r.status().message();
  // Legal output, but a site that names other kernels (or no output) is refused.
  ir::Graph c = conv_norm_min_clamp(0.0, 1.0);
  auto sc = schedule::plan_one_kernel_per_op(c);
  EXPECT_FALSE(constant_output(c, sc, Site{{5}, {{"output", 0}}, ""}).is_ok());
  EXPECT_FALSE(constant_output(c, sc, Site{{5, 0, 1, 2, 3, 4}, {}, ""}).is_ok());
  EXPECT_FALSE(constant_output(c, sc, Site{{5, 0, 1, 2, 3, 4}, {{"output", 1}}, ""}).is_ok());
}

TEST(ConstantOutput, KeepsProducersThatAnotherOutputNeeds) {
  ir::Graph g = conv_norm_min_clamp(0.0, 1.0, /*also_return_norm=*/true);
  auto s = schedule::plan_one_kernel_per_op(g);
  auto sites = constant_output_sites(g, s);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{5, 2, 3, 4})) << "conv and norm make output v1";
  auto r = constant_output(g, s, sites[0]);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->kernels.size(), 3u);
  EXPECT_EQ(r->kernels[0].name, "k0_conv");
  EXPECT_EQ(r->kernels[1].name, "k1_group_norm");
  EXPECT_EQ(r->kernels[2].nodes, (std::vector<int>{2, 3, 4, 5}));
}

TEST(ConstantOutput, RefusesWhenAFusedNodeIsReadElsewhere) {
  // A kernel whose non-root node another kernel reads cannot stop computing it.
  ir::Graph g = conv_norm_min_clamp(0.0, 1.0);
  auto s = schedule::plan_one_kernel_per_op(g);
  // Output v5's kernel is alone; the kernel before it makes v1 and v4 (and min's v3) together.
  schedule::Schedule t;
  t.kernels = {s.kernels[0], s.kernels[2],
               schedule::Kernel{"k4_pair", {1, 3, 4}, schedule::Impl::kGenerated, schedule::Strategy::kElementwise, {}},
               s.kernels[5]};
  ASSERT_TRUE(schedule::check_schedule(g, t).is_ok());
  auto sites = constant_output_sites(g, t);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{3, 0, 1, 2})) << "the fill absorbs the pair kernel whole";
  // Now return v1 too: the pair kernel's v1 is needed, so the fill absorbs nothing.
  ir::Graph g2 = conv_norm_min_clamp(0.0, 1.0, true);
  schedule::Schedule t2;
  t2.kernels = {
      s.kernels[0], s.kernels[2],
      schedule::Kernel{"k4_pair", {1, 3, 4}, schedule::Impl::kGenerated, schedule::Strategy::kElementwise, {}}};
  t2.kernels.push_back(
      schedule::Kernel{"k5_dropout", {5}, schedule::Impl::kGenerated, schedule::Strategy::kElementwise, {}});
  ASSERT_TRUE(schedule::check_schedule(g2, t2).is_ok());
  sites = constant_output_sites(g2, t2);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{3})) << "the pair kernel makes v1, so it and its inputs stay";
  // With the dropout fused into the pair kernel, v1 (inside it) is a graph output: refused.
  schedule::Schedule t3;
  t3.kernels = {
      s.kernels[0], s.kernels[2],
      schedule::Kernel{"k5_all", {1, 3, 4, 5}, schedule::Impl::kGenerated, schedule::Strategy::kElementwise, {}}};
  ASSERT_TRUE(schedule::check_schedule(g2, t3).is_ok());
  EXPECT_TRUE(constant_output_sites(g2, t3).empty());
  auto r = constant_output(g2, t3, Site{{2, 1}, {{"output", 0}}, ""});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("which a graph output or a kernel that stays needs"), std::string::npos)
      << r.status().message();
}

TEST(ConstantOutput, TheFillKernelWritesTheConstantAndNothingElse) {
  ir::Graph g = conv_norm_min_clamp(0.0, 1.0);
  auto s = plan_default(g, {.base = {.precision = "fp32", .tolerance = 1e-4}});
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  ASSERT_FALSE(s->applied.empty());
  EXPECT_EQ(s->applied[0].rfind("constant_output: ", 0), 0u) << "first in the catalogue";
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->kernels.size(), 1u);
  const std::string& code = p->kernels[0].code;
  EXPECT_NE(code.find("KF_GRID_STRIDE(i, 512LL) { out[i] = (float)(0.0f); }"), std::string::npos) << code;
  EXPECT_NE(code.find("k5_constant_kernel(float* __restrict__ out)"), std::string::npos) << code;
  EXPECT_EQ(code.find("cudnn"), std::string::npos) << code;
  EXPECT_TRUE(p->libraries.empty());
  EXPECT_EQ(p->buffers.scratch_bytes, 0u) << "the absorbed values are never stored";
  // The interface is unchanged: the same input and four parameters, accepted and unread.
  EXPECT_EQ(p->manifest["inputs"].size(), 1u);
  EXPECT_EQ(p->manifest["params"].size(), 4u);
  // The cost model counts the store of the output only.
  auto cost = costmodel::program_cost(g, s.value());
  EXPECT_DOUBLE_EQ(cost.kernels[0].bytes, 512 * 4.0);
  EXPECT_DOUBLE_EQ(cost.kernels[0].flops, 0.0);

  // Without the skill the training-mode dropout is refused: the rewrite is what makes it build.
  auto off = plan_default(g, {.base = {.precision = "fp32", .tolerance = 1e-4}, .disabled = {"constant_output"}});
  ASSERT_TRUE(off.is_ok());
  auto refused = codegen::emit_program(g, off.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("dropout in training mode"), std::string::npos);

  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  auto dir = kforge::testing::temp_dir("constant-build");
  auto built = sandbox::build_program(p.value(), tc.value(),
                                      {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  EXPECT_TRUE(built->ok) << built->message;
  std::filesystem::remove_all(dir);
}

TEST(ConstantOutput, CodegenProvesTheConstantAgain) {
  // A schedule from a file that calls a non-constant output a fill is refused, not emitted.
  ir::Graph g = conv_norm_min_clamp(-1.0, 1.0);
  auto s = schedule::plan_one_kernel_per_op(g);
  s.kernels[5].strategy = schedule::Strategy::kConstantFill;
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("not one value"), std::string::npos) << p.status().message();
}

}  // namespace
}  // namespace kforge::skills
