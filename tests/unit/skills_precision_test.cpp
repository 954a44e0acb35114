// Precision skills: legal only where the schedule's tolerance absorbs TF32, and what they change.
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "skills/planner.h"
#include "skills/precision.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

// x (4, 8) -> linear (16) -> relu; and a conv2d.
const char* kLinear = R"({"format": "kforge.graph/1", "name": "lin",
  "inputs": [{"id": "x", "name": "x", "shape": [4, 8], "dtype": "float32"}],
  "params": [{"id": "w", "path": "fc.weight", "kind": "parameter", "shape": [16, 8], "dtype": "float32"}],
  "nodes": [{"id": "h", "op": "linear", "inputs": ["x", "w", null], "attrs": {}, "shape": [4, 16], "dtype": "float32"},
            {"id": "y", "op": "relu", "inputs": ["h"], "attrs": {}, "shape": [4, 16], "dtype": "float32"}],
  "outputs": ["y"]})";

const char* kConv = R"({"format": "kforge.graph/1", "name": "conv",
  "inputs": [{"id": "x", "name": "x", "shape": [2, 8, 16, 16], "dtype": "float32"}],
  "params": [{"id": "w", "path": "conv.weight", "kind": "parameter", "shape": [4, 8, 3, 3], "dtype": "float32"}],
  "nodes": [{"id": "y", "op": "conv", "inputs": ["x", "w", null],
             "attrs": {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1},
             "shape": [2, 4, 16, 16], "dtype": "float32"}],
  "outputs": ["y"]})";

TEST(Tf32Contractions, OnlyWhereTheToleranceAllows) {
  ir::Graph g = graph_from_text(kLinear);
  auto strict = schedule::plan_one_kernel_per_op(g, {.precision = "fp32", .tolerance = 1e-4});
  EXPECT_TRUE(tf32_contractions_sites(g, strict).empty());
  auto refused = tf32_contractions(g, strict, Site{{0}, {}, ""});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("tolerance"), std::string::npos);

  auto loose = schedule::plan_one_kernel_per_op(g, {.precision = "fp32", .tolerance = 1e-2});
  auto sites = tf32_contractions_sites(g, loose);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{0}));
  auto s = tf32_contractions(g, loose, sites[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->precision, "tf32");
  EXPECT_TRUE(tf32_contractions_sites(g, s.value()).empty());  // applied once
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "#\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_NE(p->kernels[0].code.find("CUBLAS_COMPUTE_32F_FAST_TF32"), std::string::npos);
}

TEST(DefaultPlanner, ConvolutionsStayOnTorchsEngineUnderBothProtocols) {
  // cudnnFind's pick (knob engine = 1) measured 1.4-7x slower than torch's engine on the H200
  // (bench/NOTES.md run 5): no skill chooses it, whatever the tolerance.
  ir::Graph g = graph_from_text(kConv);
  for (double tolerance : {1e-4, 1e-2}) {
    auto s = plan_default(g, {.base = {.precision = "fp32", .tolerance = tolerance}});
    ASSERT_TRUE(s.is_ok()) << s.status().message();
    ASSERT_EQ(s->kernels.size(), 1u);
    EXPECT_EQ(s->kernels[0].knob(schedule::Knob::kEngine, 0), 0) << "tolerance " << tolerance;
  }
}

TEST(DefaultPlanner, PrecisionFollowsTheProtocolTolerance) {
  ir::Graph g = graph_from_text(kLinear);
  auto strict = plan_default(g, {.base = {.precision = "fp32", .tolerance = 1e-4}});
  ASSERT_TRUE(strict.is_ok());
  EXPECT_EQ(strict->precision, "fp32");
  auto loose = plan_default(g, {.base = {.precision = "fp32", .tolerance = 1e-2}});
  ASSERT_TRUE(loose.is_ok());
  EXPECT_EQ(loose->precision, "tf32");
  EXPECT_DOUBLE_EQ(loose->tolerance, 1e-2);
  auto off = plan_default(g, {.base = {.precision = "fp32", .tolerance = 1e-2}, .disabled = {"tf32_contractions"}});
  ASSERT_TRUE(off.is_ok());
  EXPECT_EQ(off->precision, "fp32");
}

}  // namespace
}  // namespace kforge::skills
