// Conv emission (emit_conv.cpp) beyond the library basics: the exact depthwise kernel torch would run,
// the engine knob, the workspace reservation, the runtime's rules, and nvcc builds of the paths.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "base/files.h"
#include "codegen/program.h"
#include "sandbox/build.h"
#include "sandbox/toolchain.h"
#include "schedule/planner.h"
#include "test_util.h"

namespace kforge::codegen {
namespace {

using kforge::testing::graph_from_text;
using kforge::testing::one_node_graph;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

StatusOr<Program> try_emit(const ir::Graph& g, const std::map<std::string, int64_t>& knobs = {},
                           const std::string& precision = "fp32") {
  auto s = schedule::plan_one_kernel_per_op(g, {.precision = precision});
  for (auto& k : s.kernels) {
    for (const auto& [key, v] : knobs) k.knobs[schedule::knob_named(key).value()] = v;
  }
  return emit_program(g, s, {.library_file = "lib.so", .reference_source = "# reference\n"});
}

Program emit(const ir::Graph& g, const std::map<std::string, int64_t>& knobs = {}) {
  auto p = try_emit(g, knobs);
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return std::move(p).value();
}

// ---- depthwise: torch's own exact kernel, not cuDNN ----

TEST(CodegenConvDepthwise, Conv2dIsAnExactDirectKernel) {
  // groups == C_in == 8, channel multiplier 2, with bias, stride, padding and dilation.
  ir::Graph g = graph_from_text(
      one_node_graph("conv", {{"x", {2, 8, 17, 19}}, {"w", {16, 1, 3, 5}}, {"b", {16}}},
                     R"({"stride": [2, 1], "padding": [1, 2], "dilation": [1, 2], "groups": 8})", {2, 16, 9, 15}));
  Program p = emit(g);
  const auto& k = p.kernels[0];
  EXPECT_TRUE(k.libraries.empty());
  EXPECT_EQ(k.workspace_bytes, 0u);
  EXPECT_EQ(k.launches, 1);
  EXPECT_TRUE(has(k.code, "(CudaDepthwise2d)")) << k.code;
  EXPECT_FALSE(has(k.code, "cudnn"));
  EXPECT_TRUE(has(k.code,
                  "k0_conv_depthwise<<<kf_grid(4320LL, 256), 256, 0, ctx->stream>>>(((const float*)bufs[0]), "
                  "((const float*)bufs[1]), ((const float*)bufs[2]), ((float*)bufs[3]));"));
  // 32-bit indices; input channel c / multiplier; the bias first, then the window in order.
  EXPECT_TRUE(has(k.code, "for (unsigned int i = blockIdx.x"));
  EXPECT_TRUE(has(k.code, "const float* xp = x + (n * 8u + c / 2u) * 323u;"));
  EXPECT_TRUE(has(k.code, "const float* wp = w + c * 15u;"));
  EXPECT_TRUE(has(k.code, "float acc = (float)b[c];"));
  EXPECT_TRUE(has(k.code, "const int i0 = o0 * 2 - 1 + j0 * 1;"));
  EXPECT_TRUE(has(k.code, "const int i1 = o1 * 1 - 2 + j1 * 2;"));
  EXPECT_TRUE(has(k.code, "if (i1 < 0 || i1 >= 19) continue;"));
  EXPECT_TRUE(has(k.code, "acc += (float)wp[(j0) * 5 + j1] * (float)xp[((unsigned int)i0) * 19u + (unsigned int)i1];"));
  EXPECT_LT(k.code.find("float acc = (float)b[c];"), k.code.find("acc += "));
}

TEST(CodegenConvDepthwise, OneAndThreeDims) {
  // torch views a 1-d conv as 2-d before it chooses, so a depthwise conv1d is depthwise too.
  ir::Graph d1 =
      graph_from_text(one_node_graph("conv", {{"x", {4, 6, 40}}, {"w", {6, 1, 3}}},
                                     R"({"stride": [1], "padding": [1], "dilation": [1], "groups": 6})", {4, 6, 40}));
  Program p1 = emit(d1);
  EXPECT_TRUE(has(p1.kernels[0].code, "k0_conv_depthwise<<<")) << p1.kernels[0].code;
  EXPECT_TRUE(has(p1.kernels[0].code, "float acc = (float)0;"));
  ir::Graph d3 = graph_from_text(one_node_graph(
      "conv", {{"x", {2, 4, 6, 7, 8}}, {"w", {4, 1, 3, 3, 3}}},
      R"({"stride": [1, 1, 1], "padding": [1, 1, 1], "dilation": [1, 1, 1], "groups": 4})", {2, 4, 6, 7, 8}));
  Program p3 = emit(d3);
  const auto& c3 = p3.kernels[0].code;
  EXPECT_TRUE(has(c3, "(CudaDepthwise3d)")) << c3;
  EXPECT_TRUE(has(c3, "for (int j2 = 0; j2 < 3; ++j2) {"));
}

TEST(CodegenConvDepthwise, Bfloat16AccumulatesInFloat) {
  // torch runs bf16 depthwise convs on its own kernel too (its cuDNN depthwise rule is for fp16 only).
  Json bf = Json::parse(one_node_graph("conv", {{"x", {2, 4, 9, 9}}, {"w", {4, 1, 3, 3}}},
                                       R"({"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 4})",
                                       {2, 4, 7, 7}, "bfloat16"));
  for (auto& in : bf["inputs"]) in["dtype"] = "bfloat16";
  Program p = emit(graph_from_text(bf.dump()));
  const auto& code = p.kernels[0].code;
  EXPECT_TRUE(has(code, "k0_conv_depthwise<<<")) << code;
  EXPECT_TRUE(has(code, "float acc = (float)0;"));
  EXPECT_TRUE(p.kernels[0].libraries.empty());
}

TEST(CodegenConvDepthwise, SixtyFourBitIndicesPastTwoToThe31) {
  // 2^31 elements in all, under 2^31 per sample (more per sample goes to the generic direct kernel).
  ir::Graph g = graph_from_text(one_node_graph(
      "conv", {{"x", {4, 64, 4096, 2048}}, {"w", {64, 1, 3, 3}}},
      R"({"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 64})", {4, 64, 4096, 2048}));
  Program p = emit(g);
  const auto& code = p.kernels[0].code;
  EXPECT_TRUE(has(code, "for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < 2147483648LL;")) << code;
  EXPECT_TRUE(has(code, "const int64_t i0 = o0 * 1 - 1 + j0 * 1;"));
}

TEST(CodegenConvDepthwise, WhatIsNotDepthwiseGoesToCudnn) {
  // A single group, a transposed conv, fp16 (torch may send it to cuDNN), and the Find engine.
  ir::Graph one =
      graph_from_text(one_node_graph("conv", {{"x", {2, 1, 9, 9}}, {"w", {4, 1, 3, 3}}},
                                     R"({"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1]})", {2, 4, 7, 7}));
  EXPECT_TRUE(has(emit(one).kernels[0].code, "kf_cudnn_conv(ctx, &kConv"));
  ir::Graph t = graph_from_text(one_node_graph(
      "conv_transpose", {{"x", {2, 4, 5, 5}}, {"w", {4, 1, 3, 3}}},
      R"({"stride": [1, 1], "padding": [0, 0], "output_padding": [0, 0], "dilation": [1, 1], "groups": 4})",
      {2, 4, 7, 7}));
  EXPECT_TRUE(has(emit(t).kernels[0].code, "1,  // backward_data"));
  Json half = Json::parse(one_node_graph("conv", {{"x", {2, 4, 9, 9}}, {"w", {4, 1, 3, 3}}},
                                         R"({"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 4})",
                                         {2, 4, 7, 7}, "float16"));
  for (auto& in : half["inputs"]) in["dtype"] = "float16";
  EXPECT_TRUE(has(emit(graph_from_text(half.dump())).kernels[0].code, "CUDNN_DATA_HALF,  // data_type"));
  ir::Graph dw = graph_from_text(
      one_node_graph("conv", {{"x", {2, 4, 9, 9}}, {"w", {4, 1, 3, 3}}},
                     R"({"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 4})", {2, 4, 7, 7}));
  Program find = emit(dw, {{"engine", 1}});
  EXPECT_TRUE(has(find.kernels[0].code, "cudnnFindConvolutionForwardAlgorithmEx"));
  EXPECT_EQ(find.kernels[0].libraries, std::vector<std::string>{"cudnn"});
}

// ---- the engine knob and the workspace ----

TEST(CodegenConvEngine, KnobOutOfRangeIsRefused) {
  ir::Graph g =
      graph_from_text(one_node_graph("conv", {{"x", {1, 4, 8, 8}}, {"w", {4, 4, 3, 3}}},
                                     R"({"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1]})", {1, 4, 6, 6}));
  auto p = try_emit(g, {{"engine", 2}});
  ASSERT_FALSE(p.is_ok());
  EXPECT_TRUE(has(p.status().message(), "the knob engine must be 0")) << p.status().message();
}

TEST(CodegenConvEngine, WorkspaceGrowsWithTheTensorsUpTo2GiB) {
  ir::Graph small =
      graph_from_text(one_node_graph("conv", {{"x", {1, 4, 8, 8}}, {"w", {4, 4, 3, 3}}},
                                     R"({"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1]})", {1, 4, 6, 6}));
  EXPECT_EQ(emit(small).kernels[0].workspace_bytes, size_t{256} << 20);
  EXPECT_EQ(emit(small, {{"workspace_mb", 64}}).kernels[0].workspace_bytes, size_t{64} << 20);
  // 512 MiB in, 512 MiB out.
  ir::Graph mid = graph_from_text(one_node_graph("conv", {{"x", {8, 64, 512, 512}}, {"w", {64, 64, 3, 3}}},
                                                 R"({"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1]})",
                                                 {8, 64, 512, 512}));
  EXPECT_EQ(emit(mid).kernels[0].workspace_bytes, size_t{1024} << 20);
  ir::Graph big = graph_from_text(one_node_graph("conv", {{"x", {16, 16, 1024, 1024}}, {"w", {128, 16, 3, 3}}},
                                                 R"({"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1]})",
                                                 {16, 128, 1022, 1022}));
  Program pb = emit(big);
  EXPECT_EQ(pb.kernels[0].workspace_bytes, size_t{2048} << 20);
  // No batch chunks on torch's engine: torch gives cuDNN the whole tensor too.
  EXPECT_TRUE(has(pb.kernels[0].code, "{16, 128, 1022, 1022, 0},  // out_dims"));
}

// ---- the runtime ----

// The runtime sources are inlined into an exported Python file that upstream's strict checker reads.
TEST(CodegenConvRuntime, CudnnRuntimeHasNoWordsTheStaticCheckerRefuses) {
  auto home = sandbox::kforge_home();
  ASSERT_TRUE(home.is_ok()) << home.status().message();
  for (const char* file : {"kforge_cudnn.cu", "kforge_runtime.cuh", "kforge_runtime.cu", "kforge_dense_copy.cu"}) {
    auto text = read_file(home.value() / "src/codegen/runtime" / file);
    ASSERT_TRUE(text.is_ok()) << text.status().message();
    for (const char* word : {"pass", "try", "except"}) {
      EXPECT_FALSE(std::regex_search(text.value(), std::regex(word, std::regex::icase))) << file << ": " << word;
    }
  }
}

// ---- nvcc builds: (a) conv2d with bias, (b) conv1d, (c) conv_transpose3d, (d) depthwise conv2d ----

const char* kConvGraph = R"({
  "format": "kforge.graph/1", "name": "t_convs",
  "inputs": [
    {"id": "img", "name": "img", "shape": [2, 8, 17, 19], "dtype": "float32"},
    {"id": "seq", "name": "seq", "shape": [3, 6, 50], "dtype": "float32"},
    {"id": "vol", "name": "vol", "shape": [1, 4, 5, 6, 7], "dtype": "float32"}
  ],
  "params": [
    {"id": "cw", "path": "conv.weight", "kind": "parameter", "shape": [12, 4, 3, 2], "dtype": "float32"},
    {"id": "cb", "path": "conv.bias", "kind": "parameter", "shape": [12], "dtype": "float32"},
    {"id": "sw", "path": "conv1d.weight", "kind": "parameter", "shape": [12, 3, 5], "dtype": "float32"},
    {"id": "tw", "path": "convt.weight", "kind": "parameter", "shape": [4, 2, 3, 3, 3], "dtype": "float32"},
    {"id": "tb", "path": "convt.bias", "kind": "parameter", "shape": [4], "dtype": "float32"},
    {"id": "dw", "path": "depthwise.weight", "kind": "parameter", "shape": [16, 1, 3, 3], "dtype": "float32"},
    {"id": "db", "path": "depthwise.bias", "kind": "parameter", "shape": [16], "dtype": "float32"}
  ],
  "nodes": [
    {"id": "c", "op": "conv", "inputs": ["img", "cw", "cb"],
     "attrs": {"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1], "groups": 2}, "shape": [2, 12, 8, 22], "dtype": "float32"},
    {"id": "s", "op": "conv", "inputs": ["seq", "sw", null],
     "attrs": {"stride": [2], "padding": [2], "dilation": [3], "groups": 2}, "shape": [3, 12, 21], "dtype": "float32"},
    {"id": "t", "op": "conv_transpose", "inputs": ["vol", "tw", "tb"],
     "attrs": {"stride": [2, 2, 2], "padding": [1, 1, 1], "output_padding": [1, 0, 1], "dilation": [1, 1, 1], "groups": 2},
     "shape": [1, 4, 10, 11, 14], "dtype": "float32"},
    {"id": "d", "op": "conv", "inputs": ["img", "dw", "db"],
     "attrs": {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 8}, "shape": [2, 16, 17, 19], "dtype": "float32"}
  ],
  "outputs": ["c", "s", "t", "d"]
})";

void expect_builds(const Program& p, const std::string& name) {
  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  auto dir = kforge::testing::temp_dir(name);
  auto r =
      sandbox::build_program(p, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->ok) << r->message;
  EXPECT_TRUE(std::filesystem::exists(dir / "lib.so"));
  std::filesystem::remove_all(dir);
}

TEST(CodegenConvBuild, TorchEnginePathsBuildWithNvcc) {
  ir::Graph g = graph_from_text(kConvGraph);
  Program p = emit(g);
  ASSERT_EQ(p.kernels.size(), 4u);
  EXPECT_TRUE(has(p.kernels[0].code, "kf_cudnn_conv(ctx, &kConv"));
  EXPECT_TRUE(has(p.kernels[1].code, "4,  // nb_dims: the 1-d conv as 2-d with a unit height"));
  EXPECT_TRUE(has(p.kernels[2].code, "1,  // backward_data"));
  EXPECT_TRUE(has(p.kernels[2].code, "5,  // nb_dims"));
  EXPECT_TRUE(has(p.kernels[3].code, "(CudaDepthwise2d)"));
  EXPECT_EQ(p.libraries, std::vector<std::string>{"cudnn"});
  expect_builds(p, "conv-torch-engine");
}

TEST(CodegenConvBuild, FindEnginePathsBuildWithNvcc) {
  ir::Graph g = graph_from_text(kConvGraph);
  Program p = emit(g, {{"engine", 1}});
  ASSERT_EQ(p.kernels.size(), 4u);
  for (const auto& k : p.kernels) EXPECT_TRUE(has(k.code, "cudnnFind")) << k.name;
  expect_builds(p, "conv-find-engine");
}

}  // namespace
}  // namespace kforge::codegen
