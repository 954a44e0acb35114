// conv_implicit_gemm: where it is legal (a float32 2-d conv of a small reduction, C_out a multiple of 8 up
// to 64, a tolerance that allows TF32), its place in the default planner (before conv_channels_last, after
// conv_epilogue), the code it leads to (one kernel: the weights in shared memory, the window staged, mma.sync
// on TF32, the bias and chain in the NCHW stores), the cost model's view, and nvcc builds. The numerics are
// checked against torch on the GPU machine (tests/gpu/test_conv_implicit_gemm.py and the level-2 problems the
// bench verifies).
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "skills/conv_implicit_gemm.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

// x [n, cin, h, w] -> conv (w [cout, cin / groups, kh, kw], bias, `stride` along both dims) -> c -> relu -> y
// (with `chain`).
std::string graph(int64_t cin, int64_t cout, int64_t kh, int64_t kw, int64_t groups = 1, bool chain = true,
                  const std::string& dtype = "float32", int64_t stride = 1) {
  const int64_t n = 4, h = 40, w = 150;
  const std::string out = "[" + std::to_string(n) + ", " + std::to_string(cout) + ", " +
                          std::to_string((h - kh) / stride + 1) + ", " + std::to_string((w - kw) / stride + 1) + "]";
  std::string text = R"({"format": "kforge.graph/1", "name": "ig",
    "inputs": [{"id": "x", "name": "x", "shape": [)" +
                     std::to_string(n) + ", " + std::to_string(cin) + ", " + std::to_string(h) + ", " +
                     std::to_string(w) + R"(], "dtype": ")" + dtype + R"("}],
    "params": [{"id": "w", "path": "conv.weight", "kind": "parameter", "shape": [)" +
                     std::to_string(cout) + ", " + std::to_string(cin / groups) + ", " + std::to_string(kh) + ", " +
                     std::to_string(kw) + R"(], "dtype": ")" + dtype + R"("},
               {"id": "b", "path": "conv.bias", "kind": "parameter", "shape": [)" +
                     std::to_string(cout) + R"(], "dtype": ")" + dtype + R"("}],
    "nodes": [
      {"id": "c", "op": "conv", "inputs": ["x", "w", "b"],
       "attrs": {"stride": [)" +
                     std::to_string(stride) + ", " + std::to_string(stride) +
                     R"(], "padding": [0, 0], "dilation": [1, 1], "groups": )" + std::to_string(groups) +
                     R"(}, "shape": )" + out + R"(, "dtype": ")" + dtype + R"("})";
  if (chain) {
    text += R"(,
      {"id": "y", "op": "relu", "inputs": ["c"], "attrs": {}, "shape": )" +
            out + R"(, "dtype": ")" + dtype + R"("}],
    "outputs": ["y"]})";
  } else {
    text += R"(],
    "outputs": ["c"]})";
  }
  return text;
}

schedule::Schedule planned(const ir::Graph& g, double tolerance) {
  DefaultPlanOptions o;
  o.base.tolerance = tolerance;
  auto s = plan_default(g, o);
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.value();
}

bool applied(const schedule::Schedule& s, const std::string& skill) {
  for (const auto& a : s.applied) {
    if (a.rfind(skill + ":", 0) == 0) return true;
  }
  return false;
}

TEST(ConvImplicitGemm, ASmallReductionConvWithItsChainBecomesOneKernelOfTf32Mma) {
  ir::Graph g = graph_from_text(graph(8, 64, 3, 3));
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(applied(s, "conv_epilogue"));
  EXPECT_TRUE(applied(s, "conv_implicit_gemm"));
  // Not cuDNN's: neither channels-last copies nor an engine search.
  EXPECT_FALSE(applied(s, "conv_channels_last"));
  EXPECT_FALSE(applied(s, "conv_engine_search"));
  EXPECT_EQ(s.kernels[0].knob(schedule::Knob::kImplicitGemm, 0), 1);
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->kernels.size(), 1u);
  const std::string& code = p->kernels[0].code;
  EXPECT_TRUE(p->kernels[0].libraries.empty());
  EXPECT_FALSE(has(code, "kf_cudnn_conv")) << code;
  // 8 x 3 x 3 = 72: 9 steps of 8; 148 columns: 2 tiles per row; the window of 8 x 3 rows of 130 columns.
  EXPECT_TRUE(has(code, "constexpr int kK = kCin * kR * kS, kKSteps = 9;")) << code;
  EXPECT_TRUE(has(code, "constexpr int kN = 4, kCin = 8, kH = 40, kW = 150, kCout = 64;")) << code;
  EXPECT_TRUE(has(code, "constexpr int kIW = 130, kInRows = kCin * kR;")) << code;
  EXPECT_TRUE(has(code, "constexpr int kLdIn = 144, kLdW = 72, kLdOut = 132;")) << code;
  EXPECT_TRUE(has(code, "__launch_bounds__(256, 4) k0_conv_conv_implicit_gemm(")) << code;
  EXPECT_TRUE(has(code, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")) << code;
  EXPECT_TRUE(has(code, "cvt.rna.tf32.f32")) << code;
  // The padded reduction columns read a row of zeros, not the input.
  EXPECT_TRUE(has(code, "k_off[k] = k < kK ? (ci * kR + r) * kLdIn + s * kDilW : kZeroRow;")) << code;
  // The bias, then the chain at the NCHW index, its per-plane operands read at the plane's first index.
  EXPECT_TRUE(has(code, "const float val = out_s[c * kLdOut + m] + bc;")) << code;
  EXPECT_TRUE(has(code, "__stcs(out + i, k0_conv_chain(i, val, i_row));")) << code;
  EXPECT_TRUE(has(code, "k0_conv_conv_implicit_gemm<<<blocks, 256, kSmemBytes, ctx->stream>>>(")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-implicit-gemm-build");

  // The cost model: input, weight, bias and output once (the chain in the stores: no pass over the result).
  costmodel::DeviceCeilings d;
  const auto cost = costmodel::kernel_cost(g, s, s.kernels[0], d);
  EXPECT_NEAR(cost.bytes, 4.0 * (4 * 8 * 40 * 150 + 64 * 8 * 9 + 64 + 4 * 64 * 38 * 148), 1.0);
}

TEST(ConvImplicitGemm, AConvAloneAndAReductionNotAMultipleOfEight) {
  // 3 x 5 x 5 = 75: padded to 80 (10 steps); no chain, so the stores write the biased value.
  ir::Graph g = graph_from_text(graph(3, 16, 5, 5, 1, false));
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(applied(s, "conv_implicit_gemm"));
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& code = p->kernels[0].code;
  EXPECT_TRUE(has(code, "kKSteps = 10;")) << code;
  EXPECT_TRUE(has(code, "__stcs(out + i, val);")) << code;
  kforge::testing::expect_builds_with_nvcc(p.value(), "conv-implicit-gemm-alone-build");
}

TEST(ConvImplicitGemm, NotWhereTheConvIsComputeBoundOrTheShapesOrToleranceDoNotFit) {
  // 16 x 3 x 3 = 144 takes it; 32 x 3 x 3 = 288 does not (cuDNN's engines win there).
  EXPECT_TRUE(applied(planned(graph_from_text(graph(16, 64, 3, 3)), 1e-2), "conv_implicit_gemm"));
  EXPECT_FALSE(applied(planned(graph_from_text(graph(32, 64, 3, 3)), 1e-2), "conv_implicit_gemm"));
  // C_out: a multiple of 8 up to 64.
  EXPECT_FALSE(applied(planned(graph_from_text(graph(8, 36, 3, 3)), 1e-2), "conv_implicit_gemm"));
  EXPECT_FALSE(applied(planned(graph_from_text(graph(8, 128, 3, 3)), 1e-2), "conv_implicit_gemm"));
  // Grouped convs, and float64 (no TF32), keep cuDNN.
  EXPECT_FALSE(applied(planned(graph_from_text(graph(8, 64, 3, 3, 2)), 1e-2), "conv_implicit_gemm"));
  EXPECT_FALSE(applied(planned(graph_from_text(graph(8, 64, 3, 3, 1, true, "float64")), 1e-2), "conv_implicit_gemm"));
  // A window too wide for shared memory: 160 channels at stride 4 (160 x 1 x 528 floats).
  EXPECT_FALSE(
      applied(planned(graph_from_text(graph(160, 64, 1, 1, 1, true, "float32", 4)), 1e-2), "conv_implicit_gemm"));
  EXPECT_TRUE(applied(planned(graph_from_text(graph(160, 64, 1, 1)), 1e-2), "conv_implicit_gemm"));
  // kernelbench's 1e-4 is below TF32's rounding.
  EXPECT_FALSE(applied(planned(graph_from_text(graph(8, 64, 3, 3)), 1e-4), "conv_implicit_gemm"));
  // --disable-skill conv_implicit_gemm: cuDNN's channels-last path, as before the skill.
  DefaultPlanOptions o;
  o.base.tolerance = 1e-2;
  o.disabled.insert("conv_implicit_gemm");
  auto s = plan_default(graph_from_text(graph(8, 64, 3, 3)), o);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_FALSE(applied(s.value(), "conv_implicit_gemm"));
  EXPECT_TRUE(applied(s.value(), "conv_channels_last"));
}

TEST(ConvImplicitGemm, TheKnobOnAConvItCannotRunSaysWhy) {
  ir::Graph g = graph_from_text(graph(32, 64, 3, 3));
  schedule::Schedule s = planned(g, 1e-2);
  ASSERT_EQ(s.kernels.size(), 1u);
  s.kernels[0].knobs.clear();
  s.kernels[0].knobs[schedule::Knob::kImplicitGemm] = 1;
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
  ASSERT_FALSE(p.is_ok());
  EXPECT_TRUE(has(p.status().message(), "the knob implicit_gemm = 1 cannot apply: the reduction C_in * kh * kw = 288"))
      << p.status().message();
}

}  // namespace
}  // namespace kforge::skills
