// gemm_permuted_operands: the strides of a matmul operand read through permutes (kernels/gemm_operands.h),
// the skill's sites and refusals, the cuBLAS calls it leads to, the cost model's view, and an nvcc build.
// Numerics against torch: tests/gpu/test_gemm_permuted_operands.py on the GPU machine.
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "kernels/forms.h"
#include "kernels/gemm_operands.h"
#include "skills/gemm_permuted_operands.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

// A graph of float32 inputs and nodes: each node (id, op, inputs, attrs JSON, shape); the last is the output.
struct NodeSpec {
  std::string id, op;
  std::vector<std::string> inputs;
  std::string attrs;
  ir::Shape shape;
};
ir::Graph graph_of(const std::vector<std::pair<std::string, ir::Shape>>& inputs, const std::vector<NodeSpec>& nodes,
                   std::vector<std::string> outputs = {}) {
  Json j = {{"format", "kforge.graph/1"}, {"name", "t"}, {"params", Json::array()}};
  j["inputs"] = Json::array();
  for (const auto& [id, shape] : inputs) j["inputs"].push_back({{"id", id}, {"shape", shape}, {"dtype", "float32"}});
  j["nodes"] = Json::array();
  for (const auto& n : nodes) {
    j["nodes"].push_back({{"id", n.id},
                          {"op", n.op},
                          {"inputs", n.inputs},
                          {"attrs", Json::parse(n.attrs.empty() ? "{}" : n.attrs)},
                          {"shape", n.shape},
                          {"dtype", "float32"}});
  }
  if (outputs.empty()) outputs = {nodes.back().id};
  j["outputs"] = outputs;
  return graph_from_text(j.dump());
}

// level1/17's shape, smaller: A @ B.T with B stored [N, K].
ir::Graph transposed_b() {
  return graph_of({{"A", {64, 128}}, {"B", {96, 128}}}, {{"bt", "permute", {"B"}, R"({"dims": [1, 0]})", {128, 96}},
                                                         {"c", "matmul", {"A", "bt"}, "", {64, 96}}});
}

// Attention's scores: q and k stored [B, S, H, D], split into heads (permute 0, 2, 1, 3), k then transposed.
ir::Graph head_split_scores() {
  return graph_of({{"q", {2, 16, 4, 8}}, {"k", {2, 16, 4, 8}}},
                  {{"qh", "permute", {"q"}, R"({"dims": [0, 2, 1, 3]})", {2, 4, 16, 8}},
                   {"kh", "permute", {"k"}, R"({"dims": [0, 2, 1, 3]})", {2, 4, 16, 8}},
                   {"kt", "permute", {"kh"}, R"({"dims": [0, 1, 3, 2]})", {2, 4, 8, 16}},
                   {"s", "matmul", {"qh", "kt"}, "", {2, 4, 16, 16}}});
}

TEST(GemmOperands, StridesLayoutsAndBatchStrides) {
  ir::Graph g = head_split_scores();
  schedule::Kernel k;
  k.impl = schedule::Impl::kLibrary;
  k.strategy = schedule::Strategy::kCublasGemm;
  k.nodes = {0, 1, 2, 3};
  // q [B, S, H, D] strides [512, 32, 8, 1] read as [B, H, S, D]: [512, 8, 32, 1].
  const kernels::StridedOperand q = kernels::gemm_operand(g, k, 0);
  EXPECT_EQ(q.permutes, 1);
  EXPECT_EQ(q.strides, (std::vector<int64_t>{512, 8, 32, 1}));
  const kernels::MatrixLayout lq = kernels::matrix_layout(q);
  EXPECT_TRUE(lq.ok);
  EXPECT_FALSE(lq.transposed);
  EXPECT_EQ(lq.ld, 32);
  // k through two permutes, read as [B, H, D, S]: strides [512, 8, 1, 32], a transposed matrix of ld 32.
  const kernels::StridedOperand kt = kernels::gemm_operand(g, k, 1);
  EXPECT_EQ(kt.permutes, 2);
  EXPECT_EQ(kt.strides, (std::vector<int64_t>{512, 8, 1, 32}));
  const kernels::MatrixLayout lk = kernels::matrix_layout(kt);
  EXPECT_TRUE(lk.ok);
  EXPECT_TRUE(lk.transposed);
  EXPECT_EQ(lk.ld, 32);
  // The batch (B, H) has strides 512 and 8: no single stride (per-batch pointers).
  int64_t stride = -1;
  EXPECT_FALSE(kernels::uniform_batch_stride(q, {2, 4}, &stride));
  // A plain [4, 16, 8] operand: stride 128; broadcast against a batch it lacks: 0.
  kernels::StridedOperand plain{0, {4, 16, 8}, {128, 8, 1}, 0};
  EXPECT_TRUE(kernels::uniform_batch_stride(plain, {4}, &stride));
  EXPECT_EQ(stride, 128);
  kernels::StridedOperand shared{0, {16, 8}, {8, 1}, 0};
  EXPECT_TRUE(kernels::uniform_batch_stride(shared, {3, 4}, &stride));
  EXPECT_EQ(stride, 0);
  // Broadcast within the batch ([1, 4] against [3, 4]): no single stride.
  kernels::StridedOperand half{0, {1, 4, 16, 8}, {512, 128, 8, 1}, 0};
  EXPECT_FALSE(kernels::uniform_batch_stride(half, {3, 4}, &stride));
  // Neither matrix dim at stride 1: no layout.
  kernels::StridedOperand none{0, {8, 16}, {512, 32}, 1};
  EXPECT_FALSE(kernels::matrix_layout(none).ok);
  // Size-1 dims take any stride: a [1, 5] row read from a column of a [5, 1] tensor.
  kernels::StridedOperand row{0, {1, 5}, {1, 1}, 1};
  EXPECT_TRUE(kernels::matrix_layout(row).ok);
}

TEST(GemmPermutedOperands, TransposedBJoinsTheGemm) {
  ir::Graph g = transposed_b();
  auto first = schedule::plan_one_kernel_per_op(g, {});
  ASSERT_EQ(first.kernels.size(), 2u);
  auto sites = gemm_permuted_operands_sites(g, first);
  ASSERT_EQ(sites.size(), 1u);
  auto s = gemm_permuted_operands(g, first, sites[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_EQ(kernels::kernel_form(g, s->kernels[0]), kernels::KernelForm::kGemmPermutedOperands);
  EXPECT_TRUE(gemm_permuted_operands_sites(g, s.value()).empty());
  // The cost model: the permute's copy (a write and a read of B) and its launch are gone.
  EXPECT_LT(costmodel::program_cost(g, s.value()).seconds, costmodel::program_cost(g, first).seconds);
  // The default planner takes it, and the GEMM reads B [N, K] with CUBLAS_OP_T (cuBLAS's first operand).
  auto planned = plan_default(g, {});
  ASSERT_TRUE(planned.is_ok());
  ASSERT_EQ(planned->kernels.size(), 1u);
  auto p = codegen::emit_program(g, planned.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_NE(code.find("cublasGemmEx_64(kf_h, CUBLAS_OP_T, CUBLAS_OP_N, 96LL, 64LL, 128LL"), std::string::npos) << code;
  EXPECT_EQ(code.find("__global__"), std::string::npos) << code;
}

TEST(GemmPermutedOperands, HeadSplitsAndTransposeChainsFoldIntoOneBatchedGemm) {
  ir::Graph g = head_split_scores();
  DefaultPlanOptions loose;  // cuda-agent's 1e-2
  loose.base.tolerance = 1e-2;
  auto planned = plan_default(g, loose);
  ASSERT_TRUE(planned.is_ok());
  ASSERT_EQ(planned->kernels.size(), 1u) << "every permute read in place";
  // Under kernelbench's 1e-4 the per-batch pointers the head splits need would keep 3xTF32 off the GEMM: they stay
  // copies. k^T of the copied k folds (batch strides 128 and 512: one stride).
  DefaultPlanOptions strict;
  strict.base.tolerance = 1e-4;
  auto strict_plan = plan_default(g, strict);
  ASSERT_TRUE(strict_plan.is_ok());
  EXPECT_EQ(strict_plan->kernels.size(), 3u);
  EXPECT_EQ(kernels::kernel_form(g, planned->kernels[0]), kernels::KernelForm::kGemmPermutedOperands);
  auto p = codegen::emit_program(g, planned.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  // The (B, H) batch has strides 512 and 8 in both stored tensors: per-batch pointers, ld 32.
  EXPECT_NE(code.find("cublasGemmBatchedEx_64(kf_h, CUBLAS_OP_T, CUBLAS_OP_N, 16LL, 16LL, 8LL"), std::string::npos)
      << code;
  EXPECT_NE(code.find("(i / 1LL % 4LL) * 8LL + (i / 4LL % 2LL) * 512LL"), std::string::npos) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "gemm-permuted-operands-build");
}

TEST(GemmPermutedOperands, Refusals) {
  // The innermost dim moved into the batch: neither matrix dim is contiguous.
  ir::Graph inner = graph_of(
      {{"x", {8, 16, 32}}, {"w", {16, 5}}},
      {{"p", "permute", {"x"}, R"({"dims": [2, 0, 1]})", {32, 8, 16}}, {"y", "matmul", {"p", "w"}, "", {32, 8, 5}}});
  EXPECT_TRUE(gemm_permuted_operands_sites(inner, schedule::plan_one_kernel_per_op(inner, {})).empty());
  // The permute's result is also a graph output: it must be stored.
  ir::Graph kept =
      graph_of({{"A", {64, 128}}, {"B", {96, 128}}},
               {{"bt", "permute", {"B"}, R"({"dims": [1, 0]})", {128, 96}}, {"c", "matmul", {"A", "bt"}, "", {64, 96}}},
               {"c", "bt"});
  EXPECT_TRUE(gemm_permuted_operands_sites(kept, schedule::plan_one_kernel_per_op(kept, {})).empty());
  // Read by something else too.
  ir::Graph shared = graph_of({{"A", {64, 128}}, {"B", {96, 128}}},
                              {{"bt", "permute", {"B"}, R"({"dims": [1, 0]})", {128, 96}},
                               {"e", "exp", {"bt"}, "", {128, 96}},
                               {"c", "matmul", {"A", "bt"}, "", {64, 96}}},
                              {"c", "e"});
  auto first = schedule::plan_one_kernel_per_op(shared, {});
  EXPECT_TRUE(gemm_permuted_operands_sites(shared, first).empty());
  // A site that is not one: refused with a message.
  ir::Graph g = transposed_b();
  auto plain = schedule::plan_one_kernel_per_op(g, {});
  Site wrong{{1, 0}, {}, "backwards"};
  auto r = gemm_permuted_operands(g, plain, wrong);
  EXPECT_FALSE(r.is_ok());
}

}  // namespace
}  // namespace kforge::skills
