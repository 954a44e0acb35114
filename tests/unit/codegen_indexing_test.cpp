// Indexing, unfold, constant_pad and logical codegen: the baked index arithmetic, the bounds check on
// index tensors, pad values (non-finite ones too) and nvcc builds.
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

TEST(CodegenIndexing, EmbeddingCopiesRowsAndTrapsOnABadIndex) {
  std::string c = code_of("embedding", {{"w", {10, 16}}, {"i", {4, 7}, "int64"}});
  EXPECT_TRUE(has(c, "const int64_t k = (int64_t)in1[i / 16];")) << c;
  EXPECT_TRUE(has(c, "if (k < 0 || k >= 10LL) __trap();")) << c;
  EXPECT_TRUE(has(c, "out[i] = in0[(int)k * 16 + i % 16];")) << c;
  EXPECT_TRUE(has(c, "const int64_t* __restrict__ in1")) << c;
  std::string i32 = code_of("embedding", {{"w", {10, 16}}, {"i", {5}, "int32"}});
  EXPECT_TRUE(has(i32, "const int32_t* __restrict__ in1")) << i32;
}

TEST(CodegenIndexing, IndexSelectAlongLeadingAndInnerDims) {
  std::string d0 = code_of("index_select", {{"x", {3, 4, 5}}, {"i", {6}, "int64"}}, R"({"dim": 0})");
  EXPECT_TRUE(has(d0, "const int64_t k = (int64_t)in1[(i / 20) % 6];")) << d0;
  EXPECT_TRUE(has(d0, "if (k < 0 || k >= 3LL) __trap();")) << d0;
  EXPECT_TRUE(has(d0, "out[i] = in0[(int)k * 20 + i % 20];")) << d0;
  std::string d2 = code_of("index_select", {{"x", {3, 4, 5}}, {"i", {2}, "int64"}}, R"({"dim": 2})");
  EXPECT_TRUE(has(d2, "const int64_t k = (int64_t)in1[i % 2];")) << d2;
  EXPECT_TRUE(has(d2, "out[i] = in0[(i / 2) * 5 + (int)k];")) << d2;
}

TEST(CodegenIndexing, GatherMergesDimsWhereTheIndexMatchesTheInput) {
  std::string same = code_of("gather", {{"x", {3, 4, 5}}, {"i", {3, 6, 5}, "int64"}}, R"({"dim": 1})");
  EXPECT_TRUE(has(same, "const int64_t k = (int64_t)in1[i];")) << same;
  EXPECT_TRUE(has(same, "if (k < 0 || k >= 4LL) __trap();")) << same;
  EXPECT_TRUE(has(same, "out[i] = in0[(i / 30) * 20 + (int)k * 5 + i % 5];")) << same;
  // A smaller index: x's strides at each output coordinate.
  std::string small = code_of("gather", {{"x", {3, 4, 5}}, {"i", {2, 2, 2}, "int64"}}, R"({"dim": 2})");
  EXPECT_TRUE(has(small, "const int src = (i / 4) * 20 + ((i / 2) % 2) * 5 + (int)k;")) << small;
}

TEST(CodegenIndexing, UnfoldWindows) {
  // (2, 3, 16).unfold(2, 4, 2) -> (2, 3, 7, 4): out[o, w, s] = x[o, w * 2 + s].
  std::string c = code_of("unfold", {{"x", {2, 3, 16}}}, R"({"dim": 2, "size": 4, "step": 2})");
  EXPECT_TRUE(has(c, "const int s = i % 4, q = i / 4;")) << c;
  EXPECT_TRUE(has(c, "const int w = q % 7;")) << c;
  EXPECT_TRUE(has(c, "out[i] = in0[q / 7 * 16 + (w * 2 + s)];")) << c;
  std::string inner = code_of("unfold", {{"x", {6, 5}}}, R"({"dim": 0, "size": 3, "step": 1})");
  EXPECT_TRUE(has(inner, "out[i] = in0[(w * 1 + s) * 5 + q % 5];")) << inner;
}

TEST(CodegenIndexing, ConstantPadPadsAndCrops) {
  std::string c = code_of("constant_pad", {{"x", {2, 3, 4}}}, R"({"pad": [1, 2], "value": 0.5})");
  EXPECT_TRUE(has(c, "const int64_t c1 = (int64_t)(i % 7) - 1LL;")) << c;
  EXPECT_TRUE(has(c, "out[i] = (c1 >= 0 && c1 < 4LL) ? in0[src] : (0.5f);")) << c;
  // Dims 0 and 1 merge (neither is padded); a crop reads past the output's own coordinate.
  std::string crop = code_of("constant_pad", {{"x", {2, 3, 4}}}, R"({"pad": [0, 0, -1, 3]})");
  EXPECT_TRUE(has(crop, "over merged dims [2, 3, 4] -> [2, 5, 4]")) << crop;
  EXPECT_TRUE(has(crop, "const int64_t c1 = (int64_t)((i / 4) % 5) - -1LL;")) << crop;
  std::string none = code_of("constant_pad", {{"x", {2, 3}}}, R"({"pad": [0, 0]})");
  EXPECT_TRUE(has(none, "cudaMemcpyAsync")) << none;
  std::string inf = code_of("constant_pad", {{"x", {2, 3}}}, R"({"pad": [1, 1], "value": "-inf"})");
  EXPECT_TRUE(has(inf, ": (-INFINITY);")) << inf;
  std::string dbl = code_of("constant_pad", {{"x", {2, 3}, "float64"}}, R"({"pad": [1, 1], "value": "nan"})");
  EXPECT_TRUE(has(dbl, ": ((double)NAN);")) << dbl;
  std::string half = code_of("constant_pad", {{"x", {2, 3}, "float16"}}, R"({"pad": [1, 1], "value": "inf"})");
  EXPECT_TRUE(has(half, ": __float2half((INFINITY));")) << half;
}

TEST(CodegenIndexing, LogicalOpsTestAgainstZero) {
  std::string n = code_of("logical_not", {{"x", {8}, "bool"}});
  EXPECT_TRUE(has(n, "typedef int T; const T x = T(in0[i]); r1 = (bool)((x == T(0)));")) << n;
  std::string a = code_of("logical_and", {{"a", {4, 8}, "bool"}, {"b", {8}, "float32"}});
  EXPECT_TRUE(has(a, "typedef float T;")) << a;
  EXPECT_TRUE(has(a, "(a != T(0) && b != T(0))")) << a;
  std::string o = code_of("logical_or", {{"a", {8}, "bool"}, {"b", {8}, "bool"}});
  EXPECT_TRUE(has(o, "(a != T(0) || b != T(0))")) << o;
}

TEST(CodegenIndexing, NonFiniteConstantsAreCudaLiterals) {
  std::string f = code_of("full", {}, R"({"shape": [4], "value": "-inf", "dtype": "float32"})");
  EXPECT_TRUE(has(f, "T((-INFINITY))")) << f;
  std::string d = code_of("full", {}, R"({"shape": [4], "value": "nan", "dtype": "float64"})");
  EXPECT_TRUE(has(d, "T(((double)NAN))")) << d;
  std::string b = code_of("full", {}, R"({"shape": [4], "value": "inf", "dtype": "bool"})");
  EXPECT_TRUE(has(b, "T(1LL)")) << b;
  std::string c = code_of("clamp", {{"x", {4}, "float64"}}, R"({"min": "-inf", "max": 2.0})");
  EXPECT_TRUE(has(c, "(-(double)INFINITY)")) << c;
  // A finite double beyond float's range is infinity in float arithmetic.
  EXPECT_EQ(float_literal(1e300), "(INFINITY)");
  EXPECT_EQ(float_literal(-1e300), "(-INFINITY)");
  EXPECT_EQ(double_literal(1e300), "(1.0000000000000001e+300)");
}

TEST(CodegenIndexingBuild, IndexingUnfoldAndPad) {
  std::vector<In> ins = {{"w", {10, 16}},           {"e", {4, 7}, "int64"}, {"x", {3, 4, 5}},
                         {"s", {6}, "int64"},       {"t", {2}, "int32"},    {"g", {3, 6, 5}, "int64"},
                         {"h", {2, 2, 2}, "int64"}, {"u", {2, 3, 16}},      {"p", {2, 3, 4}, "float16"},
                         {"q", {2, 3}, "float64"}};
  std::vector<Op> ops = {
      {"embedding", {"w", "e"}},
      {"index_select", {"x", "s"}, R"({"dim": 0})"},
      {"index_select", {"x", "t"}, R"({"dim": 2})"},
      {"gather", {"x", "g"}, R"({"dim": 1})"},
      {"gather", {"x", "h"}, R"({"dim": 2})"},
      {"unfold", {"u"}, R"({"dim": 2, "size": 4, "step": 2})"},
      {"constant_pad", {"x"}, R"({"pad": [1, 2, -1, 0], "value": "-inf"})"},
      {"constant_pad", {"p"}, R"({"pad": [2, -1], "value": 1.5})"},
      {"constant_pad", {"q"}, R"({"pad": [0, 1, 1, 0], "value": "nan"})"},
  };
  kforge::testing::expect_builds_with_nvcc(emit(make_graph(ins, ops)), "indexing-build");
}

TEST(CodegenIndexingBuild, LogicalChainsAndNonFiniteConstants) {
  // (x > 0) & ~(y < 0.5) feeding where; full and clamp with inf and nan in float and double.
  std::vector<In> ins = {{"x", {4, 8}}, {"y", {8}}, {"z", {4, 8}, "float64"}};
  std::vector<Op> ops = {
      {"gt", {"x"}, R"({"scalar": 0.0})"},
      {"lt", {"y"}, R"({"scalar": 0.5})"},
      {"logical_not", {"v1"}},
      {"logical_and", {"v0", "v2"}},
      {"full", {}, R"({"shape": [4, 8], "value": "-inf", "dtype": "float32"})"},
      {"where", {"v3", "x", "v4"}},
      {"softmax", {"v5"}, R"({"dim": 1})"},
      {"logical_or", {"v0", "z"}},
      {"full", {}, R"({"shape": [3], "value": "nan", "dtype": "float64"})"},
      {"full", {}, R"({"shape": [3], "value": "inf", "dtype": "float16"})"},
      {"clamp", {"z"}, R"({"min": "-inf", "max": "inf"})"},
      {"maximum", {"z"}, R"({"scalar": "nan"})"},
  };
  kforge::testing::expect_builds_with_nvcc(emit(make_graph(ins, ops)), "logical-build");
}

}  // namespace
}  // namespace kforge::codegen
