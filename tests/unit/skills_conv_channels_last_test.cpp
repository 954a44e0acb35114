// The conv skills. conv_engine_search: where it is legal, the knob and the KfCudnnConv field it sets,
// and an nvcc build (the engines are timed on the GPU machine: tests/gpu/test_conv_channels_last.py).
// conv_channels_last: where it is legal and where it pays, the knob it sets, the code it leads to
// (input and weight transposed into scratch, cuDNN on channels-last tensors, one tiled pass back that
// adds the bias and computes the epilogue), the cost model's view, and nvcc builds. The numerics are
// checked against torch on the GPU machine (tests/gpu/test_conv_channels_last.py and every level-2
// conv problem the bench verifies).
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "skills/conv_channels_last.h"
#include "skills/conv_engine_search.h"
#include "skills/conv_epilogue.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

// x [n, cin, side...] (`sp` spatial dims) -> conv (w [64, cin / groups, k...], bias?, groups) -> c
// [n, 64, side - k + 1...] -> relu -> y (`relu` false: c is the output); transposed: w [cin, 64 /
// groups, k...], c [n, 64, side + k - 1...]. 2-d: n 8, side 32; 3-d: n 4, side 12.
std::string conv_graph(int cin, bool bias, int groups, bool relu, bool transpose = false, int k = 3, int sp = 2) {
  const int n = sp == 3 ? 4 : 8, side = sp == 3 ? 12 : 32;
  auto dims = [&](int lead0, int lead1, int each) {
    std::string d = "[" + std::to_string(lead0) + ", " + std::to_string(lead1);
    for (int i = 0; i < sp; ++i) d += ", " + std::to_string(each);
    return d + "]";
  };
  auto ones = [&](int v) {
    std::string d = "[" + std::to_string(v);
    for (int i = 1; i < sp; ++i) d += ", " + std::to_string(v);
    return d + "]";
  };
  const std::string b =
      bias ? R"(, {"id": "b", "path": "conv.bias", "kind": "parameter", "shape": [64], "dtype": "float32"})" : "";
  const std::string w_shape = transpose ? dims(cin, 64 / groups, k) : dims(64, cin / groups, k);
  const std::string op = transpose ? "conv_transpose" : "conv";
  const std::string out = dims(n, 64, transpose ? side + k - 1 : side - k + 1);
  const std::string extra = transpose ? R"(, "output_padding": )" + ones(0) : "";
  return R"({"format": "kforge.graph/1", "name": "cl",
    "inputs": [{"id": "x", "name": "x", "shape": )" +
         dims(n, cin, side) + R"(, "dtype": "float32"}],
    "params": [{"id": "w", "path": "conv.weight", "kind": "parameter", "shape": )" +
         w_shape + R"(, "dtype": "float32"})" + b + R"(],
    "nodes": [
      {"id": "c", "op": ")" +
         op + R"(", "inputs": ["x", "w")" + (bias ? ", \"b\"" : "") + R"(],
       "attrs": {"stride": )" +
         ones(1) + R"(, "padding": )" + ones(0) + R"(, "dilation": )" + ones(1) + R"(, "groups": )" +
         std::to_string(groups) + extra + R"(},
       "shape": )" +
         out + R"(, "dtype": "float32"})" +
         (relu ? R"(,
      {"id": "y", "op": "relu", "inputs": ["c"], "attrs": {}, "shape": )" +
                     out + R"(, "dtype": "float32"}],
    "outputs": ["y"]})"
               : R"(],
    "outputs": ["c"]})");
}

std::string conv3d_graph(int cin, bool bias, bool relu, bool transpose = false, int k = 3) {
  return conv_graph(cin, bias, 1, relu, transpose, k, 3);
}

schedule::Schedule first(const ir::Graph& g, double tolerance) {
  schedule::PlanOptions o;
  o.tolerance = tolerance;
  return schedule::plan_one_kernel_per_op(g, o);
}

TEST(ConvChannelsLast, OnlyWhereTheToleranceAllowsAnotherEngineAndItPays) {
  ir::Graph g = graph_from_text(conv3d_graph(32, true, true));
  // 2 * 4*64*10^3 * 864 FLOPs against 2 * (input + weight) bytes: ~200 FLOPs per byte.
  auto sites = conv_channels_last_sites(g, first(g, 1e-2));
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, std::vector<int>{0});
  // kernelbench's 1e-4 does not absorb another TF32 engine's rounding.
  EXPECT_TRUE(conv_channels_last_sites(g, first(g, 1e-4)).empty());
  auto bad = conv_channels_last(g, first(g, 1e-4), Site{{0}, {}, ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(has(bad.status().message(), "tolerance")) << bad.status().message();
  // A 1x1x1 conv: 16 FLOPs per byte of transposes, not worth them.
  ir::Graph pointwise = graph_from_text(conv3d_graph(32, true, true, false, 1));
  EXPECT_TRUE(conv_channels_last_sites(pointwise, first(pointwise, 1e-2)).empty());
  // 2-d convs too (~118 FLOPs per byte here).
  ir::Graph two_d = graph_from_text(conv_graph(64, true, 1, true));
  EXPECT_EQ(conv_channels_last_sites(two_d, first(two_d, 1e-2)).size(), 1u);
  // Grouped convs stay NCHW; a relu kernel is not a conv.
  ir::Graph grouped = graph_from_text(conv_graph(32, true, 2, true, false, 3, 3));
  EXPECT_TRUE(conv_channels_last_sites(grouped, first(grouped, 1e-2)).empty());
  EXPECT_FALSE(conv_channels_last(g, first(g, 1e-2), Site{{1}, {}, ""}).is_ok());
  // Once applied, no longer a site; applying again is refused.
  auto s = conv_channels_last(g, first(g, 1e-2), sites[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->kernels[0].knob(schedule::Knob::kChannelsLast, 0), 1);
  EXPECT_TRUE(conv_channels_last_sites(g, s.value()).empty());
  EXPECT_FALSE(conv_channels_last(g, s.value(), sites[0]).is_ok());
}

TEST(ConvChannelsLast, WithoutBiasOrEpilogueTheOutputTransposeMustPayToo) {
  // A 2x2x2 window, no bias, no chain: the pass back is extra (2 * 4*64*11^3*4 bytes more), ~38 FLOPs
  // per byte.
  ir::Graph g = graph_from_text(conv3d_graph(32, false, false, false, 2));
  EXPECT_TRUE(conv_channels_last_sites(g, first(g, 1e-2)).empty());
  // With a bias, the pass back replaces the bias pass: ~91 FLOPs per byte of input and weight.
  ir::Graph b = graph_from_text(conv3d_graph(32, true, false, false, 2));
  EXPECT_EQ(conv_channels_last_sites(b, first(b, 1e-2)).size(), 1u);
}

TEST(ConvChannelsLast, APerChannelOperandOfTheChainIsReadOncePerPlane) {
  // level2/1's shape: conv, relu, then + a (C, 1, 1) parameter. The chain reads the parameter at the
  // plane's first index (i_row), the same address for every value a thread computes of its plane, and
  // the pass back computes its values before it stores them, unguarded at clamped positions.
  ir::Graph g = graph_from_text(R"({"format": "kforge.graph/1", "name": "cl",
    "inputs": [{"id": "x", "name": "x", "shape": [8, 64, 32, 32], "dtype": "float32"}],
    "params": [{"id": "w", "path": "conv.weight", "kind": "parameter", "shape": [64, 64, 3, 3], "dtype": "float32"},
               {"id": "b", "path": "conv.bias", "kind": "parameter", "shape": [64], "dtype": "float32"},
               {"id": "p", "path": "bias", "kind": "parameter", "shape": [64, 1, 1], "dtype": "float32"}],
    "nodes": [
      {"id": "c", "op": "conv", "inputs": ["x", "w", "b"],
       "attrs": {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1},
       "shape": [8, 64, 30, 30], "dtype": "float32"},
      {"id": "r", "op": "relu", "inputs": ["c"], "attrs": {}, "shape": [8, 64, 30, 30], "dtype": "float32"},
      {"id": "y", "op": "add", "inputs": ["r", "p"], "attrs": {}, "shape": [8, 64, 30, 30], "dtype": "float32"}],
    "outputs": ["y"]})");
  DefaultPlanOptions o;
  o.base.tolerance = 1e-2;
  auto s = plan_default(g, o);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_EQ(s->kernels[0].knob(schedule::Knob::kChannelsLast, 0), 1);
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_TRUE(has(code, "long long i_row = -1) {\n    if (i_row < 0) i_row = i / 900LL * 900LL;")) << code;
  EXPECT_TRUE(has(code, "in3[((((unsigned)(i_row) / 900u) % 64u) * 1u)]")) << code;
  EXPECT_FALSE(has(code, "in3[((((unsigned)(i) /")) << code;
  EXPECT_TRUE(has(code, "const long long c = min(c0 + row, C - 1);")) << code;
  EXPECT_TRUE(has(code, "const int s = (int)min((long long)(32 * k + 4 * chunk), S - 4 - s0);")) << code;
  EXPECT_TRUE(has(code, "if (c0 + row < C && s0 + s < S)")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-channel-operand-build");
}

TEST(ConvChannelsLast, TheEpilogueRunsInThePassBackAndItBuilds) {
  // A 2-d conv with a relu: the default planner runs it channels-last with the relu in the pass back.
  ir::Graph g = graph_from_text(conv_graph(64, true, 1, true));
  DefaultPlanOptions o;
  o.base.tolerance = 1e-2;
  auto s = plan_default(g, o);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_TRUE(is_conv_epilogue(g, s->kernels[0]));
  EXPECT_EQ(s->kernels[0].knob(schedule::Knob::kChannelsLast, 0), 1);
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->kernels.size(), 1u);
  const std::string& code = p->kernels[0].code;
  // cuDNN sees channels-last tensors; input and weight are transposed into scratch first.
  EXPECT_TRUE(has(code, "    1,  // channels_last\n")) << code;
  EXPECT_TRUE(has(code, "kf_launch_to_channels_last<float>(((const float*)bufs[0]), xcl, 64LL, 1024LL, 8LL,")) << code;
  EXPECT_TRUE(has(code, "kf_launch_to_channels_last<float>(((const float*)bufs[1]), wcl, 64LL, 9LL, 64LL,")) << code;
  EXPECT_TRUE(has(code, "kf_cudnn_conv(&conv_ctx, &kConv, xcl, wcl, ycl);")) << code;
  // One pass back: the bias of the channel, then the relu, written at the NCHW index; no other pass.
  EXPECT_TRUE(has(code, "constexpr long long C = 64LL, S = 900LL, N = 8LL;")) << code;
  // 64 channels, 900 positions: the 16-byte tiles (and the scalar ones for a misaligned output).
  // The chain gets the plane's first index too (its per-channel operands are read there).
  EXPECT_TRUE(
      has(code, "vo[l] = k0_conv_chain(i, (float)((float)tile[c - c0][s + l] + (float)bias[c]), (n * C + c) * S);"))
      << code;
  EXPECT_TRUE(
      has(code, "out[i] = k0_conv_chain(i, (float)((float)tile[threadIdx.x][j] + (float)bias[c]), (n * C + c) * S);"))
      << code;
  EXPECT_TRUE(has(code, "k0_conv_conv_from_channels_last_x4<<<dim3(8u, 2u, batches), 256")) << code;
  EXPECT_FALSE(has(code, "_epilogue<<<")) << code;
  EXPECT_FALSE(has(code, "_bias<<<")) << code;
  // Scratch: input, weight and output copies (each rounded to 256 bytes), then cuDNN's workspace.
  const size_t copies = 8 * 64 * 1024 * 4 + 147456 + 8 * 64 * 900 * 4;
  EXPECT_TRUE(has(code, "ctx->workspace_bytes < " + std::to_string(copies) + "ULL")) << code;
  EXPECT_GE(p->buffers.workspace_bytes, copies + (size_t{256} << 20));
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-channels-last-build");
}

TEST(ConvChannelsLast, TransposedConvBuildsAndTheCostModelPrefersIt) {
  ir::Graph g = graph_from_text(conv3d_graph(32, true, true, true));
  DefaultPlanOptions o;
  o.base.tolerance = 1e-2;
  auto with = plan_default(g, o);
  ASSERT_TRUE(with.is_ok()) << with.status().message();
  ASSERT_EQ(with->kernels[0].knob(schedule::Knob::kChannelsLast, 0), 1);
  o.disabled = {"conv_channels_last"};
  auto without = plan_default(g, o);
  ASSERT_TRUE(without.is_ok());
  EXPECT_EQ(without->kernels[0].knob(schedule::Knob::kChannelsLast, 0), 0);
  // NCHW engines at 0.30 of the TF32 peak, channels-last ones at 0.45; the transposes add 2 * (input +
  // weight) bytes, and the model predicts the gain.
  const auto c_with = costmodel::program_cost(g, with.value());
  const auto c_without = costmodel::program_cost(g, without.value());
  EXPECT_DOUBLE_EQ(c_with.kernels[0].bytes - c_without.kernels[0].bytes, 2.0 * (4 * 32 * 1728 * 4 + 221184));
  EXPECT_DOUBLE_EQ(c_with.kernels[0].flops, c_without.kernels[0].flops);
  EXPECT_LT(c_with.seconds, c_without.seconds);
  auto p = codegen::emit_program(g, with.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_TRUE(has(p->kernels[0].code, "    1,  // backward_data")) << p->kernels[0].code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-transpose-channels-last-build");
}

TEST(ConvChannelsLast, TheKnobIsCheckedByTheEmitter) {
  ir::Graph g = graph_from_text(conv_graph(64, true, 1, false));
  auto s = first(g, 1e-2);
  s.kernels[0].knobs[schedule::Knob::kChannelsLast] = 2;
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_FALSE(p.is_ok());
  EXPECT_TRUE(has(p.status().message(), "channels_last must be 0 or 1")) << p.status().message();
}

TEST(ConvEngineSearch, EveryCudnnConvUnderALooseToleranceAndTheFieldItSets) {
  ir::Graph g = graph_from_text(conv_graph(64, true, 1, true));
  auto sites = conv_engine_search_sites(g, first(g, 1e-2));
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, std::vector<int>{0});
  // kernelbench's 1e-4 keeps torch's engine (another one rounds differently).
  EXPECT_TRUE(conv_engine_search_sites(g, first(g, 1e-4)).empty());
  auto refused = conv_engine_search(g, first(g, 1e-4), Site{{0}, {}, ""});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_TRUE(has(refused.status().message(), "tolerance")) << refused.status().message();
  // A relu kernel is not a conv; depthwise convs run torch's exact kernel, not cuDNN.
  EXPECT_FALSE(conv_engine_search(g, first(g, 1e-2), Site{{1}, {}, ""}).is_ok());
  ir::Graph depthwise = graph_from_text(conv_graph(64, true, 64, true));
  EXPECT_TRUE(conv_engine_search_sites(depthwise, first(depthwise, 1e-2)).empty());
  // Transposed convs search too; once applied, no longer a site.
  ir::Graph t = graph_from_text(conv3d_graph(32, true, true, true));
  EXPECT_EQ(conv_engine_search_sites(t, first(t, 1e-2)).size(), 1u);
  auto s = conv_engine_search(g, first(g, 1e-2), sites[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->kernels[0].knob(schedule::Knob::kEngineSearch, 0), kConvEnginesTimed);
  EXPECT_TRUE(conv_engine_search_sites(g, s.value()).empty());
  auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_TRUE(has(p->kernels[0].code, "    8,  // engine_search: the fastest of this many engines"))
      << p->kernels[0].code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-engine-search-build");
  // Without the skill, torch's engine.
  auto plain = codegen::emit_program(g, first(g, 1e-2), {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(plain.is_ok());
  EXPECT_TRUE(has(plain->kernels[0].code, "    0,  // engine_search: torch's engine")) << plain->kernels[0].code;
  // A knob value out of range is refused.
  auto bad = first(g, 1e-2);
  bad.kernels[0].knobs[schedule::Knob::kEngineSearch] = -1;
  auto refused_knob = codegen::emit_program(g, bad, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_FALSE(refused_knob.is_ok());
  EXPECT_TRUE(has(refused_knob.status().message(), "the knob engine_search must be 0"))
      << refused_knob.status().message();
}

TEST(ConvEngineSearch, TheDefaultPlannerSearchesChannelsLastConvsToo) {
  ir::Graph g = graph_from_text(conv3d_graph(32, true, true));
  DefaultPlanOptions o;
  o.base.tolerance = 1e-2;
  auto s = plan_default(g, o);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->kernels[0].knob(schedule::Knob::kChannelsLast, 0), 1);
  EXPECT_EQ(s->kernels[0].knob(schedule::Knob::kEngineSearch, 0), kConvEnginesTimed);
  o.disabled = {"conv_engine_search"};
  auto without = plan_default(g, o);
  ASSERT_TRUE(without.is_ok());
  EXPECT_EQ(without->kernels[0].knob(schedule::Knob::kEngineSearch, 0), 0);
}

}  // namespace
}  // namespace kforge::skills
