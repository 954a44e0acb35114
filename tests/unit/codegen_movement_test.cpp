// Codegen of the second batch of ops: integer-style division and bit operations in the elementwise chain,
// mode pads, resampling, sort / topk / running extremes, scatter, one_hot, embedding_bag and fold: the
// emitted index arithmetic, bounds checks and kernel choice, and nvcc builds of every op in several dtypes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen_test_graphs.h"
#include "test_util.h"

namespace kforge::codegen {
namespace {

using testing::code_of;
using testing::emit;
using testing::has;
using testing::In;
using testing::make_graph;
using testing::Op;

TEST(CodegenMovement, RoundedDivisionAndBitOperations) {
  std::string f = code_of("floor_divide", {{"a", {4, 8}, "int64"}, {"b", {8}, "int64"}});
  EXPECT_TRUE(has(f, "typedef int64_t T;")) << f;
  EXPECT_TRUE(has(f, "kf_floor_divide(a, b)")) << f;
  std::string r = code_of("remainder", {{"a", {4, 8}}}, R"({"scalar": -1.5})");
  EXPECT_TRUE(has(r, "typedef float T;")) << r;
  EXPECT_TRUE(has(r, "kf_remainder(a, b)")) << r;
  std::string x = code_of("bitwise_xor", {{"a", {8}, "bool"}, {"b", {8}, "bool"}});
  EXPECT_TRUE(has(x, "(a ^ b)")) << x;
  // ~ of a bool is its logical not (C's ~ of 1 is -2, true again)
  std::string nb = code_of("bitwise_not", {{"x", {8}, "bool"}});
  EXPECT_TRUE(has(nb, "(x == T(0))")) << nb;
  std::string ni = code_of("bitwise_not", {{"x", {8}, "int32"}});
  EXPECT_TRUE(has(ni, "(~x)")) << ni;
}

TEST(CodegenMovement, ModePadsMapCoordinatesBack) {
  std::string r = code_of("reflect_pad", {{"x", {2, 3, 5}}}, R"({"pad": [2, 1]})");
  EXPECT_TRUE(has(r, "if (c1 < 0) c1 = -c1;")) << r;
  EXPECT_TRUE(has(r, "if (c1 >= 5LL) c1 = 2 * (5LL - 1) - c1;")) << r;
  EXPECT_TRUE(has(r, "over merged dims [6, 5] -> [6, 8]")) << r;
  std::string p = code_of("replicate_pad", {{"x", {2, 3, 5}}}, R"({"pad": [0, 0, 1, 1]})");
  EXPECT_TRUE(has(p, "c1 = c1 < 0 ? 0 : (c1 >= 3LL ? 3LL - 1 : c1);")) << p;
  std::string c = code_of("circular_pad", {{"x", {4, 6}}}, R"({"pad": [6, 2]})");
  EXPECT_TRUE(has(c, "c1 = (c1 % 6LL + 6LL) % 6LL;")) << c;
  std::string none = code_of("circular_pad", {{"x", {4, 6}}}, R"({"pad": [0, 0]})");
  EXPECT_TRUE(has(none, "cudaMemcpyAsync")) << none;
}

TEST(CodegenMovement, ResamplingRatios) {
  // nearest 7 -> 10 with scale 1.5: source floor(o * (float)(1 / 1.5)), clamped to 6.
  std::string n = code_of("upsample_nearest", {{"x", {1, 2, 7}}}, R"({"size": [10], "scale": 1.5})");
  EXPECT_TRUE(has(n, "floorf((float)o0 * (0.666666687f))")) << n;
  EXPECT_TRUE(has(n, "if (s0 > 6LL) s0 = 6LL;")) << n;
  std::string s = code_of("upsample_nearest", {{"x", {1, 2, 7}}}, R"({"size": [10]})");
  EXPECT_TRUE(has(s, "(0.699999988f)")) << s;  // (float)7 / 10
  // bilinear 6 -> 13, half-pixel centres; align_corners uses (n - 1) / (m - 1)
  std::string b = code_of("upsample_linear", {{"x", {2, 3, 6, 6}}}, R"({"size": [13, 9]})");
  EXPECT_TRUE(has(b, "float r0 = (0.461538464f) * ((float)o0 + (float)0.5) - (float)0.5;")) << b;
  EXPECT_TRUE(has(b, "if (r0 < (float)0) r0 = 0;")) << b;
  EXPECT_TRUE(has(b, "const int64_t p1 = s1 < 5LL ? 1 : 0;")) << b;
  std::string a =
      code_of("upsample_linear", {{"x", {2, 3, 6, 6}, "float64"}}, R"({"size": [11, 9], "align_corners": true})");
  EXPECT_TRUE(has(a, "const double r0 = (0.5) * (double)o0;")) << a;
}

TEST(CodegenMovement, SortPicksBitonicOrRankCounting) {
  std::string s = code_of("sort", {{"x", {4, 100}}}, R"({"dim": 1, "descending": true})");
  EXPECT_TRUE(has(s, "bitonic sort of 128 slots")) << s;
  EXPECT_TRUE(has(s, "return kf_above(ka, kb) || (kf_same(ka, kb) && ia < ib);")) << s;  // descending, stable
  EXPECT_TRUE(has(s, "(isnan(a) && !isnan(b)) || a > b")) << s;                          // NaN above numbers
  std::string i = code_of("argsort", {{"x", {4, 5000}, "int64"}}, R"({"dim": 1})");
  EXPECT_TRUE(has(i, "each element's rank counted")) << i;
  EXPECT_TRUE(has(i, "return kf_above(kb, ka) || (kf_same(ka, kb) && ia < ib);")) << i;  // ascending
  EXPECT_TRUE(has(i, "out[obase + (rank) * inner] = (int64_t)(j);")) << i;
  std::string t = code_of("topk", {{"x", {6, 3, 8}}}, R"({"k": 2, "dim": 0, "largest": false})");
  EXPECT_TRUE(has(t, "24 rows of 6: bitonic sort of 8 slots per block, the first 2 kept")) << t;
  // rows along the last dim: one warp per row, a shuffle scan of (value, position) under torch's rule
  std::string c = code_of("cummax_indices", {{"x", {4, 9}}}, R"({"dim": 1})");
  EXPECT_TRUE(has(c, "one warp per row")) << c;
  EXPECT_TRUE(has(c, "if (lane >= d && !(at >= 0 && (best_at < 0 || isnan(v) || (!isnan(best) && v >= best)))) {"))
      << c;
  EXPECT_TRUE(has(c, "if (j < 9LL) out[base + j] = at;")) << c;
  std::string cv = code_of("cummax", {{"x", {4, 9}}}, R"({"dim": -1})");
  EXPECT_TRUE(has(cv, "if (j < 9LL) out[base + j] = in0[base + at];")) << cv;
  // rows with an inner stride: one thread per row walks it
  std::string s0 = code_of("cummax_indices", {{"x", {4, 9}}}, R"({"dim": 0})");
  EXPECT_TRUE(has(s0, "if (j == 0 || isnan(v) || (!isnan(best) && v >= best)) {")) << s0;
  EXPECT_TRUE(has(s0, "out[base + j * 9LL] = at;")) << s0;
  std::string m = code_of("cummin", {{"x", {4, 9}, "int32"}}, R"({"dim": 0})");
  EXPECT_TRUE(has(m, "if (j == 0 || v <= best) {")) << m;
}

TEST(CodegenMovement, ScatterCopiesThenWritesOrAdds) {
  std::string s = code_of("scatter", {{"x", {4, 10}}, {"i", {4, 6}, "int64"}, {"s", {4, 10}}}, R"({"dim": 1})");
  EXPECT_TRUE(has(s, "cudaMemcpyAsync")) << s;
  EXPECT_TRUE(has(s, "if (k < 0 || k >= 10LL) __trap();")) << s;
  EXPECT_TRUE(has(s, "dst += k * 1LL;")) << s;
  EXPECT_TRUE(has(s, "from += c0 * 10LL;")) << s;  // src's own strides (it is larger than the index)
  EXPECT_TRUE(has(s, "out[dst] = src[from];")) << s;
  std::string a =
      code_of("scatter_add", {{"x", {6, 4}, "int64"}, {"i", {6, 4}, "int64"}, {"s", {6, 4}, "int64"}}, R"({"dim": 0})");
  EXPECT_TRUE(has(a, "atomicAdd((unsigned long long*)(out + dst), (unsigned long long)(src[from]));")) << a;
  std::string v =
      code_of("scatter_value", {{"x", {7, 3}, "float16"}, {"i", {4, 3}, "int64"}}, R"({"dim": 0, "value": 2.5})");
  EXPECT_TRUE(has(v, "out[dst] = __float2half((2.5f));")) << v;
}

TEST(CodegenMovement, OneHotBagsAndFold) {
  std::string o = code_of("one_hot", {{"i", {3, 4}, "int64"}}, R"({"num_classes": 6})");
  EXPECT_TRUE(has(o, "if (k < 0 || k >= 6LL) __trap();")) << o;
  EXPECT_TRUE(has(o, "out[i] = k == (int64_t)(i % 6) ? 1 : 0;")) << o;
  std::string b =
      code_of("embedding_bag", {{"w", {30, 8}}, {"i", {20}, "int64"}, {"o", {5}, "int64"}}, R"({"mode": "mean"})");
  EXPECT_TRUE(has(b, "const int64_t end = bag + 1 < 5LL ? (int64_t)in2[bag + 1] : 20LL;")) << b;
  EXPECT_TRUE(has(b, "if (k < 0 || k >= 30LL) __trap();")) << b;
  EXPECT_TRUE(has(b, "if (end > start) a = a / (float)(end - start);")) << b;
  std::string m = code_of("embedding_bag", {{"w", {30, 8}}, {"i", {6, 5}, "int32"}}, R"({"mode": "max"})");
  EXPECT_TRUE(has(m, "const int64_t start = bag * 5LL, end = start + 5LL;")) << m;
  EXPECT_TRUE(has(m, "if (p == start || v > a) a = v;")) << m;
  // Eight rows loaded at once, combined in the bag's order (max keeps the first of equals).
  EXPECT_TRUE(has(m, "for (; p + 8 <= end; p += 8) {")) << m;
  EXPECT_TRUE(has(m, "for (int u = 0; u < 8; ++u) { if (p + u == start || v[u] > a) a = v[u]; }")) << m;
  EXPECT_TRUE(has(b, "for (int u = 0; u < 8; ++u) { a += v[u]; }")) << b;
  std::string f = code_of(
      "fold", {{"x", {2, 27, 64}}},
      R"({"output_size": [8, 8], "kernel_size": [3, 3], "dilation": [1, 1], "padding": [1, 1], "stride": [1, 1]})");
  EXPECT_TRUE(has(f, "const int64_t y = h + 1LL - (int64_t)ki * 1LL;")) << f;
  EXPECT_TRUE(has(f, "if (y < 0 || y % 1LL != 0 || y / 1LL >= 8LL) continue;")) << f;
}

TEST(CodegenMovement, EmbeddingBagWithoutOffsetsAsTheImporterWritesIt) {
  // The importer writes an absent optional input as null: the kernel takes no parameter for it.
  ir::Graph g = kforge::testing::graph_from_text(R"({"format": "kforge.graph/1", "name": "t_bag",
    "inputs": [{"id": "w", "name": "w", "shape": [40, 7], "dtype": "float32"},
               {"id": "i", "name": "i", "shape": [6, 5], "dtype": "int64"}],
    "params": [],
    "nodes": [{"id": "y", "op": "embedding_bag", "inputs": ["w", "i", null],
               "attrs": {"mode": "sum", "include_last_offset": false}, "shape": [6, 7], "dtype": "float32"}],
    "outputs": ["y"]})");
  Program p = emit(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  const std::string& c = p.kernels[0].code;
  EXPECT_TRUE(has(c, "const int64_t* __restrict__ in1, float* __restrict__ out")) << c;
  EXPECT_FALSE(has(c, "in2")) << c;
  kforge::testing::expect_builds_with_nvcc(p, "movement-bag-null-offsets");
}

TEST(CodegenMovementBuild, DivisionBitsPadsAndResampling) {
  std::vector<In> ins = {{"f", {4, 8}},
                         {"g", {8}},
                         {"i", {4, 8}, "int64"},
                         {"j", {8}, "int32"},
                         {"b", {4, 8}, "bool"},
                         {"h", {2, 3, 6, 7}, "float16"},
                         {"d", {1, 2, 3, 4, 5}, "float64"},
                         {"e", {2, 3, 9}, "bfloat16"}};
  std::vector<Op> ops = {
      {"floor_divide", {"f", "g"}},
      {"trunc_divide", {"i"}, R"({"scalar": 3})"},
      {"remainder", {"i", "j"}},
      {"fmod", {"f"}, R"({"scalar": -2.5, "reverse": true})"},
      {"floor_divide", {"h"}, R"({"scalar": 0.7})"},
      {"remainder", {"d", "d"}},
      {"bitwise_and", {"i", "j"}},
      {"bitwise_or", {"i"}, R"({"scalar": 6})"},
      {"bitwise_xor", {"b", "b"}},
      {"bitwise_not", {"b"}},
      {"bitwise_not", {"j"}},
      {"reflect_pad", {"h"}, R"({"pad": [2, 1, 3, 0]})"},
      {"replicate_pad", {"d"}, R"({"pad": [1, 2, 0, 3, 2, 1]})"},
      {"circular_pad", {"i"}, R"({"pad": [8, 3]})"},
      {"upsample_nearest", {"h"}, R"({"size": [12, 14], "scale": 2.0})"},
      {"upsample_nearest", {"i"}, R"({"size": [5]})"},
      {"upsample_linear", {"h"}, R"({"size": [13, 5]})"},
      {"upsample_linear", {"d"}, R"({"size": [6, 8, 10], "align_corners": true})"},
      {"upsample_linear", {"e"}, R"({"size": [4], "scale": 0.5})"},
  };
  kforge::testing::expect_builds_with_nvcc(emit(make_graph(ins, ops)), "movement-elementwise-build");
}

TEST(CodegenMovementBuild, OrderScatterBagsAndFold) {
  std::vector<In> ins = {{"x", {4, 100}},
                         {"l", {3, 5000}, "float16"},
                         {"n", {6, 3, 8}, "int64"},
                         {"q", {5, 4}, "bool"},
                         {"w", {3, 40}, "float64"},
                         {"i", {4, 6}, "int64"},
                         {"k", {5, 2}, "int64"},
                         {"t", {30, 8}},
                         {"u", {20}, "int64"},
                         {"o", {5}, "int64"},
                         {"v", {6, 5}, "int32"},
                         {"c", {2, 27, 64}},
                         {"z", {24, 15}, "bfloat16"},
                         {"m", {2, 9}, "int64"}};
  std::vector<Op> ops = {
      {"sort", {"x"}, R"({"dim": 1, "descending": true})"},
      {"argsort", {"l"}, R"({"dim": 1})"},
      {"sort", {"l"}, R"({"dim": 0})"},
      {"topk", {"n"}, R"({"k": 2, "dim": 0, "largest": false})"},
      {"topk_indices", {"l"}, R"({"k": 7, "dim": 1})"},
      {"argsort", {"q"}, R"({"dim": 0, "descending": true})"},
      {"topk", {"w"}, R"({"k": 40, "dim": -1})"},
      {"cummax", {"x"}, R"({"dim": 1})"},
      {"cummin_indices", {"n"}, R"({"dim": 0})"},
      {"cummax_indices", {"w"}, R"({"dim": 1})"},
      {"cummin", {"l"}, R"({"dim": 1})"},
      {"scatter", {"x", "i", "x"}, R"({"dim": 1})"},
      {"scatter_value", {"q", "k"}, R"({"dim": 0, "value": 1})"},
      {"scatter_add", {"x", "i", "x"}, R"({"dim": 1})"},
      {"scatter_add", {"w", "m", "w"}, R"({"dim": 0})"},
      {"scatter_add", {"n", "n", "n"}, R"({"dim": 2})"},
      {"scatter_add", {"l", "m", "l"}, R"({"dim": 1})"},
      {"one_hot", {"i"}, R"({"num_classes": 100})"},
      {"embedding_bag", {"t", "u", "o"}, R"({"mode": "sum"})"},
      {"embedding_bag", {"t", "u", "o"}, R"({"mode": "max", "include_last_offset": true})"},
      {"embedding_bag", {"w", "v"}, R"({"mode": "mean"})"},
      {"fold",
       {"c"},
       R"({"output_size": [8, 8], "kernel_size": [3, 3], "dilation": [1, 1], "padding": [1, 1], "stride": [1, 1]})"},
      {"fold",
       {"z"},
       R"({"output_size": [9, 8], "kernel_size": [2, 3], "dilation": [2, 1], "padding": [1, 0], "stride": [2, 2]})"},
  };
  kforge::testing::expect_builds_with_nvcc(emit(make_graph(ins, ops)), "movement-order-build");
}

}  // namespace
}  // namespace kforge::codegen
