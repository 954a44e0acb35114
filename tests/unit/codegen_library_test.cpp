// Library-call families (Matmul, Linear, Conv, ConvTranspose, Attention): the structure of the
// emitted code (batch plans, library calls, baked shapes, precision) and nvcc builds.
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/gemm_emit.h"
#include "codegen/program.h"
#include "sandbox/build.h"
#include "schedule/planner.h"
#include "test_util.h"

namespace kforge::codegen {
namespace {

using kforge::testing::graph_from_text;
using kforge::testing::one_node_graph;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

StatusOr<Program> try_emit(const ir::Graph& g, const std::string& precision = "fp32",
                           const std::map<std::string, int64_t>& knobs = {}) {
  auto s = schedule::plan_one_kernel_per_op(g, {.precision = precision});
  for (auto& k : s.kernels) {
    for (const auto& [key, v] : knobs) k.knobs[schedule::knob_named(key).value()] = v;
  }
  return emit_program(g, s, {.library_file = "lib.so", .reference_source = "# reference\n"});
}

Program emit(const ir::Graph& g, const std::string& precision = "fp32",
             const std::map<std::string, int64_t>& knobs = {}) {
  auto p = try_emit(g, precision, knobs);
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return std::move(p).value();
}

// A one-node graph whose inputs have the given dtypes (one_node_graph makes float32 inputs).
std::string typed_graph(const std::string& op,
                        const std::vector<std::tuple<std::string, ir::Shape, std::string>>& inputs,
                        const std::string& attrs, const ir::Shape& out, const std::string& out_dtype) {
  Json g = Json::parse(one_node_graph(op, {}, attrs, out, out_dtype));
  Json ins = Json::array();
  for (const auto& [id, shape, dt] : inputs) {
    if (id.empty()) {
      ins.push_back(nullptr);
      continue;
    }
    g["inputs"].push_back({{"id", id}, {"name", id}, {"shape", shape}, {"dtype", dt}});
    ins.push_back(id);
  }
  g["nodes"][0]["inputs"] = ins;
  return g.dump();
}

// ---- Matmul ----

TEST(CodegenLibraryMatmul, PlainGemmIsRowMajorAsColumnMajor) {
  ir::Graph g = graph_from_text(one_node_graph("matmul", {{"a", {64, 128}}, {"b", {128, 96}}}, "{}", {64, 96}));
  Program p = emit(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  const auto& k = p.kernels[0];
  EXPECT_EQ(k.libraries, std::vector<std::string>{"cublas"});
  EXPECT_EQ(k.launches, 1);
  EXPECT_TRUE(has(k.code, "extern \"C\" int k0_matmul(KfContext* ctx, void* const* bufs)"));
  // C^T[96, 64] = B^T A^T: m = N, n = M, B first with ld N, then A with ld K.
  EXPECT_TRUE(has(k.code, "cublasGemmEx_64(kf_h, CUBLAS_OP_N, CUBLAS_OP_N, 96LL, 64LL, 128LL")) << k.code;
  EXPECT_TRUE(has(k.code, "((const float*)bufs[1]), CUDA_R_32F, 96LL,"));
  EXPECT_TRUE(has(k.code, "((const float*)bufs[0]), CUDA_R_32F, 128LL"));
  EXPECT_TRUE(has(k.code, "CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT"));
  EXPECT_TRUE(has(k.code, "cublasSetMathMode(kf_h, CUBLAS_DEFAULT_MATH)"));
  EXPECT_TRUE(has(k.code, "KF_CUBLAS(") && has(k.code, "cublasGetStatusString"));
  EXPECT_TRUE(has(k.code, "kf_cublas_handle(ctx)") && has(k.code, "kf_h == nullptr"));
}

TEST(CodegenLibraryMatmul, BatchOfAFoldsIntoOneGemm) {
  ir::Graph g =
      graph_from_text(one_node_graph("matmul", {{"a", {3, 5, 33, 17}}, {"b", {17, 29}}}, "{}", {3, 5, 33, 29}));
  Program p_code = emit(g);
  const auto& code = p_code.kernels[0].code;
  EXPECT_TRUE(has(code, "cublasGemmEx_64(kf_h, CUBLAS_OP_N, CUBLAS_OP_N, 29LL, 495LL, 17LL")) << code;
  EXPECT_FALSE(has(code, "Batched"));
}

TEST(CodegenLibraryMatmul, SizeOneBatchOfBStillFolds) {
  ir::Graph g = graph_from_text(one_node_graph("matmul", {{"a", {4, 33, 17}}, {"b", {1, 17, 29}}}, "{}", {4, 33, 29}));
  EXPECT_TRUE(has(emit(g).kernels[0].code, "cublasGemmEx_64(kf_h, CUBLAS_OP_N, CUBLAS_OP_N, 29LL, 132LL, 17LL"));
}

TEST(CodegenLibraryMatmul, BmmIsStridedBatched) {
  ir::Graph g = graph_from_text(one_node_graph("matmul", {{"a", {4, 33, 17}}, {"b", {4, 17, 29}}}, "{}", {4, 33, 29}));
  Program p_code = emit(g);
  const auto& code = p_code.kernels[0].code;
  EXPECT_TRUE(has(code, "cublasGemmStridedBatchedEx_64(kf_h, CUBLAS_OP_N, CUBLAS_OP_N, 29LL, 33LL, 17LL")) << code;
  EXPECT_TRUE(has(code, "CUDA_R_32F, 29LL, 493LL,"));  // b: ld N, stride K*N
  EXPECT_TRUE(has(code, "CUDA_R_32F, 17LL, 561LL,"));  // a: ld K, stride M*K
  EXPECT_TRUE(has(code, "957LL, 4LL, CUBLAS_COMPUTE_32F"));
}

TEST(CodegenLibraryMatmul, SharedAHasStrideZero) {
  ir::Graph g = graph_from_text(one_node_graph("matmul", {{"a", {33, 17}}, {"b", {6, 17, 29}}}, "{}", {6, 33, 29}));
  Program p_code = emit(g);
  const auto& code = p_code.kernels[0].code;
  EXPECT_TRUE(has(code, "cublasGemmStridedBatchedEx_64"));
  EXPECT_TRUE(has(code, "CUDA_R_32F, 17LL, 0LL,")) << code;
}

TEST(CodegenLibraryMatmul, OneDimOperands) {
  ir::Graph dot = graph_from_text(one_node_graph("matmul", {{"a", {100}}, {"b", {100}}}, "{}", {}));
  EXPECT_TRUE(has(emit(dot).kernels[0].code, "CUBLAS_OP_N, CUBLAS_OP_N, 1LL, 1LL, 100LL"));
  ir::Graph vm = graph_from_text(one_node_graph("matmul", {{"a", {37}}, {"b", {3, 37, 53}}}, "{}", {3, 53}));
  Program p_code = emit(vm);
  const auto& code = p_code.kernels[0].code;
  EXPECT_TRUE(has(code, "cublasGemmStridedBatchedEx_64(kf_h, CUBLAS_OP_N, CUBLAS_OP_N, 53LL, 1LL, 37LL")) << code;
}

TEST(CodegenLibraryMatmul, MixedBroadcastUsesPointerArrays) {
  ir::Graph g =
      graph_from_text(one_node_graph("matmul", {{"a", {2, 1, 33, 17}}, {"b", {1, 3, 17, 29}}}, "{}", {2, 3, 33, 29}));
  Program p = emit(g);
  const auto& k = p.kernels[0];
  EXPECT_TRUE(has(k.code, "cublasGemmBatchedEx_64")) << k.code;
  EXPECT_TRUE(has(k.code, "k0_matmul_ptrs<<<"));
  EXPECT_EQ(k.launches, 2);
  EXPECT_EQ(k.workspace_bytes, 256u);  // 3 arrays of 6 pointers, rounded up
  EXPECT_GE(p.buffers.workspace_bytes, 144u);
}

TEST(CodegenLibraryMatmul, EmptyContractionIsZeros) {
  ir::Graph g = graph_from_text(one_node_graph("matmul", {{"a", {5, 0}}, {"b", {0, 7}}}, "{}", {5, 7}));
  Program p_code = emit(g);
  const auto& code = p_code.kernels[0].code;
  EXPECT_TRUE(has(code, "cudaMemsetAsync(((float*)bufs[2]), 0, 140ULL, ctx->stream)")) << code;
  EXPECT_FALSE(has(code, "cublasGemm"));
}

TEST(CodegenLibraryMatmul, EmptyResultDoesNothing) {
  ir::Graph g = graph_from_text(one_node_graph("matmul", {{"a", {0, 4}}, {"b", {4, 7}}}, "{}", {0, 7}));
  Program p = emit(g);
  EXPECT_EQ(p.kernels[0].launches, 0);
  EXPECT_FALSE(has(p.kernels[0].code, "cublasGemm"));
}

TEST(CodegenLibraryMatmul, PrecisionSelectsTheComputeType) {
  ir::Graph g = graph_from_text(one_node_graph("matmul", {{"a", {8, 8}}, {"b", {8, 8}}}, "{}", {8, 8}));
  EXPECT_TRUE(has(emit(g, "tf32").kernels[0].code, "CUBLAS_COMPUTE_32F_FAST_TF32"));
  // 3xtf32: the operands split (kernels/split_tf32.h) into the workspace, one TF32 GEMM over K tripled
  Program p = emit(g, "3xtf32");
  const auto& k = p.kernels[0];
  EXPECT_TRUE(has(k.code, "kf_tf32_split3<<<")) << k.code;
  EXPECT_TRUE(has(k.code, "3 * kf_kp, &kf_alpha") && has(k.code, "CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT"));
  // K padded to 16 (zeros), and B's rows (N, not transposed) too: 3 copies x 16 x (8 + 16) floats
  EXPECT_EQ(k.workspace_bytes, size_t{3} * 4 * 16 * (8 + 16));
  EXPECT_EQ(k.launches, 3);
}

TEST(CodegenLibraryMatmul, OtherFloatTypes) {
  ir::Graph d = graph_from_text(
      typed_graph("matmul", {{"a", {4, 8}, "float64"}, {"b", {8, 3}, "float64"}}, "{}", {4, 3}, "float64"));
  Program p_cd = emit(d);
  const auto& cd = p_cd.kernels[0].code;
  EXPECT_TRUE(has(cd, "CUDA_R_64F") && has(cd, "CUBLAS_COMPUTE_64F") && has(cd, "const double kf_alpha"));
  ir::Graph h = graph_from_text(
      typed_graph("matmul", {{"a", {4, 8}, "float16"}, {"b", {8, 3}, "float16"}}, "{}", {4, 3}, "float16"));
  Program p_ch = emit(h, "tf32");
  const auto& ch = p_ch.kernels[0].code;
  EXPECT_TRUE(has(ch, "CUDA_R_16F") && has(ch, "CUBLAS_COMPUTE_32F,"));
  ir::Graph i =
      graph_from_text(typed_graph("matmul", {{"a", {4, 8}, "int64"}, {"b", {8, 3}, "int64"}}, "{}", {4, 3}, "int64"));
  auto p = try_emit(i);
  ASSERT_FALSE(p.is_ok());
  EXPECT_TRUE(has(p.status().message(), "integer or bool")) << p.status().message();
}

// ---- Linear ----

TEST(CodegenLibraryLinear, BiasFirstThenGemmWithBetaOne) {
  ir::Graph g =
      graph_from_text(one_node_graph("linear", {{"x", {2, 3, 64}}, {"w", {48, 64}}, {"b", {48}}}, "{}", {2, 3, 48}));
  Program p_k = emit(g);
  const auto& k = p_k.kernels[0];
  EXPECT_EQ(k.launches, 2);
  EXPECT_TRUE(has(k.code, "y[i] = bias[i % 48LL];")) << k.code;
  // y^T[48, 6] = W (op T, ld 64) x^T (ld 64)
  EXPECT_TRUE(has(k.code, "cublasGemmEx_64(kf_h, CUBLAS_OP_T, CUBLAS_OP_N, 48LL, 6LL, 64LL"));
  EXPECT_TRUE(has(k.code, "kf_beta = (float)(1)"));
  EXPECT_LT(k.code.find("k0_linear_bias<<<"), k.code.find("cublasGemmEx_64"));
}

TEST(CodegenLibraryLinear, NoBias) {
  ir::Graph g = graph_from_text(
      typed_graph("linear", {{"x", {64}, "float32"}, {"w", {48, 64}, "float32"}, {"", {}, ""}}, "{}", {48}, "float32"));
  Program p_k = emit(g);
  const auto& k = p_k.kernels[0];
  EXPECT_EQ(k.launches, 1);
  EXPECT_TRUE(has(k.code, "kf_beta = (float)(0)"));
  EXPECT_FALSE(has(k.code, "_bias"));
}

// ---- Conv / ConvTranspose ----

TEST(CodegenLibraryConv, Conv2dThroughTorchsCudnnEngine) {
  ir::Graph g = graph_from_text(
      one_node_graph("conv", {{"x", {2, 8, 17, 19}}, {"w", {12, 4, 3, 2}}, {"b", {12}}},
                     R"({"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1], "groups": 2})", {2, 12, 8, 22}));
  Program p = emit(g);
  const auto& k = p.kernels[0];
  EXPECT_EQ(k.libraries, std::vector<std::string>{"cudnn"});
  EXPECT_TRUE(has(k.code,
                  "kf_cudnn_conv(ctx, &kConv, ((const float*)bufs[0]), ((const float*)bufs[1]), "
                  "((float*)bufs[2]))"))
      << k.code;
  ASSERT_GE(k.operands.size(), 3u);
  EXPECT_EQ(k.operands[2], 3) << "slot 2 is the output y (value 3)";
  EXPECT_FALSE(has(k.code, "cudnnFind"));
  EXPECT_TRUE(has(k.code, "0,  // backward_data: forward"));
  EXPECT_TRUE(has(k.code, "CUDNN_DATA_FLOAT,  // data_type"));
  EXPECT_TRUE(has(k.code, "CUDNN_DATA_FLOAT,  // compute_type"));
  EXPECT_TRUE(has(k.code, "0,  // exact: torch's default (allow_tf32 = True"));
  EXPECT_TRUE(has(k.code, "4,  // nb_dims\n"));
  EXPECT_TRUE(has(k.code, "{2, 8, 17, 19, 0},  // in_dims"));
  EXPECT_TRUE(has(k.code, "{12, 4, 3, 2, 0},  // w_dims"));
  EXPECT_TRUE(has(k.code, "{2, 12, 8, 22, 0},  // out_dims"));
  EXPECT_TRUE(has(k.code, "{1, 2, 0},  // pad"));
  EXPECT_TRUE(has(k.code, "{2, 1, 0},  // stride"));
  EXPECT_TRUE(has(k.code, "{2, 1, 0},  // dilation"));
  // The bias after cuDNN, as torch adds it.
  EXPECT_LT(k.code.find("kf_cudnn_conv(ctx"), k.code.find("k0_conv_bias<<<"));
  EXPECT_EQ(k.workspace_bytes, size_t{256} << 20);
  EXPECT_EQ(k.launches, 2);
}

TEST(CodegenLibraryConv, FindEngineKnobKeepsTheLegacyApi) {
  ir::Graph g = graph_from_text(
      one_node_graph("conv", {{"x", {2, 8, 17, 19}}, {"w", {12, 4, 3, 2}}, {"b", {12}}},
                     R"({"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1], "groups": 2})", {2, 12, 8, 22}));
  Program p = emit(g, "fp32", {{"engine", 1}});
  const auto& k = p.kernels[0];
  EXPECT_EQ(k.libraries, std::vector<std::string>{"cudnn"});
  EXPECT_TRUE(has(k.code, "cudnnConvolutionForward(")) << k.code;
  EXPECT_TRUE(has(k.code, "cudnnFindConvolutionForwardAlgorithmEx") &&
              has(k.code, "cudnnGetConvolutionForwardAlgorithm_v7"));
  EXPECT_FALSE(has(k.code, "kf_cudnn_conv("));
  EXPECT_TRUE(has(k.code, "constexpr cudnnMathType_t kMath = CUDNN_DEFAULT_MATH;"));
  EXPECT_TRUE(has(k.code, "const int kPad[kConvDims] = {1, 2};"));
  EXPECT_TRUE(has(k.code, "const int kStride[kConvDims] = {2, 1};"));
  EXPECT_TRUE(has(k.code, "const int kDilation[kConvDims] = {2, 1};"));
  EXPECT_TRUE(has(k.code, "const int kWeightDims[kNbDims] = {12, 4, 3, 2};"));
  EXPECT_TRUE(has(k.code, "cudnnSetConvolutionGroupCount(p.conv, 2)"));
  EXPECT_TRUE(has(k.code, "Plan g_plans[64][2];"));
  EXPECT_TRUE(has(k.code, "k0_conv_bias<<<"));
  EXPECT_TRUE(has(k.code, "cudnnGetErrorString"));
  EXPECT_GE(k.workspace_bytes, size_t{32} << 20);
  EXPECT_EQ(k.launches, 2);
}

TEST(CodegenLibraryConv, Conv1dIsConv2dWithUnitHeight) {
  ir::Graph g =
      graph_from_text(one_node_graph("conv", {{"x", {3, 6, 50}}, {"w", {12, 3, 5}}},
                                     R"({"stride": [2], "padding": [2], "dilation": [3], "groups": 2})", {3, 12, 21}));
  Program p_code = emit(g);
  const auto& code = p_code.kernels[0].code;
  EXPECT_TRUE(has(code, "4,  // nb_dims: the 1-d conv as 2-d with a unit height")) << code;
  EXPECT_TRUE(has(code, "{3, 6, 1, 50, 0},  // in_dims"));
  EXPECT_TRUE(has(code, "{12, 3, 1, 5, 0},  // w_dims"));
  EXPECT_TRUE(has(code, "{3, 12, 1, 21, 0},  // out_dims"));
  EXPECT_TRUE(has(code, "{0, 2, 0},  // pad"));
  EXPECT_TRUE(has(code, "{1, 2, 0},  // stride"));
  EXPECT_TRUE(has(code, "{1, 3, 0},  // dilation"));
  Program p_find = emit(g, "fp32", {{"engine", 1}});
  const auto& find = p_find.kernels[0].code;
  EXPECT_TRUE(has(find, "constexpr int kNbDims = 4;"));
  EXPECT_TRUE(has(find, "const int kPad[kConvDims] = {0, 2};"));
  EXPECT_TRUE(has(find, "const int kStride[kConvDims] = {1, 2};"));
  EXPECT_TRUE(has(find, "const int kWeightDims[kNbDims] = {12, 3, 1, 5};"));
  EXPECT_TRUE(has(find, "const int kXDims[kNbDims - 1] = {6, 1, 50};"));
}

TEST(CodegenLibraryConv, PrecisionAndHalf) {
  std::string conv = one_node_graph("conv", {{"x", {1, 4, 8, 8}}, {"w", {4, 4, 3, 3}}},
                                    R"({"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1]})", {1, 4, 6, 6});
  ir::Graph g = graph_from_text(conv);
  // 3xtf32 asks for better than TF32: no tensor-core engines, as torch with allow_tf32 = False.
  EXPECT_TRUE(has(emit(g, "3xtf32").kernels[0].code, "1,  // exact: precision 3xtf32"));
  EXPECT_TRUE(has(emit(g, "tf32").kernels[0].code, "0,  // exact: torch's default"));
  EXPECT_TRUE(has(emit(g, "3xtf32", {{"engine", 1}}).kernels[0].code, "kMath = CUDNN_FMA_MATH"));
  EXPECT_TRUE(has(emit(g, "tf32", {{"engine", 1}}).kernels[0].code, "kMath = CUDNN_DEFAULT_MATH"));
  ir::Graph h = graph_from_text(
      typed_graph("conv", {{"x", {1, 4, 8, 8}, "float16"}, {"w", {4, 4, 3, 3}, "float16"}, {"", {}, ""}},
                  R"({"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1]})", {1, 4, 6, 6}, "float16"));
  Program p_ch = emit(h);
  const auto& ch = p_ch.kernels[0].code;
  EXPECT_TRUE(has(ch, "CUDNN_DATA_HALF,  // data_type") && has(ch, "CUDNN_DATA_FLOAT,  // compute_type") &&
              has(ch, "((const __half*)bufs[0])"))
      << ch;
  Program p_find = emit(h, "fp32", {{"engine", 1}});
  const auto& find = p_find.kernels[0].code;
  EXPECT_TRUE(has(find, "kType = CUDNN_DATA_HALF") && has(find, "kMath = CUDNN_TENSOR_OP_MATH") &&
              has(find, "kCompute = CUDNN_DATA_FLOAT"));
}

TEST(CodegenLibraryConv, DirectKnobAndThreeD) {
  ir::Graph g = graph_from_text(one_node_graph(
      "conv", {{"x", {2, 4, 9, 10, 11}}, {"w", {8, 2, 3, 2, 3}}, {"b", {8}}},
      R"({"stride": [1, 2, 1], "padding": [1, 0, 1], "dilation": [1, 2, 1], "groups": 2})", {2, 8, 9, 4, 11}));
  Program p_cudnn = emit(g);
  const auto& cudnn = p_cudnn.kernels[0].code;
  EXPECT_TRUE(has(cudnn, "5,  // nb_dims\n")) << cudnn;
  EXPECT_TRUE(has(cudnn, "{1, 0, 1},  // pad"));
  Program p_k = emit(g, "fp32", {{"direct", 1}});
  const auto& k = p_k.kernels[0];
  EXPECT_TRUE(k.libraries.empty());
  EXPECT_TRUE(has(k.code, "k0_conv_direct<<<")) << k.code;
  EXPECT_TRUE(has(k.code, "const int64_t i2 = o2 * 1LL - 1LL + j2 * 1LL;"));
  EXPECT_TRUE(has(k.code, "acc += (float)b[co];"));
}

TEST(CodegenLibraryConvTranspose, ThroughBackwardData) {
  ir::Graph g = graph_from_text(one_node_graph(
      "conv_transpose", {{"x", {1, 4, 5, 6, 7}}, {"w", {4, 2, 3, 3, 3}}, {"b", {4}}},
      R"({"stride": [2, 2, 2], "padding": [1, 1, 1], "output_padding": [1, 0, 1], "dilation": [1, 1, 1], "groups": 2})",
      {1, 4, 10, 11, 14}));
  Program p_k = emit(g);
  const auto& k = p_k.kernels[0];
  EXPECT_EQ(k.libraries, std::vector<std::string>{"cudnn"});
  EXPECT_TRUE(has(k.code, "1,  // backward_data: the transposed conv is the input-gradient of conv(., w)")) << k.code;
  EXPECT_TRUE(has(k.code, "{1, 4, 5, 6, 7},  // in_dims"));
  EXPECT_TRUE(has(k.code, "{4, 2, 3, 3, 3},  // w_dims"));
  EXPECT_TRUE(has(k.code, "{1, 4, 10, 11, 14},  // out_dims"));
  EXPECT_TRUE(has(k.code, "{2, 2, 2},  // stride"));
  EXPECT_EQ(k.launches, 2);
  Program p_find = emit(g, "fp32", {{"engine", 1}});
  const auto& find = p_find.kernels[0].code;
  EXPECT_TRUE(has(find, "cudnnConvolutionBackwardData(")) << find;
  EXPECT_TRUE(has(find, "cudnnFindConvolutionBackwardDataAlgorithmEx"));
  EXPECT_TRUE(has(find, "const int kWeightDims[kNbDims] = {4, 2, 3, 3, 3};"));
  EXPECT_TRUE(has(find, "const int kYDims[kNbDims - 1] = {4, 10, 11, 14};"));
}

TEST(CodegenLibraryConvTranspose, OutputPaddingPastStrideIsDirect) {
  ir::Graph g = graph_from_text(one_node_graph(
      "conv_transpose", {{"x", {2, 3, 8, 8}}, {"w", {3, 4, 3, 3}}, {"b", {4}}},
      R"({"stride": [1, 1], "padding": [0, 1], "output_padding": [1, 1], "dilation": [2, 2], "groups": 1})",
      {2, 4, 13, 11}));
  Program p_k = emit(g);
  const auto& k = p_k.kernels[0];
  EXPECT_TRUE(k.libraries.empty());
  EXPECT_TRUE(has(k.code, "output_padding >= stride")) << k.code;
  EXPECT_TRUE(has(k.code, "if (t0 < 0 || t0 % 1LL != 0) continue;"));
}

TEST(CodegenLibraryConvTranspose, NoInputChannelsIsTheBias) {
  ir::Graph g = graph_from_text(one_node_graph(
      "conv_transpose", {{"x", {2, 0, 4}}, {"w", {0, 3, 3}}, {"b", {3}}},
      R"({"stride": [1], "padding": [0], "output_padding": [0], "dilation": [1], "groups": 1})", {2, 3, 6}));
  Program p_k = emit(g);
  const auto& k = p_k.kernels[0];
  EXPECT_TRUE(has(k.code, "y[i] = (float)((float)b[(i / 6LL) % 3LL]);")) << k.code;
}

// ---- Attention ----

TEST(CodegenLibraryAttention, ThreeStepsWithScoresInWorkspace) {
  ir::Graph g = graph_from_text(one_node_graph("scaled_dot_product_attention",
                                               {{"q", {2, 4, 64, 32}}, {"k", {2, 4, 80, 32}}, {"v", {2, 4, 80, 48}}},
                                               R"({"is_causal": true})", {2, 4, 64, 48}));
  Program p = emit(g);
  const auto& k = p.kernels[0];
  EXPECT_EQ(k.workspace_bytes, size_t{8} * 64 * 80 * 4);
  EXPECT_EQ(k.launches, 3);
  // S^T[80, 64] = K (op T, ld 32) Q^T (ld 32), alpha = 1/sqrt(32)
  EXPECT_TRUE(has(k.code, "cublasGemmStridedBatchedEx_64(kf_h, CUBLAS_OP_T, CUBLAS_OP_N, 80LL, 64LL, 32LL")) << k.code;
  EXPECT_TRUE(has(k.code, "kf_alpha = (float)((0.176776692f))"));
  EXPECT_TRUE(has(k.code, "k0_scaled_dot_product_attention_softmax<<<"));
  EXPECT_TRUE(has(k.code, "if (j > l) x = -INFINITY;"));
  // O^T[48, 64] = V^T (ld 48) P^T (ld 80)
  EXPECT_TRUE(has(k.code, "cublasGemmStridedBatchedEx_64(kf_h, CUBLAS_OP_N, CUBLAS_OP_N, 48LL, 64LL, 80LL"));
}

TEST(CodegenLibraryAttention, MasksAndScale) {
  ir::Graph g = graph_from_text(typed_graph("scaled_dot_product_attention",
                                            {{"q", {2, 4, 16, 8}, "float32"},
                                             {"k", {2, 4, 20, 8}, "float32"},
                                             {"v", {2, 4, 20, 8}, "float32"},
                                             {"m", {16, 20}, "bool"}},
                                            R"({"scale": 0.5})", {2, 4, 16, 8}, "float32"));
  Program p_code = emit(g);
  const auto& code = p_code.kernels[0].code;
  EXPECT_TRUE(has(code, "if (!mask[((unsigned)(mi) % 320u)]) x = -INFINITY;")) << code;
  EXPECT_TRUE(has(code, "kf_alpha = (float)((0.5f))"));
  ir::Graph f = graph_from_text(typed_graph("scaled_dot_product_attention",
                                            {{"q", {2, 4, 16, 8}, "float32"},
                                             {"k", {2, 4, 20, 8}, "float32"},
                                             {"v", {2, 4, 20, 8}, "float32"},
                                             {"m", {2, 1, 16, 20}, "float32"}},
                                            "{}", {2, 4, 16, 8}, "float32"));
  EXPECT_TRUE(has(emit(f).kernels[0].code, "x += (float)mask["));
}

TEST(CodegenLibraryAttention, BroadcastKvAndChunks) {
  ir::Graph g = graph_from_text(one_node_graph("scaled_dot_product_attention",
                                               {{"q", {2, 4, 64, 32}}, {"k", {2, 1, 80, 32}}, {"v", {2, 1, 80, 48}}},
                                               "{}", {2, 4, 64, 48}));
  Program p_k = emit(g);
  const auto& k = p_k.kernels[0];
  EXPECT_TRUE(has(k.code, "cublasGemmBatchedEx_64")) << k.code;
  EXPECT_TRUE(has(k.code, "k0_scaled_dot_product_attention_ptrs<<<"));
  ir::Graph one = graph_from_text(one_node_graph("scaled_dot_product_attention",
                                                 {{"q", {2, 4, 64, 32}}, {"k", {1, 1, 80, 32}}, {"v", {1, 1, 80, 48}}},
                                                 "{}", {2, 4, 64, 48}));
  EXPECT_FALSE(has(emit(one).kernels[0].code, "cublasGemmBatchedEx_64"));
  // A 1 MiB budget holds 13 of the 15 score matrices of 64 x 300 floats: two chunks.
  ir::Graph big = graph_from_text(
      one_node_graph("scaled_dot_product_attention",
                     {{"q", {3, 5, 64, 32}}, {"k", {3, 5, 300, 32}}, {"v", {3, 5, 300, 16}}}, "{}", {3, 5, 64, 16}));
  Program p_kb = emit(big, "fp32", {{"workspace_mb", 1}});
  const auto& kb = p_kb.kernels[0];
  EXPECT_EQ(kb.workspace_bytes, gemm::align256(13 * 64 * 300 * 4));
  EXPECT_EQ(kb.launches, 6);
}

// ---- nvcc builds ----

TEST(CodegenLibrary, BuildsWithNvcc) {
  const char* graph = R"({
    "format": "kforge.graph/1", "name": "t_library",
    "inputs": [
      {"id": "a", "name": "a", "shape": [2, 1, 33, 17], "dtype": "float32"},
      {"id": "b", "name": "b", "shape": [1, 3, 17, 29], "dtype": "float32"},
      {"id": "x", "name": "x", "shape": [2, 8, 17, 19], "dtype": "float32"},
      {"id": "q", "name": "q", "shape": [2, 4, 16, 8], "dtype": "float32"},
      {"id": "kv", "name": "kv", "shape": [2, 1, 20, 8], "dtype": "float32"},
      {"id": "m", "name": "m", "shape": [16, 20], "dtype": "bool"}
    ],
    "params": [
      {"id": "w", "path": "lin.weight", "kind": "parameter", "shape": [48, 29], "dtype": "float32"},
      {"id": "wb", "path": "lin.bias", "kind": "parameter", "shape": [48], "dtype": "float32"},
      {"id": "cw", "path": "conv.weight", "kind": "parameter", "shape": [12, 4, 3, 2], "dtype": "float32"},
      {"id": "cb", "path": "conv.bias", "kind": "parameter", "shape": [12], "dtype": "float32"},
      {"id": "tw", "path": "convt.weight", "kind": "parameter", "shape": [12, 3, 3, 3], "dtype": "float32"}
    ],
    "nodes": [
      {"id": "mm", "op": "matmul", "inputs": ["a", "b"], "attrs": {}, "shape": [2, 3, 33, 29], "dtype": "float32"},
      {"id": "lin", "op": "linear", "inputs": ["mm", "w", "wb"], "attrs": {}, "shape": [2, 3, 33, 48], "dtype": "float32"},
      {"id": "c", "op": "conv", "inputs": ["x", "cw", "cb"],
       "attrs": {"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1], "groups": 2}, "shape": [2, 12, 8, 22], "dtype": "float32"},
      {"id": "t", "op": "conv_transpose", "inputs": ["c", "tw", null],
       "attrs": {"stride": [2, 2], "padding": [1, 1], "output_padding": [1, 0], "dilation": [1, 1], "groups": 2},
       "shape": [2, 6, 16, 43], "dtype": "float32"},
      {"id": "td", "op": "conv_transpose", "inputs": ["c", "tw", null],
       "attrs": {"stride": [1, 1], "padding": [1, 1], "output_padding": [1, 1], "dilation": [2, 2], "groups": 2},
       "shape": [2, 6, 11, 25], "dtype": "float32"},
      {"id": "o", "op": "scaled_dot_product_attention", "inputs": ["q", "kv", "kv", "m"], "attrs": {"is_causal": false},
       "shape": [2, 4, 16, 8], "dtype": "float32"}
    ],
    "outputs": ["lin", "t", "td", "o"]
  })";
  ir::Graph g = graph_from_text(graph);
  Program p = emit(g);
  ASSERT_EQ(p.kernels.size(), 6u);
  EXPECT_EQ(p.libraries, (std::vector<std::string>{"cublas", "cudnn"}));
  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  auto dir = kforge::testing::temp_dir("library-build");
  auto r =
      sandbox::build_program(p, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->ok) << r->message;
  EXPECT_TRUE(std::filesystem::exists(dir / "lib.so"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kforge::codegen
