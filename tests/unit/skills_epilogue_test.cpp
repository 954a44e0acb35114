// conv_epilogue, linear_epilogue and batch_norm_inference: where they are legal, what they do to the schedule, the
// code they lead to (one pass after the convolution: bias, then the chain), the cost model's view,
// and nvcc builds of the result. Their numerics are checked against torch on the GPU machine
// (tests/gpu, and every level-2 problem the bench verifies).
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "sandbox/build.h"
#include "sandbox/toolchain.h"
#include "skills/batch_norm_inference.h"
#include "skills/conv_epilogue.h"
#include "skills/linear_epilogue.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

// x [2, 4, 10, 10] -> conv (w [8, 4, 3, 3], bias) -> c [2, 8, 8, 8] -> batch_norm (eval or train) ->
// relu -> add p [8, 1, 1] -> y. `conv_also_returned` returns c too; `training` makes the BN compute
// batch statistics.
std::string conv_graph(bool conv_also_returned, bool training) {
  return std::string(R"({"format": "kforge.graph/1", "name": "conv_chain",
    "inputs": [{"id": "x", "name": "x", "shape": [2, 4, 10, 10], "dtype": "float32"}],
    "params": [{"id": "w", "path": "conv.weight", "kind": "parameter", "shape": [8, 4, 3, 3], "dtype": "float32"},
               {"id": "b", "path": "conv.bias", "kind": "parameter", "shape": [8], "dtype": "float32"},
               {"id": "g", "path": "bn.weight", "kind": "parameter", "shape": [8], "dtype": "float32"},
               {"id": "be", "path": "bn.bias", "kind": "parameter", "shape": [8], "dtype": "float32"},
               {"id": "rm", "path": "bn.running_mean", "kind": "buffer", "shape": [8], "dtype": "float32"},
               {"id": "rv", "path": "bn.running_var", "kind": "buffer", "shape": [8], "dtype": "float32"},
               {"id": "p", "path": "bias", "kind": "parameter", "shape": [8, 1, 1], "dtype": "float32"}],
    "nodes": [
      {"id": "c", "op": "conv", "inputs": ["x", "w", "b"],
       "attrs": {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1},
       "shape": [2, 8, 8, 8], "dtype": "float32"},
      {"id": "n", "op": "batch_norm", "inputs": ["c", "g", "be", "rm", "rv"],
       "attrs": {"training": )") +
         (training ? "true" : "false") + R"(, "momentum": 0.1, "eps": 1e-5}, "shape": [2, 8, 8, 8], "dtype": "float32"},
      {"id": "r", "op": "relu", "inputs": ["n"], "attrs": {}, "shape": [2, 8, 8, 8], "dtype": "float32"},
      {"id": "y", "op": "add", "inputs": ["r", "p"], "attrs": {"scalar": null, "reverse": false},
       "shape": [2, 8, 8, 8], "dtype": "float32"}],
    "outputs": ["y")" +
         (conv_also_returned ? ", \"c\"" : "") + "]}";
}

schedule::Schedule first_schedule(const ir::Graph& g) {
  return schedule::plan_one_kernel_per_op(g, {});
}

TEST(BatchNormInference, OnlyRunningStatisticsAreASite) {
  ir::Graph eval = graph_from_text(conv_graph(false, false));
  auto sites = batch_norm_inference_sites(eval, first_schedule(eval));
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, std::vector<int>{1});
  auto s = batch_norm_inference(eval, first_schedule(eval), sites[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->kernels[1].strategy, schedule::Strategy::kElementwise);
  ir::Graph train = graph_from_text(conv_graph(false, true));
  EXPECT_TRUE(batch_norm_inference_sites(train, first_schedule(train)).empty());
  auto bad = batch_norm_inference(train, first_schedule(train), Site{{1}, {}, ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("training mode"), std::string::npos) << bad.status().message();
}

TEST(BatchNormInference, EmitsTorchsInferenceTransformPerChannel) {
  ir::Graph g = graph_from_text(conv_graph(false, false));
  auto s = batch_norm_inference(g, first_schedule(g), batch_norm_inference_sites(g, first_schedule(g))[0]);
  ASSERT_TRUE(s.is_ok());
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[1].code;
  // Channel of index i over [2, 8, 8, 8]: (i / 64) % 8, for weight (value 3), bias (4), mean (5) and
  // variance (6) alike; the input c is value 8.
  EXPECT_TRUE(has(code,
                  "const T x = T(in8[i]); const T invstd = T(1) / sqrt(T(in6[(((unsigned)(i) / 64u) % 8u)]) + "
                  "T(9.99999975e-06f));"))
      << code;
  EXPECT_TRUE(has(code,
                  "(((x - T(in5[(((unsigned)(i) / 64u) % 8u)])) * invstd) * T(in3[(((unsigned)(i) / 64u) % 8u)])) + "
                  "T(in4[(((unsigned)(i) / 64u) % 8u)])"))
      << code;
}

TEST(ConvEpilogue, SitesAndLegality) {
  ir::Graph g = graph_from_text(conv_graph(false, false));
  // One kernel per op: the BN is a norm kernel, so the conv's consumer is no chain yet.
  EXPECT_TRUE(conv_epilogue_sites(g, first_schedule(g)).empty());
  auto planned = plan_default(g);
  ASSERT_TRUE(planned.is_ok()) << planned.status().message();
  // batch_norm_inference, fuse_elementwise (BN, relu, add), conv_epilogue: one kernel.
  ASSERT_EQ(planned->kernels.size(), 1u);
  const auto& k = planned->kernels[0];
  EXPECT_EQ(k.strategy, schedule::Strategy::kCudnnConv);
  EXPECT_EQ(k.nodes.size(), 4u);
  EXPECT_TRUE(is_conv_epilogue(g, k));
  EXPECT_EQ(planned->applied.back().rfind("conv_epilogue: ", 0), 0u) << planned->applied.back();
  // A conv result that is also returned must be stored: no epilogue.
  ir::Graph shared = graph_from_text(conv_graph(true, false));
  auto s2 = plan_default(shared);
  ASSERT_TRUE(s2.is_ok());
  EXPECT_EQ(s2->kernels.size(), 2u);
  for (const auto& kk : s2->kernels) EXPECT_FALSE(is_conv_epilogue(shared, kk));
  auto bad = conv_epilogue(shared, s2.value(), Site{{0, 1}, {}, ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("graph output"), std::string::npos) << bad.status().message();
  // Training-mode BN stays a norm kernel; the chain after it is not the conv's consumer.
  ir::Graph train = graph_from_text(conv_graph(false, true));
  auto s3 = plan_default(train);
  ASSERT_TRUE(s3.is_ok());
  for (const auto& kk : s3->kernels) EXPECT_FALSE(is_conv_epilogue(train, kk));
  // Ablation: --disable-skill conv_epilogue keeps the conv alone.
  auto off = plan_default(g, {.disabled = {"conv_epilogue"}});
  ASSERT_TRUE(off.is_ok());
  EXPECT_EQ(off->kernels.size(), 2u);
}

TEST(ConvEpilogue, RefusesABroadcastChainAndAWrongOrder) {
  // conv [2, 8, 8, 8] -> add q [3, 2, 8, 8, 8] (the chain's result is larger than the conv's).
  ir::Graph g = graph_from_text(R"({"format": "kforge.graph/1", "name": "bc",
    "inputs": [{"id": "x", "name": "x", "shape": [2, 4, 10, 10], "dtype": "float32"},
               {"id": "q", "name": "q", "shape": [3, 2, 8, 8, 8], "dtype": "float32"}],
    "params": [{"id": "w", "path": "conv.weight", "kind": "parameter", "shape": [8, 4, 3, 3], "dtype": "float32"}],
    "nodes": [
      {"id": "c", "op": "conv", "inputs": ["x", "w", null],
       "attrs": {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1},
       "shape": [2, 8, 8, 8], "dtype": "float32"},
      {"id": "y", "op": "add", "inputs": ["c", "q"], "attrs": {"scalar": null, "reverse": false},
       "shape": [3, 2, 8, 8, 8], "dtype": "float32"}],
    "outputs": ["y"]})");
  auto s = first_schedule(g);
  EXPECT_TRUE(conv_epilogue_sites(g, s).empty());
  auto bad = conv_epilogue(g, s, Site{{0, 1}, {}, ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("the library writes into it"), std::string::npos);
  EXPECT_FALSE(conv_epilogue(g, s, Site{{1, 0}, {}, ""}).is_ok());
}

TEST(ConvEpilogue, OnePassAfterTheConvolutionAndItBuilds) {
  ir::Graph g = graph_from_text(conv_graph(false, false));
  auto s = plan_default(g);
  ASSERT_TRUE(s.is_ok());
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->kernels.size(), 1u);
  const auto& k = p->kernels[0];
  const std::string& code = k.code;
  // The convolution runs without its bias pass, into the output y (value 11: 8 inputs and params
  // then c, n, r, y; the kernel's operand slot 2 after x and w), and the epilogue starts from the conv's
  // value plus the bias of its channel (value 2, slot 3).
  ASSERT_GE(k.operands.size(), 4u);
  EXPECT_EQ(std::vector<ir::ValueIndex>(k.operands.begin(), k.operands.begin() + 4),
            (std::vector<ir::ValueIndex>{0, 1, 11, 2}));
  EXPECT_FALSE(has(code, "k0_conv_conv_bias<<<")) << code;
  EXPECT_TRUE(has(code, "const int rc = k0_conv_conv(ctx, bufs);")) << code;
  EXPECT_TRUE(has(code,
                  "kf_cudnn_conv(ctx, &kConv, ((const float*)bufs[0]), ((const float*)bufs[1]), "
                  "((float*)bufs[2]));"))
      << code;
  EXPECT_TRUE(has(code, "const float r8 = (float)((float)out[i] + (float)conv_bias[(i / 64LL) % 8LL]);")) << code;
  EXPECT_TRUE(has(code, "k0_conv_epilogue<<<kf_grid(1024LL, 256), 256, 0, ctx->stream>>>(")) << code;
  EXPECT_TRUE(has(code, "((const float*)bufs[3]), ((float*)bufs[2]));")) << code;
  EXPECT_EQ(k.launches, 2);
  // The intermediates never touch memory.
  for (const char* v : {"c", "n", "r"})
    EXPECT_EQ(p->buffers.slots[static_cast<size_t>(g.find(v))].storage, codegen::Storage::kRegister) << v;
  // The cost model counts the conv's write and the epilogue's read and write of y.
  auto cost = costmodel::program_cost(g, s.value());
  const double y_bytes = 2 * 8 * 8 * 8 * 4.0;
  const double reads = (2 * 4 * 10 * 10 + 8 * 4 * 9 + 8 * 6) * 4.0;
  EXPECT_DOUBLE_EQ(cost.kernels[0].bytes, reads + 3 * y_bytes);
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-epilogue-build");
}

// x [4, 8] -> linear (w [16, 8], bias) -> h [4, 16] -> relu -> y; `h_returned` returns h too.
std::string linear_graph(bool h_returned) {
  return std::string(R"({"format": "kforge.graph/1", "name": "lin",
    "inputs": [{"id": "x", "name": "x", "shape": [4, 8], "dtype": "float32"}],
    "params": [{"id": "w", "path": "fc.weight", "kind": "parameter", "shape": [16, 8], "dtype": "float32"},
               {"id": "b", "path": "fc.bias", "kind": "parameter", "shape": [16], "dtype": "float32"}],
    "nodes": [{"id": "h", "op": "linear", "inputs": ["x", "w", "b"], "attrs": {}, "shape": [4, 16], "dtype": "float32"},
              {"id": "y", "op": "relu", "inputs": ["h"], "attrs": {}, "shape": [4, 16], "dtype": "float32"}],
    "outputs": ["y")") +
         (h_returned ? ", \"h\"" : "") + "]}";
}

TEST(LinearEpilogue, TheGemmWritesTheOutputAndOnePassAddsBiasAndChain) {
  ir::Graph g = graph_from_text(linear_graph(false));
  auto sites = linear_epilogue_sites(g, first_schedule(g));
  ASSERT_EQ(sites.size(), 1u);
  auto s = plan_default(g);
  ASSERT_TRUE(s.is_ok());
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_TRUE(is_linear_epilogue(g, s->kernels[0]));
  EXPECT_FALSE(is_conv_epilogue(g, s->kernels[0]));
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const auto& k = p->kernels[0];
  // No bias broadcast; the GEMM does not accumulate (beta 0) and writes y (value 4).
  EXPECT_FALSE(has(k.code, "_bias<<<")) << k.code;
  EXPECT_TRUE(has(k.code, "const float kf_beta = (float)(0);")) << k.code;
  EXPECT_TRUE(has(k.code, "const int rc = k0_linear_gemm(ctx, bufs);")) << k.code;
  EXPECT_TRUE(has(k.code, "const float r3 = (float)((float)out[i] + (float)linear_bias[i % 16LL]);")) << k.code;
  EXPECT_EQ(k.launches, 2);
  EXPECT_EQ(p->buffers.slots[static_cast<size_t>(g.find("h"))].storage, codegen::Storage::kRegister);
  // A returned h is stored: no epilogue, and the message says why.
  ir::Graph returned = graph_from_text(linear_graph(true));
  EXPECT_TRUE(linear_epilogue_sites(returned, first_schedule(returned)).empty());
  auto bad = linear_epilogue(returned, first_schedule(returned), Site{{0, 1}, {}, ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("graph output"), std::string::npos) << bad.status().message();
  kforge::testing::expect_builds_with_nvcc(p.value(), "linear-epilogue-build");
}

}  // namespace
}  // namespace kforge::skills
