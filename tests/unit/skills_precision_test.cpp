// Precision skills: legal only where the schedule's tolerance absorbs TF32 (or 3xTF32), and what they change.
#include <gtest/gtest.h>

#include <string>

#include "codegen/program.h"
#include "costmodel/roofline.h"
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

// a [M, K] @ b [K, N] with inputs of the given dist (a JSON object), and a conv beside it when with_conv.
std::string matmul_graph(int64_t m, int64_t k, int64_t n, const std::string& dist, bool with_conv = false) {
  const std::string M = std::to_string(m), K = std::to_string(k), N = std::to_string(n);
  std::string conv_input =
      with_conv ? R"(, {"id": "x", "name": "x", "shape": [2, 8, 16, 16], "dtype": "float32"})" : "";
  std::string conv_param =
      with_conv
          ? R"([{"id": "w", "path": "conv.weight", "kind": "parameter", "shape": [4, 8, 3, 3], "dtype": "float32"}])"
          : "[]";
  std::string conv_node = with_conv ? R"(, {"id": "y", "op": "conv", "inputs": ["x", "w", null],
             "attrs": {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1},
             "shape": [2, 4, 16, 16], "dtype": "float32"})"
                                    : "";
  return R"({"format": "kforge.graph/1", "name": "mm",
  "inputs": [{"id": "a", "name": "a", "shape": [)" +
         M + ", " + K + R"(], "dtype": "float32", "dist": )" + dist + R"(},
             {"id": "b", "name": "b", "shape": [)" +
         K + ", " + N + R"(], "dtype": "float32", "dist": )" + dist + "}" + conv_input + R"(],
  "params": )" +
         conv_param +
         R"(,
  "nodes": [{"id": "c", "op": "matmul", "inputs": ["a", "b"], "attrs": {}, "shape": [)" +
         M + ", " + N + R"(], "dtype": "float32"})" + conv_node + R"(],
  "outputs": ["c")" +
         (with_conv ? R"(, "y")" : "") + "]}";
}

const std::string kUniform = R"({"kind": "uniform", "low": 0.0, "high": 1.0})";
const std::string kNormal = R"({"kind": "normal", "mean": 0.0, "std": 1.0})";

TEST(SplitTf32Contractions, LargeGemmsUnderKernelbenchsTolerance) {
  ir::Graph g = graph_from_text(matmul_graph(2048, 2048, 2048, kUniform));
  auto strict = plan_default(g, {.base = {.precision = "fp32", .tolerance = 1e-4}});
  ASSERT_TRUE(strict.is_ok()) << strict.status().message();
  EXPECT_EQ(strict->precision, "3xtf32");
  auto p = codegen::emit_program(g, strict.value(), {.library_file = "lib.so", .reference_source = "#\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_NE(code.find("kf_tf32_split3<<<"), std::string::npos);
  EXPECT_NE(code.find("CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT"), std::string::npos);
  EXPECT_NE(code.find("3 * kf_kp"), std::string::npos);
  EXPECT_EQ(p->kernels[0].launches, 3);
  // the scratch: three copies of A and of B
  EXPECT_EQ(p->buffers.workspace_bytes, static_cast<size_t>(3 * 4 * 2048 * (2048 + 2048)));
  kforge::testing::expect_builds_with_nvcc(p.value(), "split-tf32-build");
  // the cost model: three TF32 products per product (the floor), and faster than exact fp32 at this size
  auto fp32 =
      plan_default(g, {.base = {.precision = "fp32", .tolerance = 1e-4}, .disabled = {"split_tf32_contractions"}});
  auto tf32 = schedule::plan_one_kernel_per_op(g, {.precision = "tf32", .tolerance = 1e-2});
  ASSERT_TRUE(fp32.is_ok());
  EXPECT_NEAR(costmodel::program_cost(g, strict.value()).floor_seconds,
              3 * costmodel::program_cost(g, tf32).floor_seconds - 2 * costmodel::DeviceCeilings{}.launch_seconds,
              1e-3 * costmodel::program_cost(g, strict.value()).floor_seconds);
  EXPECT_LT(costmodel::program_cost(g, strict.value()).seconds, costmodel::program_cost(g, fp32.value()).seconds);
  // under cuda-agent's 1e-2, TF32 comes first in the catalogue and the split has no site after it
  auto loose = plan_default(g, {.base = {.precision = "fp32", .tolerance = 1e-2}});
  ASSERT_TRUE(loose.is_ok());
  EXPECT_EQ(loose->precision, "tf32");
  EXPECT_TRUE(split_tf32_contractions_sites(g, loose.value()).empty());
}

TEST(SplitTf32Contractions, NotWhereItCannotPayOrHold) {
  auto site_count = [](const std::string& text) {
    ir::Graph g = graph_from_text(text);
    auto s = schedule::plan_one_kernel_per_op(g, {.precision = "fp32", .tolerance = 1e-4});
    return split_tf32_contractions_sites(g, s).size();
  };
  EXPECT_EQ(site_count(matmul_graph(2048, 2048, 2048, kUniform)), 1u);
  EXPECT_EQ(site_count(matmul_graph(256, 256, 256, kUniform)), 0u) << "below 1 GFLOP: the launches do not pay";
  EXPECT_EQ(site_count(matmul_graph(256, 524288, 256, kUniform)), 0u) << "large K, small M and N: memory-bound";
  EXPECT_EQ(site_count(matmul_graph(1048576, 256, 768, kUniform)), 0u)
      << "a 1 GiB operand: the scratch cuts K into 4 chunks, each re-reading the 3 GB output";
  EXPECT_EQ(site_count(matmul_graph(8205, 2949, 5921, kUniform)), 0u)
      << "the output's rows (5921 floats) unaligned: measured slower than exact fp32 (level1/8)";
  EXPECT_EQ(site_count(matmul_graph(8205, 2949, 5920, kUniform)), 1u) << "an odd M and K are padded in the copies";
  EXPECT_EQ(site_count(matmul_graph(2048, 2048, 2048, kUniform, true)), 0u)
      << "3xtf32 would put the convolution on exact FMA engines";
  // outputs that cross zero: two fp32 accumulation orders differ by more than 1e-4 near it
  EXPECT_EQ(site_count(matmul_graph(2048, 2048, 2048, kNormal)), 0u);
  ir::Graph g = graph_from_text(matmul_graph(2048, 2048, 2048, kUniform));
  auto tf32 = schedule::plan_one_kernel_per_op(g, {.precision = "tf32", .tolerance = 1e-2});
  auto refused = split_tf32_contractions(g, tf32, Site{{0}, {}, ""});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("already tf32"), std::string::npos);
}

TEST(SplitTf32Contractions, CutsKIntoChains) {
  // one TF32 GEMM accumulates at most 2048 of K (kernels/split_tf32.h: the tensor cores' accumulation bias)
  ir::Graph g = graph_from_text(matmul_graph(1024, 32768, 2048, kUniform));
  auto s = schedule::plan_one_kernel_per_op(g, {.precision = "3xtf32", .tolerance = 1e-4});
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "#\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_NE(code.find("K = 32768 in 16 chunks of 2048"), std::string::npos) << code;
  EXPECT_NE(code.find("kf_k0 == 0 ? &kf_beta : &kf_one"), std::string::npos);
  EXPECT_EQ(p->kernels[0].launches, 48);
  EXPECT_LE(p->buffers.workspace_bytes, static_cast<size_t>(1) << 30);
}

TEST(SplitTf32Contractions, AttentionStaysExactFp32) {
  ir::Graph g = graph_from_text(kforge::testing::one_node_graph(
      "scaled_dot_product_attention", {{"q", {2, 4, 64, 32}}, {"k", {2, 4, 80, 32}}, {"v", {2, 4, 80, 48}}},
      R"({"is_causal": true})", {2, 4, 64, 48}));
  auto s = schedule::plan_one_kernel_per_op(g, {.precision = "3xtf32", .tolerance = 1e-4});
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "#\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->kernels[0].code.find("CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT"), std::string::npos);
  EXPECT_NE(p->kernels[0].code.find("exact fp32, at least as accurate"), std::string::npos);
}

}  // namespace
}  // namespace kforge::skills
