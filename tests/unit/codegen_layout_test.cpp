// Data movement, pooling and einsum codegen: the kernel shape each case gets, the baked index
// arithmetic, the torch conventions that are easy to get wrong, and nvcc builds.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "codegen/program.h"
#include "codegen_test_graphs.h"
#include "ir/op_registry.h"
#include "sandbox/build.h"
#include "schedule/planner.h"
#include "test_util.h"

namespace kforge::codegen {
namespace {

using testing::emit;
using testing::In;
using testing::make_graph;
using testing::Op;

// The code of the only kernel of a one-op graph.
std::string code_of(const std::string& op, const std::vector<In>& ins, const std::string& attrs) {
  std::vector<std::string> ids;
  for (const auto& i : ins) ids.push_back(i.id);
  Program p = emit(make_graph(ins, {{op, ids, attrs}}));
  EXPECT_EQ(p.kernels.size(), 1u);
  return p.kernels.empty() ? "" : p.kernels[0].code;
}

bool has(const std::string& code, const std::string& what) {
  return code.find(what) != std::string::npos;
}

void expect_builds(const Program& p, const std::string& name) {
  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  auto dir = kforge::testing::temp_dir(name);
  auto r =
      sandbox::build_program(p, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  std::string logs;
  for (const auto& c : r->compiles) {
    if (!c.ok) logs += c.file + ":\n" + c.log + "\n";
  }
  EXPECT_TRUE(r->ok) << r->message << "\n" << logs;
  for (const auto& c : r->compiles) {
    for (const auto& ru : c.resources) EXPECT_EQ(ru.spill_stores, 0) << c.file << " " << ru.kernel << " spills";
  }
  std::filesystem::remove_all(dir);
}

// ---- layout ----

TEST(CodegenLayoutEmit, ReshapeOutputIsACopyAndIntermediateIsAnAlias) {
  Program out = emit(make_graph({{"x", {4, 6, 8}}}, {{"reshape", {"x"}, R"({"shape": [6, -1]})"}}));
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0].name, "k0_reshape");
  EXPECT_TRUE(has(out.kernels[0].code, "extern \"C\" int k0_reshape(KfContext* ctx, void* const* bufs)"));
  EXPECT_TRUE(has(out.kernels[0].code,
                  "cudaMemcpyAsync(((float*)bufs[0]), ((const float*)bufs[1]) + 0LL, 192ULL * sizeof(float), "
                  "cudaMemcpyDeviceToDevice, ctx->stream)"))
      << out.kernels[0].code;
  // The copy names its destination first: slot 0 is the result (value 1), slot 1 the input x (value 0).
  EXPECT_EQ(out.kernels[0].operands, (std::vector<ir::ValueIndex>{1, 0}));
  Program mid =
      emit(make_graph({{"x", {4, 6, 8}}}, {{"reshape", {"x"}, R"({"shape": [24, 8]})"}, {"relu", {"v0"}}}, {"v1"}));
  ASSERT_EQ(mid.kernels.size(), 1u);
  EXPECT_EQ(mid.kernels[0].name, "k1_relu");
}

TEST(CodegenLayoutEmit, PermuteMergesAdjacentDimsAndDropsOnes) {
  std::string c = code_of("permute", {{"x", {5, 7, 9, 11}}}, R"({"dims": [3, 1, 2, 0]})");
  EXPECT_TRUE(has(c, "input [5, 63, 11], output [11, 63, 5]")) << c;
  EXPECT_TRUE(has(c, "const int src = (i / 315) + ((i / 5) % 63) * 11 + (i % 5) * 693;")) << c;
  // Moving only a size-1 dim is no permutation at all.
  EXPECT_TRUE(has(code_of("permute", {{"x", {2, 1, 3}}}, R"({"dims": [1, 0, 2]})"), "cudaMemcpyAsync"));
}

TEST(CodegenLayoutEmit, TransposeGoesThroughSharedTiles) {
  std::string c = code_of("permute", {{"x", {3, 64, 48}}}, R"({"dims": [0, 2, 1]})");
  EXPECT_TRUE(has(c, "__shared__ float tile[32][33];")) << c;
  EXPECT_TRUE(has(c, "tile[j][tx] = in0[in_base + b * 48 + a];")) << c;
  EXPECT_TRUE(has(c, "out[out_base + a * 64 + b] = tile[tx][j];")) << c;
  // A short innermost dim keeps the plain gather.
  EXPECT_FALSE(has(code_of("permute", {{"x", {50, 60, 3}}}, R"({"dims": [1, 0, 2]})"), "tile["));
}

TEST(CodegenLayoutEmit, LargeTensorsIndexIn64Bits) {
  std::string c = code_of("permute", {{"x", {70000, 40000}}}, R"({"dims": [1, 0]})");
  EXPECT_TRUE(has(c, "typedef int64_t I;")) << c;
  EXPECT_TRUE(has(c, "a * 70000LL")) << c;
  std::string small = code_of("flip", {{"x", {3, 4}}}, R"({"dims": [0]})");
  EXPECT_TRUE(has(small, "const int i = (int)i_;")) << small;
}

TEST(CodegenLayoutEmit, ExpandBroadcastsByIndexArithmetic) {
  std::string c = code_of("expand", {{"x", {3, 1, 5}}}, R"({"shape": [2, 3, 4, 5]})");
  EXPECT_TRUE(has(c, "out[i] = in0[((i / 20) % 3) * 5 + (i % 5)];")) << c;
  EXPECT_TRUE(has(code_of("expand", {{"x", {4, 5}}}, R"({"shape": [1, 4, -1]})"), "cudaMemcpyAsync"));
}

TEST(CodegenLayoutEmit, SliceClampsLikeTorch) {
  // start -5 of 12 is 7; end past the size clamps to 12; step 2 gives 3 elements.
  std::string c =
      code_of("slice", {{"x", {4, 12, 5}}}, R"({"dim": 1, "start": -5, "end": 9223372036854775807, "step": 2})");
  EXPECT_TRUE(has(c, "const int src = (i / 15) * 60 + (7 + ((i / 5) % 3) * 2) * 5 + i % 5;")) << c;
  // A slice of the leading dim is one contiguous block.
  std::string lead = code_of("slice", {{"x", {7, 3, 2}}}, R"({"dim": 0, "start": 1, "end": 3})");
  EXPECT_TRUE(has(lead, "+ 6LL, 12ULL * sizeof(float)")) << lead;
}

TEST(CodegenLayoutEmit, SelectTakesNegativeIndex) {
  std::string c = code_of("select", {{"x", {3, 4, 5}}}, R"({"dim": 1, "index": -1})");
  EXPECT_TRUE(has(c, "const int src = (i / 5) * 20 + 15 + i % 5;")) << c;
  EXPECT_TRUE(
      has(code_of("select", {{"x", {3, 4, 5}}}, R"({"dim": 0, "index": -2})"), "+ 20LL, 20ULL * sizeof(float)"));
}

TEST(CodegenLayoutEmit, FlipMergesRunsOfFlippedDims) {
  std::string c = code_of("flip", {{"x", {2, 3, 4}}}, R"({"dims": [1, 2]})");
  EXPECT_TRUE(has(c, "const int src = (i / 12) * 12 + (11 - (i % 12));")) << c;
  EXPECT_TRUE(has(code_of("flip", {{"x", {2, 1, 4}}}, R"({"dims": [1]})"), "cudaMemcpyAsync"));
}

TEST(CodegenLayoutEmit, CatChainsInputsAndPromotes) {
  std::string c = code_of("cat", {{"a", {2, 3, 4}}, {"b", {2, 0, 4}}, {"c", {2, 5, 4}, "float16"}}, R"({"dim": 1})");
  EXPECT_TRUE(has(c, "#include <cuda_fp16.h>")) << c;
  EXPECT_TRUE(has(c, "if (p < 12) out[i] = in0[o * 12 + (p - 0)];")) << c;
  EXPECT_TRUE(has(c, "else out[i] = ((float)(((float)(in2[o * 20 + (p - 12)]))));")) << c;
  EXPECT_FALSE(has(c, "in1[")) << "an empty input is skipped";
  std::string s = code_of("stack", {{"a", {3, 4}}, {"b", {3, 4}}}, R"({"dim": 2})");
  EXPECT_TRUE(has(s, "stack of 2 tensors at dim 2: 12 rows of 2")) << s;
  EXPECT_TRUE(has(s, "else out[i] = in1[o * 1 + (p - 1)];")) << s;
}

TEST(CodegenLayoutEmit, DiagBothDirections) {
  std::string v = code_of("diag", {{"x", {5}}}, R"({"diagonal": -1})");
  EXPECT_TRUE(has(v, "out[i] = (c - r == -1) ? in0[c] : ((float)0);")) << v;
  std::string m = code_of("diag", {{"x", {4, 6}}}, R"({"diagonal": -3})");
  EXPECT_TRUE(has(m, "out[i] = in0[i * 7 + 18];")) << m;
  std::string e = code_of("diag", {{"x", {4, 6}}}, R"({"diagonal": 7})");
  EXPECT_TRUE(has(e, "return 0;")) << e;
  EXPECT_FALSE(has(e, "<<<")) << e;
}

TEST(CodegenLayoutEmit, TriangleMasksOverTheLastTwoDims) {
  std::string l = code_of("tril", {{"x", {2, 5, 7}}}, R"({"diagonal": -2})");
  EXPECT_TRUE(has(l, "const int64_t r = (int64_t)((i / 7) % 5);")) << l;
  EXPECT_TRUE(has(l, "(c - r <= -2LL) ? in0[i] : ((float)0)")) << l;
  std::string u = code_of("triu", {{"x", {6, 4}, "float16"}}, R"({"diagonal": 1})");
  EXPECT_TRUE(has(u, "(c - r >= 1LL) ? in0[i] : __float2half(0.0f)")) << u;
}

TEST(CodegenLayoutEmit, EmptyOutputsLaunchNothing) {
  Program p = emit(make_graph({{"x", {7, 3}}}, {{"slice", {"x"}, R"({"dim": 0, "start": 5, "end": 2})"}}));
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].launches, 0);
  EXPECT_FALSE(has(p.kernels[0].code, "<<<"));
}

// ---- pooling ----

TEST(CodegenLayoutPool, MaxPoolPadsWithMinusInfinityAndKeepsNan) {
  std::string c =
      code_of("max_pool", {{"x", {2, 3, 20}}},
              R"({"kernel_size": [8], "stride": [1], "padding": [4], "dilation": [3], "ceil_mode": false})");
  EXPECT_TRUE(has(c, "T m = (T)(-INFINITY);")) << c;
  EXPECT_TRUE(has(c, "const int s0 = o0 * 1 - 4;")) << c;
  EXPECT_TRUE(has(c, "const int h0 = s0 + k0 * 3;")) << c;
  EXPECT_TRUE(has(c, "if (h0 < 0 || h0 >= 20) continue;")) << c;
  EXPECT_TRUE(has(c, "if (v > m || isnan(v)) m = v;")) << c;
}

TEST(CodegenLayoutPool, LongRowsOfOneDimPoolsAreStagedInSharedMemoryTiles) {
  // 41_Max_Pooling_1D's window: 2048 outputs per block read a span of 2047 + 7 * 3 + 1 inputs.
  std::string c =
      code_of("max_pool", {{"x", {2, 3, 5000}}},
              R"({"kernel_size": [8], "stride": [1], "padding": [4], "dilation": [3], "ceil_mode": false})");
  EXPECT_TRUE(has(c, "_tiled(")) << c;
  EXPECT_TRUE(has(c, "__shared__ T xs[2069];")) << c;
  EXPECT_TRUE(has(c, "xs[j] = (h >= 0 && h < 5000) ? (float)(x[h]) : (T)(-INFINITY);")) << c;
  EXPECT_TRUE(has(c, "const T v = w[q * 3];")) << c;
  EXPECT_TRUE(has(c, "if (v > m || isnan(v)) m = v;")) << c;
  // Avg pads with zeros and keeps the per-output divisors; a stride of 2 doubles the span.
  std::string a = code_of("avg_pool", {{"x", {2, 3, 5000}}},
                          R"({"kernel_size": [5], "stride": [2], "padding": [2], "ceil_mode": true,
                              "count_include_pad": false, "divisor_override": null})");
  EXPECT_TRUE(has(a, "_tiled(")) << a;
  EXPECT_TRUE(has(a, "__shared__ T xs[4099];")) << a;
  EXPECT_TRUE(has(a, ": (T)0;")) << a;
  EXPECT_TRUE(has(a, "sum / (T)(e1 - b)")) << a;
  // Short rows keep one thread per output; the knob tiled = 0 as well.
  EXPECT_FALSE(
      has(code_of("max_pool", {{"x", {2, 3, 200}}},
                  R"({"kernel_size": [2], "stride": [2], "padding": [0], "dilation": [1], "ceil_mode": false})"),
          "_tiled("));
}

TEST(CodegenLayoutPool, LargePlanesOfTwoDimMaxPoolsAreStagedInSharedMemoryTiles) {
  // 42_Max_Pooling_2D's window on a smaller plane: 32 x 64 outputs per block read 35 x 67 inputs.
  std::string c = code_of("max_pool", {{"x", {2, 3, 130, 170}}},
                          R"({"kernel_size": [4, 4], "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1],
                              "ceil_mode": false})");
  EXPECT_TRUE(has(c, "_tiled(")) << c;
  EXPECT_TRUE(has(c, "__shared__ T xs[35][67];")) << c;
  EXPECT_TRUE(has(c, "xs[r][c] = (h >= 0 && h < 130 && w >= 0 && w < 170) ? (float)(x[h * 170 + w]) : (T)(-INFINITY);"))
      << c;
  EXPECT_TRUE(has(c, "const T v = xs[r * 1 + a * 1][c * 1 + b * 1];")) << c;
  EXPECT_TRUE(has(c, "<<<90u, 256")) << c;  // 6 planes x 5 x 3 tiles (129 x 169 outputs)
  // Narrow planes keep one thread per output, and so does avg pooling.
  EXPECT_FALSE(has(code_of("max_pool", {{"x", {2, 3, 40, 40}}},
                           R"({"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]})"),
                   "_tiled("));
  EXPECT_FALSE(has(
      code_of("avg_pool", {{"x", {2, 3, 130, 170}}}, R"({"kernel_size": [4, 4], "stride": [1, 1], "padding": [1, 1]})"),
      "_tiled("));
}

TEST(CodegenLayoutPool, TilesOnlyWhereTheirIntArithmeticFits) {
  // A row or plane past 2^30 elements keeps the per-output kernel (64-bit offsets).
  EXPECT_FALSE(
      has(code_of("max_pool", {{"x", {1, 1, 1200000000}}},
                  R"({"kernel_size": [2], "stride": [1], "padding": [0], "dilation": [1], "ceil_mode": false})"),
          "_tiled("));
  EXPECT_FALSE(has(code_of("max_pool", {{"x", {1, 1, 40000, 40000}}},
                           R"({"kernel_size": [2, 2], "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1]})"),
                   "_tiled("));
}

TEST(CodegenLayoutPool, AvgPoolDivisors) {
  const char* base =
      R"({"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": true, "count_include_pad": %s, "divisor_override": %s})";
  char buf[256];
  std::snprintf(buf, sizeof buf, base, "true", "null");
  std::string incl = code_of("avg_pool", {{"x", {2, 3, 17, 15}}}, buf);
  // The window end for count_include_pad stops at input + padding (torch's ceil_mode clipping).
  EXPECT_TRUE(has(incl, "int e0 = min(s0 + 3, 18);")) << incl;
  EXPECT_TRUE(has(incl, "int e1 = min(s1 + 3, 16);")) << incl;
  EXPECT_TRUE(has(incl, "out[w] = (float)(sum / (T)(p0 * p1));")) << incl;
  EXPECT_TRUE(has(incl, "if (b0 >= e0 || b1 >= e1) {")) << incl;
  std::snprintf(buf, sizeof buf, base, "false", "null");
  EXPECT_TRUE(has(code_of("avg_pool", {{"x", {2, 3, 17, 15}}}, buf), "sum / (T)((e0 - b0) * (e1 - b1))"));
  std::snprintf(buf, sizeof buf, base, "false", "5");
  EXPECT_TRUE(has(code_of("avg_pool", {{"x", {2, 3, 17, 15}}}, buf), "sum / (T)5"));
}

TEST(CodegenLayoutPool, HalfAndDoubleAccumulateTypes) {
  std::string h = code_of("avg_pool", {{"x", {2, 3, 8, 8}, "float16"}},
                          R"({"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0]})");
  EXPECT_TRUE(has(h, "typedef float T;")) << h;
  EXPECT_TRUE(has(h, "__float2half(sum / ")) << h;
  std::string d = code_of("max_pool", {{"x", {2, 3, 8, 8}, "float64"}},
                          R"({"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]})");
  EXPECT_TRUE(has(d, "typedef double T;")) << d;
}

TEST(CodegenLayoutPool, IntegerPoolingIsRefusedWithAReason) {
  auto g = make_graph(
      {{"x", {2, 3, 8, 8}, "int64"}},
      {{"max_pool", {"x"}, R"({"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]})"}});
  auto p = emit_program(g, schedule::plan_one_kernel_per_op(g), {});
  ASSERT_FALSE(p.is_ok());
  EXPECT_TRUE(has(p.status().message(), "floating-point tensors only")) << p.status().message();
}

TEST(CodegenLayoutPool, AdaptiveWindowsAndGroupSizes) {
  std::string small = code_of("adaptive_avg_pool", {{"x", {2, 3, 17, 15}}}, R"({"output_size": [5, 4]})");
  EXPECT_TRUE(has(small, "const int s0 = (int)(((int64_t)o0 * 17LL) / 5LL);")) << small;
  EXPECT_TRUE(has(small, "const int l0 = (int)((((int64_t)o0 + 1) * 17LL + 4LL) / 5LL) - s0;")) << small;
  EXPECT_TRUE(has(small, "acc / (T)l0 / (T)l1")) << small;
  EXPECT_TRUE(has(small, "KF_GRID_STRIDE")) << small;
  // Global pooling walks each contiguous plane flat: 16 bytes at a time (fp32, a multiple of 4), else
  // one element at a time; a warp per plane up to 2048 elements, a block beyond.
  std::string warp = code_of("adaptive_max_pool", {{"x", {2, 3, 40, 10}}}, R"({"output_size": [1, 1]})");
  EXPECT_TRUE(has(warp, "32 threads per output")) << warp;
  EXPECT_TRUE(has(warp, "for (int f = lane; f < 100; f += 32)")) << warp;
  EXPECT_TRUE(has(warp, "for (int f = lane; f < 400; f += 32)")) << warp;
  EXPECT_TRUE(has(warp, "if (v > acc || isnan(v)) acc = v;")) << warp;
  std::string block = code_of("adaptive_avg_pool", {{"x", {1, 2, 300, 300}}}, R"({"output_size": [1, 1]})");
  EXPECT_TRUE(has(block, "256 threads per output")) << block;
  EXPECT_TRUE(has(block, "const float4 v = x4[f];")) << block;
  EXPECT_TRUE(has(block, "for (int f = lane; f < 22500; f += 256)")) << block;
  EXPECT_TRUE(has(block, "__shared__ T partial_[8];")) << block;
  // Other large windows: by rows when rows are long, the flattened window otherwise.
  std::string rows = code_of("adaptive_avg_pool", {{"x", {1, 2, 300, 300}}}, R"({"output_size": [2, 1]})");
  EXPECT_TRUE(has(rows, "for (int a = lane; a < l1; a += 256)")) << rows;
  std::string flat = code_of("adaptive_max_pool", {{"x", {2, 3, 40, 10}}}, R"({"output_size": [2, 1]})");
  EXPECT_TRUE(has(flat, "for (int f = lane; f < cnt; f += 32)")) << flat;
  // output_size None (-1) keeps the input's size.
  std::string none = code_of("adaptive_avg_pool", {{"x", {2, 3, 17, 15}}}, R"({"output_size": [7, -1]})");
  EXPECT_TRUE(has(none, "[17, 15] -> [7, 15]")) << none;
}

// ---- einsum ----

TEST(CodegenLayoutEinsum, DirectContractionLoopsOverSummedLetters) {
  std::string c = code_of("einsum", {{"a", {4, 33, 40}}, {"b", {4, 40, 50}}}, R"({"equation": "bij,bjk->bik"})");
  EXPECT_TRUE(has(c, "summed letters 'j' [40], 1 thread per output")) << c;
  EXPECT_TRUE(has(c, "for (int c_j = 0; c_j < 40; ++c_j) {")) << c;
  EXPECT_TRUE(has(c, "acc += (float)(in0[b0 + c_j]) * (float)(in1[b1 + c_j * 50]);")) << c;
}

TEST(CodegenLayoutEinsum, RepeatedSubscriptsWalkTheDiagonal) {
  std::string c = code_of("einsum", {{"a", {3, 5, 5}}}, R"({"equation": "bii->bi"})");
  // b stride 25, i stride 5 + 1: both coordinates of the flat output index step along the diagonal.
  EXPECT_TRUE(has(c, "const int b0 = (w / 5) * 25 + (w % 5) * 6;")) << c;
  std::string t = code_of("einsum", {{"a", {50, 50}}}, R"({"equation": "ii->"})");
  EXPECT_TRUE(has(t, "c_i * 51")) << t;
}

TEST(CodegenLayoutEinsum, SizeOneDimsBroadcast) {
  std::string c = code_of("einsum", {{"a", {3, 1}}, {"b", {4, 5}}}, R"({"equation": "ij,jk->ik"})");
  EXPECT_TRUE(has(c, "for (int c_j = 0; c_j < 4; ++c_j) {")) << c;
  EXPECT_TRUE(has(c, "(float)(in0[b0 + 0])")) << c;
}

TEST(CodegenLayoutEinsum, LargeTwoOperandContractionsAreTiled) {
  std::string c = code_of("einsum", {{"a", {2, 16, 32, 64}}, {"b", {64, 96}}}, R"({"equation": "bijl,lk->bijk"})");
  EXPECT_TRUE(has(c, "as a batched GEMM: batch '' [], M 'bij' [2, 16, 32], N 'k' [96], K 'l' [64]")) << c;
  EXPECT_TRUE(has(c, "__shared__ T As[8][132];")) << c;
  // The merged M letters of A are one stride-64 coordinate.
  EXPECT_TRUE(has(c, "a_row[j] = a_base + (a_ok[j] ? m * 64LL : 0);")) << c;
}

TEST(CodegenLayoutEinsum, LongSumsGetAWarpOrABlock) {
  std::string w = code_of("einsum", {{"a", {1000, 30}}}, R"({"equation": "ij->j"})");
  EXPECT_TRUE(has(w, "32 threads per output")) << w;
  EXPECT_TRUE(has(w, "acc += __shfl_xor_sync(0xffffffffu, acc, off);")) << w;
  std::string b = code_of("einsum", {{"a", {300, 400}}}, R"({"equation": "ij->"})");
  EXPECT_TRUE(has(b, "256 threads per output")) << b;
}

TEST(CodegenLayoutEinsum, ImplicitOutputAndThreeOperands) {
  std::string c =
      code_of("einsum", {{"a", {3, 4}}, {"b", {5, 4, 6}}, {"c", {3, 6}}}, R"({"equation": "bn,anm,bm->ba"})");
  EXPECT_TRUE(has(c, "(float)(in0[b0 + c_n]) * (float)(in1[b1 + c_n * 6 + c_m]) * (float)(in2[b2 + c_m])")) << c;
  std::string i = code_of("einsum", {{"a", {6, 7}}, {"b", {7, 8}}}, R"({"equation": "ij,jk"})");
  EXPECT_TRUE(has(i, "output letters 'ik' [6, 8]")) << i;
}

// ---- nvcc builds ----

TEST(CodegenLayoutBuild, DataMovement) {
  std::vector<In> ins = {{"x", {3, 64, 48}}, {"h", {65, 70}, "float16"}, {"v", {5}}, {"l", {2, 5}, "int64"}};
  std::vector<Op> ops = {
      {"permute", {"x"}, R"({"dims": [0, 2, 1]})"},
      {"permute", {"h"}, R"({"dims": [1, 0]})"},
      {"expand", {"v"}, R"({"shape": [4, 3, 5]})"},
      {"slice", {"x"}, R"({"dim": 2, "start": -40, "end": 100, "step": 3})"},
      {"cat", {"x", "x"}, R"({"dim": 1})"},
      {"stack", {"l", "l"}, R"({"dim": 1})"},
      {"triu", {"h"}, R"({"diagonal": -1})"},
  };
  expect_builds(emit(make_graph(ins, ops)), "layout-build-a");
}

TEST(CodegenLayoutBuild, Pooling) {
  std::vector<In> ins = {
      {"a", {2, 3, 20}}, {"b", {2, 3, 17, 15}, "float16"}, {"c", {2, 2, 9, 10, 11}}, {"g", {2, 4, 200, 200}}};
  std::vector<Op> ops = {
      {"max_pool", {"a"}, R"({"kernel_size": [8], "stride": [1], "padding": [4], "dilation": [3], "ceil_mode": true})"},
      {"avg_pool",
       {"b"},
       R"({"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": true, "divisor_override": 5})"},
      {"avg_pool",
       {"c"},
       R"({"kernel_size": [3, 2, 3], "stride": [2, 2, 2], "padding": [1, 1, 1], "count_include_pad": false})"},
      {"adaptive_max_pool", {"c"}, R"({"output_size": [3, 4, 5]})"},
      {"adaptive_avg_pool", {"g"}, R"({"output_size": [1, 1]})"},
  };
  expect_builds(emit(make_graph(ins, ops)), "layout-build-b");
}

TEST(CodegenLayoutBuild, Einsum) {
  std::vector<In> ins = {
      {"a", {2, 16, 32, 64}}, {"b", {64, 96}}, {"s", {50, 50}}, {"h", {64, 80}, "float16"}, {"k", {80, 96}, "float16"}};
  std::vector<Op> ops = {
      {"einsum", {"a", "b"}, R"({"equation": "bijl,lk->bijk"})"},
      {"einsum", {"s", "s", "s"}, R"({"equation": "ij,jk,kl->il"})"},
      {"einsum", {"h", "k"}, R"({"equation": "ij,jk->ik"})"},
      {"einsum", {"s"}, R"({"equation": "ij->"})"},
  };
  expect_builds(emit(make_graph(ins, ops)), "layout-build-c");
}

}  // namespace
}  // namespace kforge::codegen
