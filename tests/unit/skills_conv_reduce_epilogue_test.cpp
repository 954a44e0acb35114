// conv_reduce_epilogue: where it is legal (after conv_channels_last, a channel consumer reading the
// conv's result alone), the merged kernel, the code it leads to (one pass over the channels-last
// result: tile of 32 positions, statistics per position, the chains before and after), the cost
// model's view, and nvcc builds. The numerics are checked against torch on the GPU machine
// (tests/gpu/test_conv_channel_consumers.py and the level-2 problems the bench verifies).
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "skills/conv_epilogue.h"
#include "skills/conv_reduce_epilogue.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

// x [4, 16, 35, 35] -> conv (w [cout, 16, 3, 3], bias) -> c [4, cout, 33, 33] -> relu -> r ->
// `consumer` (its attrs, its output shape) -> t -> sigmoid -> y. `extra_output` makes r a graph output too.
std::string graph(int cout, const std::string& consumer, const std::string& attrs, const std::string& out_shape,
                  bool extra_output = false) {
  const std::string full = "[4, " + std::to_string(cout) + ", 33, 33]";
  return R"({"format": "kforge.graph/1", "name": "cr",
    "inputs": [{"id": "x", "name": "x", "shape": [4, 16, 35, 35], "dtype": "float32"}],
    "params": [{"id": "w", "path": "conv.weight", "kind": "parameter", "shape": [)" +
         std::to_string(cout) + R"(, 16, 3, 3], "dtype": "float32"},
               {"id": "b", "path": "conv.bias", "kind": "parameter", "shape": [)" +
         std::to_string(cout) + R"(], "dtype": "float32"}],
    "nodes": [
      {"id": "c", "op": "conv", "inputs": ["x", "w", "b"],
       "attrs": {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1},
       "shape": )" +
         full + R"(, "dtype": "float32"},
      {"id": "r", "op": "relu", "inputs": ["c"], "attrs": {}, "shape": )" +
         full + R"(, "dtype": "float32"},
      {"id": "t", "op": ")" +
         consumer + R"(", "inputs": ["r"], "attrs": )" + attrs + R"(, "shape": )" + out_shape +
         R"(, "dtype": "float32"},
      {"id": "y", "op": "sigmoid", "inputs": ["t"], "attrs": {}, "shape": )" +
         out_shape + R"(, "dtype": "float32"}],
    "outputs": ["y")" +
         (extra_output ? R"(, "r")" : "") + R"(]})";
}

// The default planner without conv_implicit_gemm, which would take these convs (16 x 3 x 3 = 144 <= 160)
// off cuDNN's channels-last path that this skill reads.
schedule::Schedule planned(const ir::Graph& g, double tolerance) {
  DefaultPlanOptions o;
  o.base.tolerance = tolerance;
  o.disabled.insert("conv_implicit_gemm");
  auto s = plan_default(g, o);
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.value();
}

int count_applied(const schedule::Schedule& s, const std::string& skill) {
  int n = 0;
  for (const auto& a : s.applied) n += a.rfind(skill + ":", 0) == 0 ? 1 : 0;
  return n;
}

TEST(ConvReduceEpilogue, SoftmaxOverChannelsAndTheChainsAroundItJoinTheChannelsLastConv) {
  ir::Graph g = graph_from_text(graph(24, "softmax", R"({"dim": 1})", "[4, 24, 33, 33]"));
  schedule::Schedule s = planned(g, 1e-2);
  // conv + relu (conv_epilogue), then the softmax, then the sigmoid: one kernel.
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(s.kernels[0].nodes.size(), 4u);
  EXPECT_TRUE(is_conv_reduce_epilogue(g, s.kernels[0]));
  EXPECT_FALSE(is_conv_epilogue(g, s.kernels[0]));
  EXPECT_EQ(count_applied(s, "conv_reduce_epilogue"), 2);
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->kernels.size(), 1u);
  const std::string& code = p->kernels[0].code;
  // No transpose back to NCHW: one pass over the channels-last result, 32 positions per block.
  EXPECT_FALSE(has(code, "_from_channels_last")) << code;
  EXPECT_TRUE(has(code, "constexpr long long C = 24LL, S = 1089LL, N = 4LL;")) << code;
  EXPECT_TRUE(has(code, "constexpr int P = 32, CP = 25;")) << code;
  // 24 channels: 16-byte loads; each element gets the bias and the relu (the chain before).
  EXPECT_TRUE(has(code, "const float4 v = reinterpret_cast<const float4*>(src)[e];")) << code;
  EXPECT_TRUE(has(code, "v = v + bias[c];")) << code;
  EXPECT_TRUE(has(code, "return k0_conv_pre((n * 24LL + c) * 1089LL + s, v, (n * 24LL + c) * 1089LL);")) << code;
  // Softmax: max (NaN sticks), sum of exp, then each channel's positions through the sigmoid.
  EXPECT_TRUE(has(code, "if (x > m || isnan(x)) m = x;")) << code;
  EXPECT_TRUE(has(code, "const float y = expf(tile[p * CP + c] - m) / z;")) << code;
  EXPECT_TRUE(has(code, "__stcs(out + i, k0_conv_post(i, y));")) << code;
  EXPECT_TRUE(has(code, "k0_conv_channels<<<dim3(35u, batches), 256, 0, ctx->stream>>>(ycl, ")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-softmax-channels-build");

  // The cost model: the conv's result written once and read once, the output written once (not the
  // NCHW copy, the softmax's read and write, and the sigmoid's).
  costmodel::DeviceCeilings d;
  const double conv_bytes = 4.0 * 24 * 33 * 33 * 4;
  const auto cost = costmodel::kernel_cost(g, s, s.kernels[0], d);
  const double io = 4.0 * (4 * 16 * 35 * 35 + 24 * 16 * 9 + 24);
  EXPECT_NEAR(cost.bytes, io + conv_bytes + 2 * conv_bytes + 2 * 4.0 * (4 * 16 * 35 * 35 + 24 * 16 * 9), 1.0);
}

TEST(ConvReduceEpilogue, MinOverChannelsWithTheScalarTileAndItsChain) {
  // 26 channels (not a multiple of 4): scalar loads; amin keeps dim 1; the sigmoid at the output index.
  ir::Graph g = graph_from_text(graph(26, "amin", R"({"dims": [1], "keepdim": true})", "[4, 1, 33, 33]"));
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(is_conv_reduce_epilogue(g, s.kernels[0]));
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_TRUE(has(code, "constexpr int P = 32, CP = 27;")) << code;
  EXPECT_TRUE(has(code, "tile[q * CP + c] = k0_conv_elem(n, c, s0 + q, src[e], bias);")) << code;
  EXPECT_TRUE(has(code, "if (x < m || isnan(x)) m = x;")) << code;
  EXPECT_TRUE(has(code, "const long long o = n * S + s0 + p;")) << code;
  EXPECT_TRUE(has(code, "out[o] = k0_conv_post(o, m);")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-amin-channels-build");
}

TEST(ConvReduceEpilogue, MeanDividesByTheChannelCount) {
  ir::Graph g = graph_from_text(graph(32, "mean", R"({"dims": [-3], "keepdim": false})", "[4, 33, 33]"));
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_TRUE(has(p->kernels[0].code, "m = m / (32.0f);")) << p->kernels[0].code;
}

TEST(ConvReduceEpilogue, GlobalAveragePoolReadsTheRowsWithThreadsOverChannelQuads) {
  // adaptive_avg_pool to 1x1 (a global average pool): 32 channels as 8 quads, 32 rows of positions per
  // block; the chunks' partials merged in a second kernel that divides by the 1089 positions.
  ir::Graph g = graph_from_text(graph(32, "adaptive_avg_pool", R"({"output_size": [1, 1]})", "[4, 32, 1, 1]"));
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(is_conv_reduce_epilogue(g, s.kernels[0]));
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_FALSE(has(code, "_from_channels_last")) << code;
  EXPECT_TRUE(has(code, "constexpr int Q = 8, R = 32;")) << code;
  EXPECT_TRUE(has(code, "const float4 v = *reinterpret_cast<const float4*>(ycl + (n * S + s) * C + c);")) << code;
  EXPECT_TRUE(has(code, "const float x = k0_conv_elem(n, c + 1, s, v.y, bias); float& m = a.y; m += x;")) << code;
  EXPECT_TRUE(has(code, "m = m / (1089.0f);")) << code;
  EXPECT_TRUE(has(code, "out[o] = k0_conv_post(o, m);")) << code;
  // 4 samples: one chunk each (positions < 2 x 1024), 1 block per sample.
  EXPECT_TRUE(has(code, "k0_conv_spatial<<<dim3(1u, 4u), 256, 0, ctx->stream>>>(ycl, ")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-global-pool-build");
  // A max over the spatial dims (kept): the same kernels with the NaN-propagating max.
  ir::Graph mx = graph_from_text(graph(32, "amax", R"({"dims": [2, 3], "keepdim": true})", "[4, 32, 1, 1]"));
  schedule::Schedule ms = planned(mx, 1e-2);
  ASSERT_EQ(ms.kernels.size(), 1u);
  auto mp = codegen::emit_program(mx, ms, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(mp.is_ok()) << mp.status().message();
  EXPECT_TRUE(has(mp->kernels[0].code, "_spatial_merge")) << mp->kernels[0].code;
  EXPECT_TRUE(has(mp->kernels[0].code, "if (x > m || isnan(x)) m = x;")) << mp->kernels[0].code;
  // 26 channels are not quads: the pool stays its own kernel.
  ir::Graph odd = graph_from_text(graph(26, "adaptive_avg_pool", R"({"output_size": [1, 1]})", "[4, 26, 1, 1]"));
  EXPECT_EQ(count_applied(planned(odd, 1e-2), "conv_reduce_epilogue"), 0);
}

TEST(ConvReduceEpilogue, GroupNormTakesItsStatisticsFromTheRowsAndNormalizesInTheTransposeBack) {
  // relu -> group_norm (8 groups of 4 channels) -> sigmoid: statistics kernels, then the transpose back
  // with the chain (relu, the norm, sigmoid) on each value.
  ir::Graph g = graph_from_text(graph(32, "group_norm", R"({"num_groups": 8, "eps": 1e-5})", "[4, 32, 33, 33]"));
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(is_conv_reduce_epilogue(g, s.kernels[0]));
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_TRUE(has(code, "k0_conv_norm_stats<<<dim3(1u, 4u), 256, 0, ctx->stream>>>(ycl, ")) << code;
  EXPECT_TRUE(has(code, "k0_conv_norm_merge<<<1u, 256, 0, ctx->stream>>>(p1, p2, ycl, ")) << code;
  EXPECT_TRUE(has(code, "const float2 st = kf_stats[n * 8LL + c / 4LL];")) << code;
  EXPECT_TRUE(has(code, "m2 += m2c + delta * delta * count * (double)S / total;")) << code;
  // The transpose back (positions 1089: not a multiple of 4, so the scalar-store tiles) calls the chain
  // with the tile's sample and channel.
  EXPECT_TRUE(has(code, "k0_conv_norm_chain(i, (float)((float)tile[row][s] + (float)bias[c]), n, c, kf_stats)"))
      << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-group-norm-build");
  // Instance norm: one group per channel.
  ir::Graph in =
      graph_from_text(graph(32, "instance_norm", R"({"use_input_stats": true, "eps": 1e-5})", "[4, 32, 33, 33]"));
  schedule::Schedule is = planned(in, 1e-2);
  ASSERT_EQ(is.kernels.size(), 1u);
  auto ip = codegen::emit_program(in, is, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(ip.is_ok()) << ip.status().message();
  EXPECT_TRUE(has(ip->kernels[0].code, "kf_stats[n * 32LL + c / 1LL]")) << ip->kernels[0].code;
}

TEST(ConvReduceEpilogue, MaxPoolOfNonOverlappingWindowsReadsEachWindowFromTheRows) {
  // relu -> max_pool 2x2 (33 -> 16: the last row and column dropped) -> sigmoid.
  ir::Graph g = graph_from_text(
      graph(24, "max_pool", R"({"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]})",
            "[4, 24, 16, 16]"));
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(is_conv_reduce_epilogue(g, s.kernels[0]));
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_TRUE(has(code, "constexpr int KH = 2, KW = 2, P = 32, CP = 25;")) << code;
  EXPECT_TRUE(has(code, "const long long s = (oh * KH + dy) * W + ow * KW + dx;")) << code;
  EXPECT_TRUE(has(code, "__stcs(out + o, k0_conv_post(o, y));")) << code;
  EXPECT_TRUE(has(code, "k0_conv_pool<<<dim3(1u, 16u, 4u), 256, 0, ctx->stream>>>(ycl, ")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-max-pool-build");
  // Overlapping windows (stride 1) are not this kernel's.
  ir::Graph ov = graph_from_text(
      graph(24, "max_pool", R"({"kernel_size": [2, 2], "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1]})",
            "[4, 24, 32, 32]"));
  EXPECT_EQ(count_applied(planned(ov, 1e-2), "conv_reduce_epilogue"), 0);
}

TEST(ConvReduceEpilogue, BatchNormMergesEachChannelsStatisticsOverTheSamples) {
  // Batch statistics per channel: the merge takes one thread per channel over the samples' partials.
  ir::Graph g = graph_from_text(
      graph(24, "batch_norm", R"({"training": true, "eps": 1e-5, "momentum": 0.1})", "[4, 24, 33, 33]"));
  ASSERT_EQ(consumer_kind(g, g.nodes()[2]), ConsumerKind::kNorm);
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(is_conv_reduce_epilogue(g, s.kernels[0]));
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_TRUE(has(code, "const long long c = t;")) << code;
  EXPECT_TRUE(has(code, "for (long long n = 0; n < N; ++n) {")) << code;
  EXPECT_TRUE(has(code, "const float2 st = kf_stats[c];")) << code;
  EXPECT_TRUE(has(code, "k0_conv_norm_merge<<<1u, 256, 0, ctx->stream>>>(p1, p2, ycl, ")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-batch-norm-build");
  // With running statistics (eval mode) the norm is pointwise: the conv's epilogue, not this kernel.
  ir::Graph eval = graph_from_text(graph(24, "batch_norm", R"({"training": false, "eps": 1e-5})", "[4, 24, 33, 33]"));
  EXPECT_EQ(consumer_kind(eval, eval.nodes()[2]), ConsumerKind::kNone);
}

// x [2, 8, 34, W + 2] -> conv (w [24, 8, 3, 3], bias) -> [2, 24, 32, W] -> relu -> layer_norm over
// `shape` (weight and bias) -> sigmoid -> y.
std::string layer_norm_graph(int w, const std::string& shape, const std::string& param_shape) {
  const std::string full = "[2, 24, 32, " + std::to_string(w) + "]";
  return R"({"format": "kforge.graph/1", "name": "ln",
    "inputs": [{"id": "x", "name": "x", "shape": [2, 8, 34, )" +
         std::to_string(w + 2) + R"(], "dtype": "float32"}],
    "params": [{"id": "w", "path": "conv.weight", "kind": "parameter", "shape": [24, 8, 3, 3], "dtype": "float32"},
               {"id": "b", "path": "conv.bias", "kind": "parameter", "shape": [24], "dtype": "float32"},
               {"id": "lw", "path": "norm.weight", "kind": "parameter", "shape": )" +
         param_shape + R"(, "dtype": "float32"},
               {"id": "lb", "path": "norm.bias", "kind": "parameter", "shape": )" +
         param_shape + R"(, "dtype": "float32"}],
    "nodes": [
      {"id": "c", "op": "conv", "inputs": ["x", "w", "b"],
       "attrs": {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1}, "shape": )" +
         full + R"(, "dtype": "float32"},
      {"id": "r", "op": "relu", "inputs": ["c"], "attrs": {}, "shape": )" +
         full + R"(, "dtype": "float32"},
      {"id": "t", "op": "layer_norm", "inputs": ["r", "lw", "lb"], "attrs": {"normalized_shape": )" +
         shape + R"(, "eps": 1e-5}, "shape": )" + full + R"(, "dtype": "float32"},
      {"id": "y", "op": "sigmoid", "inputs": ["t"], "attrs": {}, "shape": )" +
         full + R"(, "dtype": "float32"}],
    "outputs": ["y"]})";
}

TEST(ConvReduceEpilogue, LayerNormOverTheLastDimNormalizesWholeRowsInTheTransposeTile) {
  // W = 64: the tile's 128 positions hold two rows of each of its 32 channels; a warp takes 4 channels,
  // lane l positions l + 32 m: a row's sums over the 32 lanes, then over its two values of m.
  ir::Graph g = graph_from_text(layer_norm_graph(64, "[64]", "[64]"));
  ASSERT_EQ(consumer_kind(g, g.nodes()[2]), ConsumerKind::kRowNorm);
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(is_conv_reduce_epilogue(g, s.kernels[0]));
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_FALSE(has(code, "_from_channels_last")) << code;
  EXPECT_TRUE(has(code, "constexpr int W = 64, SEG = W < 32 ? W : 32;")) << code;
  // The relu before the norm, on each value as it leaves the tile; weight and bias by position in the
  // row; the sigmoid after, with the plane's first index.
  EXPECT_TRUE(has(code, "v[k] = c < C && p < np ? k0_conv_elem(n, c, s0 + p, tile[ch][p], bias) : 0.0f;")) << code;
  EXPECT_TRUE(has(code, "for (int o = SEG / 2; o > 0; o >>= 1) sq[k] += __shfl_xor_sync(0xffffffffu, sq[k], o);"))
      << code;
  EXPECT_TRUE(has(code, "for (int u = 0; u < W / 32; ++u) t[k] += mean[k / (W / 32) * (W / 32) + u];")) << code;
  EXPECT_TRUE(has(code, "float y = (v[k] - mean[k]) * (1.0f / sqrtf(sq[k] / (float)W + (9.99999975e-06f)));")) << code;
  EXPECT_TRUE(has(code, "y = y * lw[p % W];")) << code;
  EXPECT_TRUE(has(code, "y = y + lb[p % W];")) << code;
  EXPECT_TRUE(has(code, "y = k0_conv_post(i_row + s0 + p, y, i_row);")) << code;
  EXPECT_TRUE(has(code, "k0_conv_row_norm<<<dim3(16u, 1u, batches), 256, 0, ctx->stream>>>(ycl, ")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-row-layer-norm-build");
  // Rows shorter than a warp (W = 8) are this kernel's too (sums over groups of 8 lanes; this graph is too
  // small for the channels-last conv, tests/gpu/test_conv_channel_consumers.py builds one of 16).
  ir::Graph short_rows = graph_from_text(layer_norm_graph(8, "[8]", "[8]"));
  EXPECT_EQ(consumer_kind(short_rows, short_rows.nodes()[2]), ConsumerKind::kRowNorm);
  // Rows the tile cannot hold whole (W = 48), or a norm over two dims, are not this kernel's.
  ir::Graph odd = graph_from_text(layer_norm_graph(48, "[48]", "[48]"));
  EXPECT_EQ(consumer_kind(odd, odd.nodes()[2]), ConsumerKind::kNone);
  EXPECT_EQ(count_applied(planned(odd, 1e-2), "conv_reduce_epilogue"), 0);
  ir::Graph two = graph_from_text(layer_norm_graph(64, "[32, 64]", "[32, 64]"));
  EXPECT_EQ(consumer_kind(two, two.nodes()[2]), ConsumerKind::kNone);
}

TEST(ConvReduceEpilogue, ThreeDimPoolWalksDepthRowsAndColumnsOfEachWindow) {
  // conv3d [2, 16, 12, 12, 13] -> [2, 24, 10, 10, 11] -> avg_pool3d 2 -> [2, 24, 5, 5, 5] (the last column
  // dropped) -> sigmoid.
  ir::Graph g = graph_from_text(R"({"format": "kforge.graph/1", "name": "p3",
    "inputs": [{"id": "x", "name": "x", "shape": [2, 16, 12, 12, 13], "dtype": "float32"}],
    "params": [{"id": "w", "path": "conv.weight", "kind": "parameter", "shape": [24, 16, 3, 3, 3], "dtype": "float32"},
               {"id": "b", "path": "conv.bias", "kind": "parameter", "shape": [24], "dtype": "float32"}],
    "nodes": [
      {"id": "c", "op": "conv", "inputs": ["x", "w", "b"],
       "attrs": {"stride": [1, 1, 1], "padding": [0, 0, 0], "dilation": [1, 1, 1], "groups": 1},
       "shape": [2, 24, 10, 10, 11], "dtype": "float32"},
      {"id": "t", "op": "avg_pool", "inputs": ["c"],
       "attrs": {"kernel_size": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 0, 0]},
       "shape": [2, 24, 5, 5, 5], "dtype": "float32"},
      {"id": "y", "op": "sigmoid", "inputs": ["t"], "attrs": {}, "shape": [2, 24, 5, 5, 5], "dtype": "float32"}],
    "outputs": ["y"]})");
  ASSERT_EQ(consumer_kind(g, g.nodes()[1]), ConsumerKind::kPool);
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(is_conv_reduce_epilogue(g, s.kernels[0]));
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_TRUE(has(code, "constexpr int KD = 2, KH = 2, KW = 2, P = 32, CP = 25;")) << code;
  EXPECT_TRUE(has(code, "const long long s = ((od * KD + dz) * H + oh * KH + dy) * W + ow * KW + dx;")) << code;
  EXPECT_TRUE(has(code, "tile[q * CP + c] = m / (8.0f);")) << code;
  EXPECT_TRUE(has(code, "const long long o = ((n * C + c) * OD * OH + row) * OW + ow0 + q;")) << code;
  EXPECT_TRUE(has(code, "k0_conv_pool<<<dim3(1u, 25u, 2u), 256, 0, ctx->stream>>>(ycl, ")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-avg-pool-3d-build");
}

TEST(ConvReduceEpilogue, NotWhereTheResultIsNeededElsewhereOrTheConsumerIsNotOverChannels) {
  // kernelbench's 1e-4: no channels-last conv, so no site; the softmax keeps its own kernel.
  ir::Graph g = graph_from_text(graph(24, "softmax", R"({"dim": 1})", "[4, 24, 33, 33]"));
  schedule::Schedule strict = planned(g, 1e-4);
  EXPECT_GT(strict.kernels.size(), 1u);
  EXPECT_EQ(count_applied(strict, "conv_reduce_epilogue"), 0);
  EXPECT_TRUE(conv_reduce_epilogue_sites(g, strict).empty());
  // The relu's result is also a graph output: it must be stored, so the softmax stays apart.
  ir::Graph stored = graph_from_text(graph(24, "softmax", R"({"dim": 1})", "[4, 24, 33, 33]", true));
  schedule::Schedule s = planned(stored, 1e-2);
  EXPECT_EQ(count_applied(s, "conv_reduce_epilogue"), 0);
  // Softmax over a spatial dim, or a sum over channels and space: not a channel consumer.
  ir::Graph spatial = graph_from_text(graph(24, "softmax", R"({"dim": 3})", "[4, 24, 33, 33]"));
  EXPECT_EQ(count_applied(planned(spatial, 1e-2), "conv_reduce_epilogue"), 0);
  ir::Graph both = graph_from_text(graph(24, "sum", R"({"dims": [1, 2], "keepdim": false})", "[4, 33]"));
  EXPECT_EQ(count_applied(planned(both, 1e-2), "conv_reduce_epilogue"), 0);
  // More channels than the tile holds.
  ir::Graph wide = graph_from_text(graph(360, "amax", R"({"dims": [1], "keepdim": false})", "[4, 33, 33]"));
  EXPECT_EQ(count_applied(planned(wide, 1e-2), "conv_reduce_epilogue"), 0);
  // An illegal site is refused with the reason.
  schedule::Schedule one = schedule::plan_one_kernel_per_op(g, {.tolerance = 1e-2});
  auto bad = conv_reduce_epilogue(g, one, Site{{0, 2}, {}, ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(has(bad.status().message(), "channels-last")) << bad.status().message();
}

}  // namespace
}  // namespace kforge::skills
